#include "memory/unmarked_calls.hpp"

#include <map>
#include <set>
#include <string>
#include <string_view>

#include "core/error.hpp"
#include "midway.h"
#include "memory/image.hpp"

namespace mw::unmarked_calls {
namespace {

// Calls `f` with each line of newline-terminated `text`.
template <class F>
void for_each_line(std::string_view text, F &&f) {
  while (!text.empty()) {
    size_t end = text.find('\n');
    if (end == std::string_view::npos) end = text.size();
    if (end > 0) f(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
}

struct Calls {
  std::string argument;  // first recorded call's argument number
  std::string where;     // and its source location
  int count = 0;
};

}  // namespace

int check() {
  const std::string defined_text = image::gather(MW_DEFINED_SECTION);
  const std::string calls_text = image::gather(MW_CALLS_SECTION);
  std::set<std::string_view> defined;
  for_each_line(defined_text, [&](std::string_view name) { defined.insert(name); });

  std::map<std::string_view, Calls> unverified;  // by callee, in name order
  for_each_line(calls_text, [&](std::string_view line) {
    size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    if (t1 == std::string_view::npos || t2 == std::string_view::npos) return;  // not ours
    std::string_view callee = line.substr(0, t1);
    if (defined.count(callee)) return;
    Calls &c = unverified[callee];
    if (c.count++ == 0) {
      c.argument = std::string(line.substr(t1 + 1, t2 - t1 - 1));
      c.where = std::string(line.substr(t2 + 1));
    }
  });
  for (const auto &[callee, c] : unverified) {
    std::string more = c.count > 1 ? " (and " + std::to_string(c.count - 1) + " more calls)" : "";
    warn("mw_init",
         "%s: '%.*s' may write shared memory through argument %s%s, but it was not compiled "
         "by mwcc, so its writes are not marked dirty; compile it with mwcc, or pass it "
         "private memory and copy the result",
         c.where.c_str(), static_cast<int>(callee.size()), callee.data(), c.argument.c_str(),
         more.c_str());
  }
  return static_cast<int>(unverified.size());
}

void require_pass() {
  const char *exe = "/proc/self/exe";
  if (!image::read_section(exe, "mw_window_end", false)) return;  // not linked by mwcc
  const auto defined = image::read_section(exe, MW_DEFINED_SECTION, false);
  if (defined && defined->size > 0) return;
  fatal("mw_init",
        "this program was linked with mwcc's flags, but none of its code was compiled by "
        "the Midway pass (its objects have no section " MW_DEFINED_SECTION "), so no store "
        "to shared data would be marked and every rank would compute with its own copy: "
        "compile every source file with mwcc (or clang-19 with -fpass-plugin and -fplugin "
        "naming lib/MidwayInstrument.so, docs/INSTALL.md)");
}

}  // namespace mw::unmarked_calls
