#include "memory/symbols.hpp"

#include <elf.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "memory/image.hpp"
#include "midway.h"

namespace mw::symbols {
namespace {

struct Symbol {
  uintptr_t addr;
  size_t size;
  std::string name;
};

struct Table {
  std::vector<Symbol> objects, functions;  // sorted by address
  std::vector<mw_object> shapes;           // sorted by base, one per variable
};

std::string g_exe = "/proc/self/exe";

std::atomic<const Table *> g_loaded{nullptr};  // set once table() has read the file

const Table &table() {
  static Table *t = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    t = new Table;  // never destroyed: errors may come from the service thread at exit
    const char *exe = g_exe.c_str();
    auto syms = image::read_section(exe, ".symtab", true);
    auto strs = image::read_section(exe, ".strtab", true);
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
    // The descriptors as linked (the executable is position-dependent: their addresses
    // are final in the file). Only the shape is used; names come from .symtab, which
    // any reader of the file (mwrun too) has, where the descriptor's name is a pointer.
    if (auto objs = image::read_section(exe, MW_OBJECTS_SECTION, true)) {
      const size_t m = objs->contents.size() / sizeof(mw_object);
      for (size_t i = 0; i < m; i++) {
        mw_object o;
        std::memcpy(&o, objs->contents.data() + i * sizeof o, sizeof o);
        if (o.base && o.size && o.rank <= MW_OBJECT_MAX_DIMS) t->shapes.push_back(o);
      }
      std::sort(t->shapes.begin(), t->shapes.end(),
                [](const mw_object &a, const mw_object &b) { return a.base < b.base; });
      t->shapes.erase(std::unique(t->shapes.begin(), t->shapes.end(),
                                  [](const mw_object &a, const mw_object &b) { return a.base == b.base; }),
                      t->shapes.end());
    }
  });
  g_loaded.store(t, std::memory_order_release);
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

const mw_object *shape_at(uintptr_t base) {
  const auto &v = table().shapes;
  auto it = std::lower_bound(v.begin(), v.end(), base,
                             [](const mw_object &o, uintptr_t x) { return reinterpret_cast<uintptr_t>(o.base) < x; });
  return it != v.end() && reinterpret_cast<uintptr_t>(it->base) == base ? &*it : nullptr;
}

std::string hex(uintptr_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#" PRIxPTR, a);
  return buf;
}

// A variable's name as the source writes it. A static local is `F.V` in the symbol
// table, which reads like a file name (`main.c` for a condition `c`): named `F::V`, as
// gdb names it, when F is a function of the executable. Other dotted names (`x.1`, a
// second `static x` of one unit) stay as they are.
std::string source_name(const std::string &name) {
  const size_t dot = name.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == name.size()) return name;
  const std::string function = name.substr(0, dot);
  for (const Symbol &f : table().functions)
    if (f.name == function) return function + "::" + name.substr(dot + 1);
  return name;
}

}  // namespace

void set_executable(const std::string &path) { g_exe = path; }

std::string element(const std::string &name, const mw_object &o, uint64_t off) {
  std::string out = name;
  if (o.rank > 0 && o.element_size > 0 && off < o.size) {
    uint64_t index = off / o.element_size;
    off %= o.element_size;
    std::vector<uint64_t> idx(o.rank);
    for (uint32_t d = o.rank; d-- > 0;) {
      idx[d] = o.dims[d] ? index % o.dims[d] : index;
      index = o.dims[d] ? index / o.dims[d] : 0;
    }
    for (uint64_t i : idx) out += "[" + std::to_string(i) + "]";
  }
  if (off) out += "+" + std::to_string(off);
  return out;
}

std::string variable(uintptr_t addr, size_t element_size) {
  const Symbol *s = find(table().objects, addr);
  if (!s) return hex(addr);
  const size_t off = addr - s->addr;
  const std::string name = source_name(s->name);
  if (const mw_object *o = shape_at(s->addr)) return element(name, *o, off);
  if (element_size && s->size > element_size) {
    std::string out = name + "[" + std::to_string(off / element_size) + "]";
    if (off % element_size) out += "+" + std::to_string(off % element_size);
    return out;
  }
  return off ? name + "+" + std::to_string(off) : name;
}

std::string range(uintptr_t addr, size_t len) {
  const Symbol *s = find(table().objects, addr);
  if (s && s->addr == addr) {
    const mw_object *o = shape_at(addr);
    if (!o || o->rank == 0 || len > o->element_size) return source_name(s->name);
  }
  return variable(addr);
}

std::string described_range(uintptr_t addr, size_t len) {
  char bracket[64];
  std::snprintf(bracket, sizeof bracket, "[0x%" PRIxPTR ", +%zu)", addr, len);
  return known(addr) ? range(addr, len) + " " + bracket : bracket;
}

