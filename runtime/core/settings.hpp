// Settings: the environment variables a Midway job reads, declared once (settings.def),
// parsed and checked by one parser with one error format:
//
//   midway: mw_init: MW_PC_INTERVAL_US=0 is not a number of microseconds from 1 to 60000000 (rank 0)
//
// The runtime reads a setting when it needs it (settings::number(Id::MW_STARTUP_TIMEOUT));
// mwrun checks the values its options set with settings::check and prints the table
// with --help and --settings.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace mw::settings {

enum class Type : uint8_t { kInt, kText, kChoice, kHex64 };
enum class SetBy : uint8_t { kMwrun, kUser };

enum class Id : uint8_t {
#define MW_SETTING(id, ...) id,
#include "core/settings.def"
#undef MW_SETTING
  kCount
};

struct Setting {
  Id id;
  const char *name;     // "MW_MODEL"
  Type type;
  const char *fallback;  // the default; "" = none
  long min, max;        // kInt
  const char *unit;     // kInt: "seconds"; kChoice: what it is ("a consistency model")
  const char *choices;  // kChoice: "ec|rc|pc"
  SetBy set_by;
  const char *option;   // the mwrun option that sets it, or ""
  const char *meaning;
};

// Every setting, in the order of settings.def.
std::span<const Setting> all();
const Setting &info(Id id);

// Why `value` is not a valid value of the setting ("MW_MODEL=sc is not a consistency
// model: use ec, rc or pc"), or nothing if it is.
std::optional<std::string> check(Id id, const std::string &value);

// The setting's value from the environment, checked (an invalid value stops the program
// with check's message as `call`'s error), or its default when unset or empty.
std::string text(Id id, const char *call = "mw_init");
long number(Id id, const char *call = "mw_init");  // kInt
uint64_t hex64(Id id, const char *call = "mw_init");  // kHex64
// What the setting takes, as a phrase: "ec, rc or pc", "a whole number of seconds from 0
// to 2147483".
std::string values(Id id);
// Whether the variable is set (to anything, even empty).
bool is_set(Id id);

// The table as Markdown: docs/SETTINGS.md (mwrun --settings).
std::string markdown();

}  // namespace mw::settings
