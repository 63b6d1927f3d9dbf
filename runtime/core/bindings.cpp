#include "core/bindings.hpp"

#include "core/error.hpp"

namespace mw {

void overlap_error(const char *call, const char *what, const std::string &name, uintptr_t addr,
                   size_t len, const std::string &data, const char *other_what, const std::string &other_name,
                   const Range &other) {
  const uintptr_t a = std::max(addr, other.addr), b = std::min(addr + len, other.end());
  fatal(call,
        "%s ([%#lx, +%zu)) cannot be bound to %s %s: its bytes [%#lx, %#lx) are bound to %s %s "
        "(bound as [%#lx, +%zu)); a byte of shared data has at most one guard (unbind it "
        "from %s first, or bind only the rest)",
        data.c_str(), static_cast<unsigned long>(addr), len, what, name.c_str(), static_cast<unsigned long>(a),
        static_cast<unsigned long>(b), other_what, other_name.c_str(),
        static_cast<unsigned long>(other.addr), other.len, other_name.c_str());
}

}  // namespace mw
