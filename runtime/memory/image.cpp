#include "memory/image.hpp"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.hpp"

namespace mw::image {
namespace {

class File {
 public:
  explicit File(const char *path) : fd_(open(path, O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd_ >= 0) close(fd_);
  }
  File(const File &) = delete;
  File &operator=(const File &) = delete;
  bool ok() const { return fd_ >= 0; }
  bool read_at(void *buf, size_t len, uint64_t off) const {
    return pread(fd_, buf, len, static_cast<off_t>(off)) == static_cast<ssize_t>(len);
  }

 private:
  int fd_;
};

}  // namespace

std::optional<Section> read_section(const char *path, const char *name, bool with_contents) {
  File f(path);
  if (!f.ok()) return std::nullopt;  // e.g. the vDSO, which has no file
  Elf64_Ehdr eh;
  if (!f.read_at(&eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shstrndx >= eh.e_shnum)
    return std::nullopt;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  if (!f.read_at(sh.data(), sh.size() * sizeof(Elf64_Shdr), eh.e_shoff))
    fatal("mw_init", "cannot read the section headers of %s", path);
  const Elf64_Shdr &strtab = sh[eh.e_shstrndx];
  std::vector<char> names(strtab.sh_size + 1, '\0');
  if (!f.read_at(names.data(), strtab.sh_size, strtab.sh_offset))
    fatal("mw_init", "cannot read the section names of %s", path);
  for (const Elf64_Shdr &s : sh) {
    if (s.sh_name >= strtab.sh_size || std::strcmp(&names[s.sh_name], name) != 0) continue;
    Section out{s.sh_addr, s.sh_size, s.sh_addralign ? s.sh_addralign : 1, {}};
    if (with_contents && s.sh_type != SHT_NOBITS) {
      out.contents.resize(s.sh_size);
      if (!f.read_at(out.contents.data(), s.sh_size, s.sh_offset))
        fatal("mw_init", "cannot read section %s of %s", name, path);
    }
    return out;
  }
  return std::nullopt;
}

std::vector<Object> objects_in(const char *path, std::initializer_list<const char *> names) {
  std::vector<Object> out;
  File f(path);
  Elf64_Ehdr eh;
  if (!f.ok() || !f.read_at(&eh, sizeof eh, 0) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shstrndx >= eh.e_shnum)
    return out;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  if (!f.read_at(sh.data(), sh.size() * sizeof(Elf64_Shdr), eh.e_shoff)) return out;
  const Elf64_Shdr &strtab = sh[eh.e_shstrndx];
  std::vector<char> secnames(strtab.sh_size + 1, '\0');
  if (!f.read_at(secnames.data(), strtab.sh_size, strtab.sh_offset)) return out;
  std::vector<bool> wanted(sh.size(), false);
  const Elf64_Shdr *symtab = nullptr;
  for (size_t i = 0; i < sh.size(); ++i) {
    if (sh[i].sh_type == SHT_SYMTAB) symtab = &sh[i];
    if (sh[i].sh_name >= strtab.sh_size) continue;
    for (const char *n : names)
      if (std::strcmp(&secnames[sh[i].sh_name], n) == 0) wanted[i] = true;
  }
  if (!symtab || symtab->sh_entsize != sizeof(Elf64_Sym)) return out;
  std::vector<Elf64_Sym> syms(symtab->sh_size / sizeof(Elf64_Sym));
  if (!f.read_at(syms.data(), syms.size() * sizeof(Elf64_Sym), symtab->sh_offset)) return out;
  for (const Elf64_Sym &y : syms)
    if (y.st_size > 0 && y.st_shndx < wanted.size() && wanted[y.st_shndx] &&
        ELF64_ST_TYPE(y.st_info) == STT_OBJECT)
      out.push_back({y.st_value, y.st_size});
  std::sort(out.begin(), out.end(), [](const Object &a, const Object &b) { return a.addr < b.addr; });
  return out;
}

std::string gather(const char *name) {
  struct Ctx {
    const char *name;
    std::string out;
  } ctx{name, {}};
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *arg) {
        auto &c = *static_cast<Ctx *>(arg);
        // The executable is listed first, with an empty name.
        const char *path = info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
        if (auto s = read_section(path, c.name, true)) c.out += s->contents;
        return 0;
      },
      &ctx);
  return ctx.out;
}

}  // namespace mw::image
