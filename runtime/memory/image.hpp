// The program as linked: sections of the executable and of the shared objects loaded
// with it, read from their ELF files. The window's start-up check (where did the
// linker put MW_SHARED data?) and the unmarked-calls check read their facts here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <initializer_list>
#include <string>
#include <vector>

namespace mw::image {

struct Section {
  uintptr_t addr = 0;    // as linked (for a shared object, relative to its load address)
  size_t size = 0;
  size_t align = 1;      // sh_addralign
  std::string contents;  // read only when asked for
};

// Section `name` of the ELF file at `path`, if it has one.
std::optional<Section> read_section(const char *path, const char *name, bool with_contents);

// The address ranges [addr, addr+size) of the data objects the symbol table of the ELF
// file at `path` places in the sections named `names` (as linked), sorted by address;
// empty if the file has no symbol table (stripped).
struct Object {
  uintptr_t addr;
  size_t size;
};
std::vector<Object> objects_in(const char *path, std::initializer_list<const char *> names);

// The contents of section `name` in the executable and in every shared object loaded
// with it, concatenated.
std::string gather(const char *name);

}  // namespace mw::image
