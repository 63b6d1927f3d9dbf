#include "memory/image.hpp"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

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