std::string code(uintptr_t pc) {
  const Symbol *s = find(table().functions, pc);
  if (!s) return hex(pc);
  char buf[32];
  std::snprintf(buf, sizeof buf, "+%#" PRIxPTR, pc - s->addr);
  return s->name + buf;
}

namespace {
struct Frame {
  std::string function, line;
};

// The source frames of the instruction at `at`, innermost first: one, or more where it is
// code inlined into the function holding it (addr2line -i). "" for a line the tables do
// not have.
std::vector<Frame> frames_at(uintptr_t at) {
  // The file itself: /proc/self/exe would name addr2line's own.
  std::string exe = g_exe;
  if (exe == "/proc/self/exe") {
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return {};
    exe.assign(path, static_cast<size_t>(n));
  }
  if (at == 0 || exe.find('\'') != std::string::npos) return {};
  char cmd[64 + 4096];
  std::snprintf(cmd, sizeof cmd, "addr2line -f -i -e '%s' %#" PRIxPTR " 2>/dev/null", exe.c_str(), at);
  std::string out;
  if (FILE *f = popen(cmd, "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    pclose(f);
  }
  std::vector<std::string> lines;
  for (size_t at = 0; at < out.size();) {
    const size_t end = std::min(out.find('\n', at), out.size());
    lines.push_back(out.substr(at, end - at));
    at = end + 1;
  }
  char cwd[4096];
  const bool have_cwd = getcwd(cwd, sizeof cwd) != nullptr;
  std::vector<Frame> frames;
  for (size_t i = 0; i + 1 < lines.size(); i += 2) {
    std::string line = lines[i + 1];
    line = line.substr(0, line.find(" (discriminator"));
    if (line.find("??") != std::string::npos) line.clear();
    // Optimized code gives line 0 ("file:?") to a call it made of several (two branches'
    // calls merged into one): the file alone then.
    if (line.size() > 2 && line.compare(line.size() - 2, 2, ":?") == 0) line.resize(line.size() - 2);
    // Relative to the working directory, as the compiler was usually given the file.
    if (have_cwd && line.compare(0, std::strlen(cwd), cwd) == 0 && line[std::strlen(cwd)] == '/')
      line.erase(0, std::strlen(cwd) + 1);
    frames.push_back({lines[i] == "??" ? "" : lines[i], line});
  }
  return frames;
}

// `frames` at `pc`: a call or an instruction in an inlined function is named there, as a
// debugger's backtrace names it, then each function it was inlined in; the outermost is
// the one the code is in. "" without a line.
std::string site(const std::vector<Frame> &frames, uintptr_t pc) {
  if (frames.empty() || frames.front().line.empty()) return "";
  std::string out;
  for (size_t i = 0; i + 1 < frames.size(); ++i)
    out += (frames[i].function.empty() ? "?" : frames[i].function) + " at " + frames[i].line + ", inlined in ";
  return out + code(pc) + (frames.back().line.empty() ? "" : " at " + frames.back().line);
}
}  // namespace

std::string call_site(uintptr_t pc) {
  // pc - 1: a byte of the call instruction, whose line is the call's (the return
  // address may start the next line's code).
  const std::string s = pc ? site(frames_at(pc - 1), pc) : "";
  return s.empty() ? code(pc) : s;
}

std::string instruction_site(uintptr_t pc) { return known_code(pc) ? site(frames_at(pc), pc) : ""; }

void load() { (void)table(); }

bool code_if_loaded(uintptr_t pc, char *out, size_t size) {
  const Table *t = g_loaded.load(std::memory_order_acquire);
  const Symbol *s = t ? find(t->functions, pc) : nullptr;
  if (!s) return false;
  std::snprintf(out, size, "%s+%#" PRIxPTR, s->name.c_str(), pc - s->addr);
  return true;
}

std::string program_call_site(uintptr_t pc) { return known_code(pc) ? call_site(pc) : ""; }

std::string wait_name(uint64_t addr, bool code) {
  if (code) return program_call_site(addr);
  return known(addr) ? variable(addr) : "";
}

std::string wait_name_quick(uint64_t addr, bool code) {
  if (code) return known_code(addr) ? symbols::code(addr) : "";
  return known(addr) ? variable(addr) : "";
}

uintptr_t base_of(uintptr_t addr) {
  const Symbol *s = find(table().objects, addr);
  return s ? s->addr : 0;
}

bool known(uintptr_t addr) { return find(table().objects, addr) != nullptr; }
bool known_code(uintptr_t pc) { return find(table().functions, pc) != nullptr; }

}  // namespace mw::symbols
