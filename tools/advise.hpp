// mwrun --advise: the binding advisor's merge (docs/CHECKER.md, "The binding advisor").
// Each rank of a check build run with MW_ADVISE=1 leaves its record of the accesses it
// made in the job directory (runtime/check/advisor.hpp); once the job is over, mwrun
// merges them and proposes the bindings of entry consistency.
#pragma once

#include <optional>
#include <string>

namespace mw::advise {

// Reads the ranks' records from `job_dir`, prints the advice on standard error and, when
// `json_path` is given, writes it there as JSON. False (with a message) when a rank left
// no record or the file cannot be written.
bool report(const std::string &job_dir, int nprocs, const std::optional<std::string> &json_path);

}  // namespace mw::advise
