#include "core/settings.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace mw::settings {
namespace {

constexpr Setting kTable[] = {
#define MW_SETTING(id, type, fallback, min, max, unit, choices, set_by, option, meaning) \
  {Id::id, #id, Type::type, fallback, min, max, unit, choices, SetBy::set_by, option, meaning},
#include "core/settings.def"
#undef MW_SETTING
};
static_assert(std::size(kTable) == static_cast<size_t>(Id::kCount));

std::vector<std::string_view> split_choices(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t bar = s.find('|');
    out.push_back(s.substr(0, bar));
    if (bar == std::string_view::npos) break;
    s.remove_prefix(bar + 1);
  }
  return out;
}

// "ec, rc or pc"
std::string listed(std::string_view choices) {
  std::vector<std::string_view> c = split_choices(choices);
  std::string s;
  for (size_t i = 0; i < c.size(); ++i) {
    if (i > 0) s += i + 1 == c.size() ? " or " : ", ";
    s += c[i];
  }
  return s;
}

bool matches(std::string_view choice, const std::string &value) {
  constexpr std::string_view kAny = "FILE";
  const size_t colon = choice.find(':');
  if (colon != std::string_view::npos && choice.substr(colon + 1) == kAny)
    return value.size() > colon + 1 && std::string_view(value).substr(0, colon + 1) == choice.substr(0, colon + 1);
  return value == choice;
}

const char *raw(Id id) {
  const char *v = std::getenv(info(id).name);
  return v && *v ? v : nullptr;
}

std::string value_or_default(Id id, const char *call) {
  const Setting &s = info(id);
  const char *v = raw(id);
  if (!v) return s.fallback;
  if (std::optional<std::string> why = check(id, v)) fatal(call, "%s", why->c_str());
  return v;
}

}  // namespace

std::span<const Setting> all() { return kTable; }
const Setting &info(Id id) { return kTable[static_cast<size_t>(id)]; }

std::optional<std::string> check(Id id, const std::string &value) {
  const Setting &s = info(id);
  const std::string given = std::string(s.name) + "=" + value;
  switch (s.type) {
    case Type::kText:
      return std::nullopt;
    case Type::kInt: {
      char *end = nullptr;
      errno = 0;
      const long n = std::strtol(value.c_str(), &end, 10);
      if (!value.empty() && errno == 0 && *end == '\0' && n >= s.min && n <= s.max) return std::nullopt;
      return given + " is not a number" + (*s.unit ? std::string(" of ") + s.unit : "") + " from " +
             std::to_string(s.min) + " to " + std::to_string(s.max);
    }
    case Type::kChoice:
      for (std::string_view c : split_choices(s.choices))
        if (matches(c, value)) return std::nullopt;
      return given + " is not " + s.unit + ": use " + listed(s.choices);
    case Type::kHex64: {
      bool ok = value.size() == 16 && value.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos &&
                value.find_first_not_of('0') != std::string::npos;
      if (ok) return std::nullopt;
      return given + " is not 16 hexadecimal digits (not all zero)";
    }
  }
  return std::nullopt;
}

std::string text(Id id, const char *call) { return value_or_default(id, call); }

long number(Id id, const char *call) {
  const std::string v = value_or_default(id, call);
  if (v.empty()) fatal(call, "%s is not set", info(id).name);
  return std::strtol(v.c_str(), nullptr, 10);
}

uint64_t hex64(Id id, const char *call) {
  const std::string v = value_or_default(id, call);
  if (v.empty()) fatal(call, "%s is not set", info(id).name);
  return std::strtoull(v.c_str(), nullptr, 16);
}

std::string values(Id id) {
  const Setting &s = info(id);
  switch (s.type) {
    case Type::kInt:
      return std::string("a whole number") + (*s.unit ? std::string(" of ") + s.unit : "") + " from " +
             std::to_string(s.min) + " to " + std::to_string(s.max);
    case Type::kChoice: return listed(s.choices);
    case Type::kHex64: return "16 hexadecimal digits";
    case Type::kText: break;
  }
  return "text";
}

bool is_set(Id id) { return std::getenv(info(id).name) != nullptr; }

std::string markdown() {
  std::string s =
      "# Settings\n\n"
      "Every environment variable a Midway job reads, generated from `runtime/core/settings.def`\n"
      "(`mwrun --settings` prints this page; a test checks that it matches). Variables set by\n"
      "mwrun are its own business under mwrun; under mpirun or srun the ranks learn the same\n"
      "things from PMIx. The others pass through mwrun's environment to every rank (`mpirun -x\n"
      "MW_MODEL=rc` under mpirun), unless the mwrun option named sets them.\n\n"
      "| variable | values | default | set by | meaning |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const Setting &x : kTable) {
    std::string values;
    switch (x.type) {
      case Type::kInt: values = std::to_string(x.min) + " to " + std::to_string(x.max) + (*x.unit ? std::string(" ") + x.unit : ""); break;
      case Type::kText: values = "text"; break;
      case Type::kChoice: values = listed(x.choices); break;
      case Type::kHex64: values = "16 hex digits"; break;
    }
    std::string by = x.set_by == SetBy::kMwrun ? "mwrun" : "user";
    if (*x.option) by += std::string(" (`") + x.option + "`)";
    s += std::string("| `") + x.name + "` | " + values + " | " + (*x.fallback ? std::string("`") + x.fallback + "`" : "—") +
         " | " + by + " | " + x.meaning + " |\n";
  }
  return s;
}

}  // namespace mw::settings
