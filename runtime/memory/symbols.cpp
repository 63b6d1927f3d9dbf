#include "memory/symbols.hpp"

#include <elf.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "memory/image.hpp"

namespace mw::symbols {
namespace {

struct Symbol {
  uintptr_t addr;
  size_t size;
  std::string name;
};

struct Table {
  std::vector<Symbol> objects, functions;  // sorted by address
};

const Table &table() {
  static Table *t = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    t = new Table;  // never destroyed: errors may come from the service thread at exit
    auto syms = image::read_section("/proc/self/exe", ".symtab", true);
    auto strs = image::read_section("/proc/self/exe", ".strtab", true);
    if (!syms || !strs) return;
    const size_t n = syms->contents.size() / sizeof(Elf64_Sym);
    for (size_t i = 0; i < n; i++) {
      Elf64_Sym s;
      std::memcpy(&s, syms->contents.data() + i * sizeof s, sizeof s);
      if (s.st_name == 0 || s.st_name >= strs->contents.size() || s.st_value == 0) continue;
      const int type = ELF64_ST_TYPE(s.st_info);
      if (type != STT_OBJECT && type != STT_FUNC) continue;
      Symbol sym{s.st_value, s.st_size, strs->contents.c_str() + s.st_name};
      (type == STT_OBJECT ? t->objects : t->functions).push_back(std::move(sym));
    }
    for (auto *v : {&t->objects, &t->functions})
      std::sort(v->begin(), v->end(), [](const Symbol &a, const Symbol &b) { return a.addr < b.addr; });
  });
  return *t;
}

// The symbol whose [addr, addr+size) holds a (a size-0 symbol holds only its address).
const Symbol *find(const std::vector<Symbol> &v, uintptr_t a) {
  auto it = std::upper_bound(v.begin(), v.end(), a, [](uintptr_t x, const Symbol &s) { return x < s.addr; });
  while (it != v.begin()) {
    --it;
    if (a < it->addr + std::max<size_t>(it->size, 1)) return &*it;
    if (it->size != 0 || it->addr != a) break;
  }
  return nullptr;
}

std::string hex(uintptr_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#" PRIxPTR, a);
  return buf;
}

}  // namespace

std::string variable(uintptr_t addr, size_t element_size) {
  const Symbol *s = find(table().objects, addr);
  if (!s) return hex(addr);
  const size_t off = addr - s->addr;
  char buf[64];
  if (element_size && s->size > element_size) {
    std::snprintf(buf, sizeof buf, "[%zu]", off / element_size);
    std::string out = s->name + buf;
    if (off % element_size) out += "+" + std::to_string(off % element_size);
    return out;
  }
  return off ? s->name + "+" + std::to_string(off) : s->name;
}

std::string code(uintptr_t pc) {
  const Symbol *s = find(table().functions, pc);
  if (!s) return hex(pc);
  char buf[32];
  std::snprintf(buf, sizeof buf, "+%#" PRIxPTR, pc - s->addr);
  return s->name + buf;
}

bool known(uintptr_t addr) { return find(table().objects, addr) != nullptr; }

}  // namespace mw::symbols
