// Names for addresses: the executable's symbol table, so that an error says `locks[1]`
// or `done` where it would otherwise say 0x40000010. Read once, at the first question
// (an error path, the checker's first report, mwrun's table of waits), from the
// executable's .symtab, and the shape of each shared global from the descriptors the
// pass records in section MW_OBJECTS_SECTION (midway.h: struct mw_object), which turn
// `cells+12` into `cells[3]`. A stripped executable has no .symtab, and its addresses
// are printed as they are. mwrun compiles this module too, for another process's
// executable (set_executable).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

struct mw_object;

namespace mw::symbols {

// The executable to read, before the first question: /proc/self/exe unless set.
void set_executable(const std::string &path);

// The variable at `addr`, as the source would write it: `done`; an element of an array
// as `locks[1]` or `A[2][5]`; a byte inside an element or a struct after a `+`
// (`parts[3]+8`); the address in hex when no variable holds it. `element_size` is the
// size of the object at `addr` (a lock's, a barrier's): a variable the pass did not
// describe (compiled without it) is taken as an array of such objects.
std::string variable(uintptr_t addr, size_t element_size = 0);
inline std::string variable(const void *p, size_t element_size = 0) {
  return variable(reinterpret_cast<uintptr_t>(p), element_size);
}

// A range [addr, addr + len) of data, by its first byte as variable() names it, except
// that a range from a variable's start longer than one element is named by the
// variable alone (`sums` for a binding of 32 bytes of it, `cells[0]` for 4 bytes).
std::string range(uintptr_t addr, size_t len);

// A range for an error: `NAME [0x..., +len)` (NAME as range() gives it), or the bracket
// alone where no variable holds `addr`.
std::string described_range(uintptr_t addr, size_t len);

// Byte `offset` of the variable `name` that descriptor `o` describes, as above.
std::string element(const std::string &name, const mw_object &o, uint64_t offset);

// The function holding code address `pc`, as `main+0x4c`, or the address in hex.
std::string code(uintptr_t pc);
// Where the call returning to `pc` (a return address) was made: `main+0x4c at
// prog.c:12`, or `helper at prog.c:5, inlined in main+0x4c at prog.c:12`, from the
// executable's line tables (addr2line, binutils; mwcc builds have them), or code(pc)
// when they have none. Runs a process: for error paths only.
std::string call_site(uintptr_t pc);
// Where the instruction at `pc` of the executable is, as call_site says it, or "" when
// the line tables do not have it or `pc` is not the executable's code.
std::string instruction_site(uintptr_t pc);

// call_site(pc) for a call the executable makes; "" for one from elsewhere (a shared
// library, the runtime itself): how errors say where the failed call was made.
std::string program_call_site(uintptr_t pc);

// Reads the executable's symbols now, for code_if_loaded.
void load();

// code(pc) into `out`, without allocating (a fault handler's): false if the symbols are
// not loaded yet, or no function of the executable holds pc.
bool code_if_loaded(uintptr_t pc, char *out, size_t size);

// The start of the variable that holds `addr`, or 0.
uintptr_t base_of(uintptr_t addr);

// Whether a variable, or a function, of the executable holds `addr`.
bool known(uintptr_t addr);
bool known_code(uintptr_t pc);

// An address named as the table of waits names it (core/waits.hpp, Symbolizer): a
// variable, or a call site with its source line (wait_name) or without (wait_name_quick,
// which runs no process: for a message handler); "" for what the executable does not hold.
std::string wait_name(uint64_t addr, bool code);
std::string wait_name_quick(uint64_t addr, bool code);

}  // namespace mw::symbols
