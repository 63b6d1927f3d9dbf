// Names for addresses: the executable's symbol table, so that an error says `lock_A[3]`
// or `done` where it would otherwise say 0x40000010. Read once, at the first question
// (an error path, or the checker's first report), from the executable's .symtab; a
// stripped executable has none, and its addresses are printed as they are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mw::symbols {

// The variable at `addr`, as the source would write it: `done`; an element of an array
// of objects `element_size` bytes long as `lock_A[3]` (element_size 0: an offset,
// `A+12`); the address in hex when no variable holds it.
std::string variable(uintptr_t addr, size_t element_size = 0);
inline std::string variable(const void *p, size_t element_size = 0) {
  return variable(reinterpret_cast<uintptr_t>(p), element_size);
}

// The function holding code address `pc`, as `main+0x4c`, or the address in hex.
std::string code(uintptr_t pc);

// Whether a variable of the executable holds `addr`.
bool known(uintptr_t addr);

}  // namespace mw::symbols
