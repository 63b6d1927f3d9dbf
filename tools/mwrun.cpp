// mwrun: starts the N ranks of a Midway job on this host and waits for them.
//
//   mwrun -n 4 [--provider P] [--model ec|rc|pc] [--stats[=json:FILE]] [--timeout S] prog args...
//
// With --stats it also gathers the statistics each rank leaves in the job directory
// (runtime/core/stats.hpp) and prints them as a table, or writes them as one JSON file.
//
// Each rank is told who it is through the environment (MW_RANK, MW_NPROCS, ...) and finds
// its peers through files in a fresh job directory (runtime/launch/bootstrap_files.cpp). The
// ranks run in a process group of their own, so that mwrun can stop all of them, and
// whatever they started, when one fails: a DSM job with a dead rank can only hang.
//
// mwrun blocks in sigtimedwait for the whole job: SIGCHLD, the signals it forwards and
// its own deadlines are the only things that wake it.
#include <fcntl.h>
#include <sched.h>
#include <ftw.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "advise.hpp"
#include "core/waits.hpp"
#include "memory/symbols.hpp"

#include "core/leftovers.hpp"
#include "core/settings.hpp"
#include "core/stats.hpp"
#include "launch/bootstrap.hpp"

extern char **environ;

namespace {

using Clock = std::chrono::steady_clock;
// Insertion order kept: the ranks' fields and the totals print in the runtime's order.
using Json = nlohmann::ordered_json;

constexpr int kUsageExit = 2;
constexpr int kTimeoutExit = 124;  // as timeout(1)
constexpr int kMaxRanks = 4096;
// Between SIGTERM and SIGKILL when stopping the job: time for a rank to flush its output.
constexpr auto kGrace = std::chrono::seconds(2);
// How often mwrun looks for a deadlock in the ranks' wait records.
constexpr auto kScan = std::chrono::milliseconds(500);

// The help text; its %s are filled from the settings table (runtime/core/settings.def).
const char *const kHelp = R"(usage: mwrun -n N [options] PROGRAM [ARGS...]

Starts N processes of PROGRAM on this host as the ranks of one Midway job, and
returns the job's exit status: 0 if every rank exits 0; otherwise the exit code of
the first rank to fail, or 128+N if it was killed by signal N.

Options:
  -n N, -np N, --nprocs N  number of ranks (1 to 4096)
  --provider P             libfabric provider for the ranks' transport, e.g. shm,
                           tcp or "tcp;ofi_rxm" (default: shm on a single host)
  --model ec|rc|pc         consistency model for every shared datum: entry (ec, the
                           default), release (rc) or processor (pc) consistency
  --stats                  when every rank has exited 0, print a table of each rank's
                           statistics and their totals on standard error: messages,
                           MB of payload (shared data) and of protocol, lock acquires
                           (local/remote), barriers, faults, time waiting, and the
                           phases the program marked (mw_phase_begin/mw_phase_end)
  --stats=table            the same
  --stats=json:FILE        write every rank's statistics and the totals to FILE, as
                           {"nprocs": N, "ranks": [{...}, ...], "total": {...}}
  --trace=FILE             a timeline of the job: each rank's faults (with the page
                           and its home), pages served, flushes, barrier waits,
                           remote acquires, locks granted and updates applied,
                           merged into FILE as
                           a Chrome trace (JSON: open it in ui.perfetto.dev or
                           chrome://tracing); written by the ranks that reach
                           mw_finalize
  --merge-trace=PATH       run no job: merge the timelines that the ranks of a job
                           launched otherwise (mpirun, srun) wrote with
                           MW_TRACE=PATH, PATH.<rank>.json, into PATH, as --trace
                           does, and print where each rank's time went
  --advise[=FILE]          the binding advisor: PROGRAM must be a check build (mwcc
                           -fmidway-check) of a program written for release
                           consistency. Each rank records, per cache line, the locks
                           held at every access and the barrier phases of its stores
                           and loads; when the job ends, mwrun prints the mw_bind and
                           mw_barrier_bind calls that make it entry consistent, the
                           data that needs none, and the data no lock or barrier
                           guards consistently (with two access sites each); with
                           FILE it also writes the advice there as JSON
  --timeout S              stop the job if it runs longer than S seconds (exit 124),
                           printing what each rank waits for first
  --bind-to core|none      core: bind rank r to the r-th CPU mwrun may use
                           (sched_setaffinity; its service thread runs there too);
                           none: let the kernel place the ranks. Default: core when
                           the ranks fit on the CPUs mwrun may use, none when they
                           outnumber them (--bind-to core is then an error)
  --liveness S             a rank that waits stops the job when a peer has not
                           answered it for S seconds (its host or link lost, or its
                           process stopped); 0: never (default 20: MW_LIVENESS_TIMEOUT)
  --exec-prefix 'CMD'      run each rank as CMD PROGRAM [ARGS...]; CMD's words are
                           split on spaces and {rank} in them becomes the rank, e.g.
                           --exec-prefix 'valgrind -q' or, to place each rank in a
                           network namespace of its own, 'ip netns exec host{rank}'
  --settings               print every MW_ variable as a Markdown table (the page
                           docs/SETTINGS.md is this output) and exit
  -h, --help               this text
  --                       end of mwrun's options

A failing rank stops the job: when a rank is killed by a signal, exits non-zero,
exits without calling mw_finalize while others still run, or exits before mw_init
while another rank waits in it, mwrun says which rank and why, sends SIGTERM to the other ranks, then SIGKILL 2 s later. SIGINT, SIGTERM and
SIGHUP sent to mwrun are forwarded to the ranks, which are then stopped the same way.
SIGUSR1 sent to mwrun prints what each rank waits for, one line per rank (a lock and
its manager, a barrier, a page and its home; the call site; the locks it holds), or
"not answering" for a rank that is stopped or runs outside Midway; the job goes on.
When every rank waits for something only another waiting rank can give (ranks at
different barriers, a lock cycle), mwrun prints the same table within seconds, says
why each rank is stuck, and stops the job (exit 1).
The ranks run in a process group of their own; processes they leave behind in it are
killed when the job ends. If mwrun itself is killed (SIGKILL), its ranks die with it;
the next mwrun removes the job directory, and any /dev/shm file of a rank that died
while starting, and says so (only what your jobs left whose processes are gone).
Rank 0 reads mwrun's standard input unless that is a terminal; the other ranks read
/dev/null.

Environment of each rank (%s):
%s
Under mpirun or srun --mpi=pmix, a Midway program finds its peers through PMIx
instead (pass MW_MODEL and the like with mpirun -x), and the failure handling is the
launcher's own. There is no mwrun to combine statistics: with
"mpirun -x MW_STATS=json:PATH", each rank writes its own to PATH.<rank>.json.
)";

// The settings table as --help lists it: name, then its meaning wrapped under it.
std::string settings_help() {
  std::string out;
  for (const mw::settings::Setting &s : mw::settings::all()) {
    std::string meaning = s.meaning;
    if (*s.option) meaning = std::string("(") + s.option + ") " + meaning;
    if (*s.fallback)
      meaning += std::string(" [default ") + s.fallback +
                 (s.type == mw::settings::Type::kInt && *s.unit ? std::string(" ") + s.unit : "") + "]";
    std::string line = std::string("  ") + s.name;
    line += std::string(line.size() < 25 ? 25 - line.size() : 1, ' ');
    // Words wrapped at 85 columns, continued under the meaning's first word.
    size_t col = line.size();
    std::istringstream words(meaning);
    bool first = true;
    for (std::string w; words >> w; first = false) {
      if (!first && col + 1 + w.size() > 85) {
        line += "\n" + std::string(25, ' ');
        col = 25;
      } else if (!first) {
        line += ' ';
        col++;
      }
      line += w;
      col += w.size();
    }
    out += line + "\n";
  }
  return out;
}

// "mwrun: <message>", then `tail`, then exit with `code`.
[[noreturn]] void vexit(int code, const char *tail, const char *fmt, va_list ap) {
  std::fputs("mwrun: ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputs(tail, stderr);
  std::exit(code);
}

[[noreturn]] void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vexit(kUsageExit, "\nTry 'mwrun --help' for more information.\n", fmt, ap);
}

[[noreturn]] void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vexit(EXIT_FAILURE, "\n", fmt, ap);
}

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("mwrun: ", stderr);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

// ---- Command line ----

struct Options {
  int nprocs = 0;
  std::optional<std::string> provider, model, stats;
  std::optional<std::string> trace;  // --trace=FILE
  std::optional<std::string> merge_trace;  // --merge-trace=PATH: no job
  bool advise = false;
  std::optional<std::string> advise_file;  // --advise=FILE
  int timeout_s = 0;  // 0: no limit
  std::optional<bool> bind;  // --bind-to: core (true) or none (false); unset: by count
  std::vector<int> cpus;     // by rank, the CPU it is bound to (placement()); empty: none
  std::optional<std::string> liveness;  // seconds, MW_LIVENESS_TIMEOUT
  std::vector<std::string> exec_prefix;  // words run before the program; {rank} replaced
  std::vector<std::string> command;
};

int parse_count(const char *flag, std::string_view v, int max) {
  int n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < 1 || n > max)
    usage_error("%s takes a whole number from 1 to %d, not '%.*s'", flag, max,
                static_cast<int>(v.size()), v.data());
  return n;
}

// An option's value that becomes a setting, checked by the runtime's own parser.
std::string checked(const char *flag, mw::settings::Id id, const std::string &v) {
  if (mw::settings::check(id, v))
    usage_error("%s takes %s, not '%s'", flag, mw::settings::values(id).c_str(), v.c_str());
  return v;
}

Options parse(int argc, char **argv) {
  Options o;
  int i = 1;
  // The value of option `name` (given as "name=value" or as the next argument), or
  // nullopt if argv[i] is not that option.
  auto value_of = [&](std::string_view arg, std::string_view name) -> std::optional<std::string> {
    if (arg == name) {
      if (i + 1 >= argc) usage_error("%s needs a value", std::string(name).c_str());
      return std::string(argv[++i]);
    }
    if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=')
      return std::string(arg.substr(name.size() + 1));
    return std::nullopt;
  };
  for (; i < argc; i++) {
    std::string_view a = argv[i];
    if (a == "--") {
      i++;
      break;
    }
    if (a.empty() || a[0] != '-') break;
    if (a == "-h" || a == "--help") {
      std::printf(kHelp, "mwrun sets the first ones; the others pass through from mwrun's own",
                  settings_help().c_str());
      std::exit(0);
    }
    if (a == "--settings") {
      std::fputs(mw::settings::markdown().c_str(), stdout);
      std::exit(0);
    }
    if (auto v = value_of(a, "-n"); v) {
      o.nprocs = parse_count("-n", *v, kMaxRanks);
    } else if (auto v = value_of(a, "-np"); v) {
      o.nprocs = parse_count("-np", *v, kMaxRanks);
    } else if (auto v = value_of(a, "--nprocs"); v) {
      o.nprocs = parse_count("--nprocs", *v, kMaxRanks);
    } else if (auto v = value_of(a, "--provider"); v) {
      if (v->empty()) usage_error("--provider needs a libfabric provider name, e.g. shm or tcp");
      o.provider = *v;
    } else if (auto v = value_of(a, "--model"); v) {
      o.model = checked("--model", mw::settings::Id::MW_MODEL, *v);
    } else if (a == "--stats") {
      o.stats = "table";
    } else if (a.substr(0, 8) == "--stats=") {
      o.stats = checked("--stats", mw::settings::Id::MW_STATS, std::string(a.substr(8)));
    } else if (auto v = value_of(a, "--trace"); v) {
      if (v->empty()) usage_error("--trace needs a file name: --trace=FILE");
      o.trace = *v;
    } else if (auto v = value_of(a, "--merge-trace"); v) {
      if (v->empty()) usage_error("--merge-trace needs the path the ranks' MW_TRACE named: --merge-trace=PATH");
      o.merge_trace = *v;
    } else if (a == "--advise") {
      o.advise = true;
    } else if (a.substr(0, 9) == "--advise=") {
      if (a.size() == 9) usage_error("--advise=FILE needs a file name");
      o.advise = true;
      o.advise_file = std::string(a.substr(9));
    } else if (auto v = value_of(a, "--exec-prefix"); v) {
      std::istringstream words(*v);
      for (std::string w; words >> w;) o.exec_prefix.push_back(w);
      if (o.exec_prefix.empty()) usage_error("--exec-prefix needs a command, e.g. 'valgrind -q'");
    } else if (auto v = value_of(a, "--liveness"); v) {
      o.liveness = checked("--liveness", mw::settings::Id::MW_LIVENESS_TIMEOUT, *v);
    } else if (auto v = value_of(a, "--timeout"); v) {
      o.timeout_s = parse_count("--timeout", *v, 1 << 24);
    } else if (auto v = value_of(a, "--bind-to"); v) {
      if (*v != "core" && *v != "none") usage_error("--bind-to takes core or none, not '%s'", v->c_str());
      o.bind = *v == "core";
    } else {
      usage_error("unknown option '%s'", argv[i]);
    }
  }
  for (; i < argc; i++) o.command.emplace_back(argv[i]);
  if (o.merge_trace) {
    if (o.nprocs != 0 || !o.command.empty())
      usage_error("--merge-trace runs no job: give it alone, after the job (--merge-trace=PATH)");
    return o;
  }
  if (o.nprocs == 0) usage_error("-n N is required: the number of ranks to start");
  if (o.command.empty()) usage_error("no program to run");
  // MW_STATS in mwrun's environment asks for what --stats does: the ranks write their
  // figures into the job directory either way, and only mwrun can report them.
  if (const char *env = std::getenv("MW_STATS"); !o.stats && env && *env)
    o.stats = checked("MW_STATS", mw::settings::Id::MW_STATS, env);
  // The same for MW_TRACE: under mwrun the ranks write into the job directory.
  if (const char *env = std::getenv("MW_TRACE"); !o.trace && env && *env) o.trace = env;
  return o;
}

// The CPUs each rank is bound to (--bind-to), by rank; empty: not bound. As mpirun: a
// core each while the ranks fit, since a rank moved by the scheduler loses its caches and,
// worse, may land on the core of a peer it is waiting for. More ranks than CPUs are left
// to the scheduler (binding would stack ranks on some cores and leave others idle).
std::vector<int> placement(const Options &o) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) {
    if (o.bind.value_or(false)) usage_error("--bind-to core: cannot read mwrun's CPUs: %s", std::strerror(errno));
    return {};
  }
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &mine)) cpus.push_back(c);
  if (o.bind == false) return {};
  if (o.nprocs > static_cast<int>(cpus.size())) {
    if (o.bind == true)
      usage_error("--bind-to core: %d ranks but only %zu CPUs to bind them to (use --bind-to none)",
                  o.nprocs, cpus.size());
    return {};
  }
  cpus.resize(static_cast<size_t>(o.nprocs));
  return cpus;
}

// As execvp will: a name with a slash is a path, any other is looked up in PATH.
// Reported before anything starts, so that a typo is a usage error, not N failures.
void check_program(const std::string &prog) {
  auto runnable = [](const std::string &p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
  };
  if (prog.find('/') != std::string::npos) {
    struct stat st;
    if (stat(prog.c_str(), &st) != 0)
      usage_error("cannot run '%s': %s", prog.c_str(), std::strerror(errno));
    if (!runnable(prog)) usage_error("cannot run '%s': not an executable file", prog.c_str());
    return;
  }
  const char *path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');)
    if (runnable((d.empty() ? "." : d) + "/" + prog)) return;
  usage_error("cannot run '%s': no such program in PATH", prog.c_str());
}

// ---- The job directory ----

// Where job directories go: $TMPDIR, or /tmp.
std::string tmp_dir() {
  const char *tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

class JobDir {
 public:
  JobDir() {
    std::string tmpl = tmp_dir() + "/mwrun.XXXXXX";
    if (!mkdtemp(tmpl.data()))
      die("cannot create the job directory %s: %s", tmpl.c_str(), std::strerror(errno));
    path_ = tmpl;
    // Which mwrun the directory is for, so that the next mwrun can remove it if this one
    // is killed before it can (runtime/core/leftovers.hpp).
    if (!mw::leftovers::write_launcher(path_))
      die("cannot write %s/%s: %s", path_.c_str(), mw::leftovers::kLauncherFile,
          std::strerror(errno));
    // Held open while the job runs (not by the ranks): whoever looks for directories that
    // no live process uses, as the test suite's leftover check does, sees it is in use.
    fd_ = open(path_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  }
  ~JobDir() {
    if (fd_ >= 0) close(fd_);
    // Depth first, so that directories are empty when they are removed.
    nftw(
        path_.c_str(), [](const char *p, const struct stat *, int, FTW *) { return remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  JobDir(const JobDir &) = delete;
  JobDir &operator=(const JobDir &) = delete;

  const std::string &path() const { return path_; }
  std::string name() const { return path_.substr(path_.rfind('/') + 1); }
  bool has(const std::string &file) const {
    return access((path_ + "/" + file).c_str(), F_OK) == 0;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

uint64_t random_secret() {
  uint64_t s = 0;
  while (s == 0)
    if (getrandom(&s, sizeof s, 0) != static_cast<ssize_t>(sizeof s))
      die("getrandom of the job's secret failed: %s", std::strerror(errno));
  return s;
}

// ---- Statistics (mwrun --stats) ----
//
// Each rank's statistics module (runtime/core/stats.hpp) writes MW_JOB_DIR/stats.<rank>.json
// at mw_finalize when MW_STATS is set: one flat JSON object of numbers. Once every rank
// has exited 0, mwrun reads them back (any JSON: nested objects and arrays flatten to
// dotted names) and either prints tables on standard error or writes one JSON document.
// Totals sum each field over the ranks, except elapsed time, where the job's is the
// longest rank's.

// The numeric leaves of a JSON value, in order, with dotted paths.
struct Field {
  std::string name;
  double value;
  bool integral;
};
void flatten(const Json &j, const std::string &path, std::vector<Field> &out) {
  auto join = [&path](const std::string &key) { return path.empty() ? key : path + "." + key; };
  if (j.is_object()) {
    for (const auto &[key, v] : j.items()) flatten(v, join(key), out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); i++) flatten(j[i], join(std::to_string(i)), out);
  } else if (j.is_number()) {
    out.push_back({path.empty() ? "value" : path, j.get<double>(), j.is_number_integer()});
  }
}

std::string format_number(double v, bool integral) {
  char b[64];
  if (integral)
    std::snprintf(b, sizeof b, "%.0f", v);
  else
    std::snprintf(b, sizeof b, "%.10g", v);
  return b;
}

std::string fixed3(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

std::optional<std::string> read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

struct Value {
  double v = 0;
  bool integral = true;
};

// Every rank's statistics, and their totals.
struct JobStats {
  struct Rank {
    Json json;                           // the file as the rank wrote it
    std::map<std::string, Value> field;  // flattened name -> value
  };
  int nprocs = 0;
  std::vector<std::optional<Rank>> ranks;  // nullopt: the rank wrote none (or not JSON)
  std::vector<std::string> order;          // field names, in order of first appearance
  std::map<std::string, Value> total;

  // The rank's value of field, if it has it.
  std::optional<double> get(int rank, const std::string &name) const {
    if (!ranks[rank]) return std::nullopt;
    auto it = ranks[rank]->field.find(name);
    if (it == ranks[rank]->field.end()) return std::nullopt;
    return it->second.v;
  }
  double sum(const std::string &name) const {
    auto it = total.find(name);
    return it == total.end() ? 0 : it->second.v;
  }
  bool has(const std::string &name) const { return total.count(name) > 0; }
};

JobStats read_stats(const JobDir &dir, int nprocs) {
  namespace f = mw::stats::fields;
  JobStats js;
  js.nprocs = nprocs;
  js.ranks.resize(nprocs);
  for (int r = 0; r < nprocs; r++) {
    std::string file = f::kFilePrefix + std::to_string(r) + f::kFileSuffix;
    std::optional<std::string> text = read_file(dir.path() + "/" + file);
    if (!text) {
      say("--stats: rank %d wrote no statistics (%s in the job directory)", r, file.c_str());
      continue;
    }
    Json json;
    try {
      json = Json::parse(*text);
    } catch (const Json::parse_error &e) {
      say("--stats: rank %d's %s is not JSON (%s); left out", r, file.c_str(), e.what());
      continue;
    }
    std::vector<Field> fields;
    flatten(json, "", fields);
    JobStats::Rank rank{std::move(json), {}};
    for (const Field &fd : fields) {
      auto [it, fresh] = js.total.try_emplace(fd.name, Value{0, true});
      if (fresh) js.order.push_back(fd.name);
      Value &t = it->second;
      t.v = fd.name == f::kElapsed ? std::max(t.v, fd.value) : t.v + fd.value;
      t.integral = t.integral && fd.integral;
      rank.field[fd.name] = {fd.value, fd.integral};
    }
    js.ranks[r] = std::move(rank);
  }
  return js;
}

// A table of right-aligned numbers under two header lines: a group's name spans the
// columns of the group ("messages" over "sent" and "received"), each column's own name
// is under it. The first column (the row's name) is left-aligned.
class Table {
 public:
  struct Column {
    std::string group, header;
  };

  void add_column(std::string group, std::string header) {
    columns_.push_back({std::move(group), std::move(header)});
  }
  void add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

  void print(FILE *out) const {
    const size_t n = columns_.size();
    std::vector<size_t> width(n);
    for (size_t c = 0; c < n; c++) {
      width[c] = columns_[c].header.size();
      for (const auto &row : rows_) width[c] = std::max(width[c], row[c].size());
    }
    // A group's name may be wider than its columns: widen the last of them.
    std::vector<std::pair<size_t, size_t>> spans;  // [first, last] columns of each group
    for (size_t c = 0; c < n; c++) {
      if (!spans.empty() && !columns_[c].group.empty() &&
          columns_[c].group == columns_[spans.back().first].group)
        spans.back().second = c;
      else
        spans.push_back({c, c});
    }
    bool any_group = false;
    std::string groups;
    for (auto [first, last] : spans) {
      size_t span = 0;
      for (size_t c = first; c <= last; c++) span += width[c] + (c > first ? kGap : 0);
      const std::string &g = columns_[first].group;
      if (g.size() > span) {
        width[last] += g.size() - span;
        span = g.size();
      }
      any_group = any_group || !g.empty();
      if (first > 0) groups += std::string(kGap, ' ');
      groups += g + std::string(span - g.size(), ' ');
    }
    auto line = [&](std::string text) {
      while (!text.empty() && text.back() == ' ') text.pop_back();
      std::fprintf(out, "%s\n", text.c_str());
    };
    if (any_group) line(groups);
    std::vector<std::string> headers;
    for (const Column &col : columns_) headers.push_back(col.header);
    line(format(headers, width));
    for (const auto &row : rows_) line(format(row, width));
  }

 private:
  static constexpr size_t kGap = 2;

  static std::string format(const std::vector<std::string> &cells, const std::vector<size_t> &w) {
    std::string s;
    for (size_t c = 0; c < cells.size(); c++) {
      std::string pad(w[c] - cells[c].size(), ' ');
      if (c == 0)
        s += cells[c] + pad;
      else
        s += std::string(kGap, ' ') + pad + cells[c];
    }
    return s;
  }

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// The fields the tables below show; any other goes to "other statistics".
struct Known {
  std::vector<std::string> phases;  // names, in order of first appearance
  std::vector<std::string> kinds;   // message kinds with any message, in the runtime's order
  std::set<std::string> fields;
};

Known known_fields(const JobStats &js) {
  namespace f = mw::stats::fields;
  Known k;
  for (const char *name :
       {f::kElapsed, f::kMsgsSent, f::kMsgsReceived, f::kPayloadSent, f::kPayloadReceived,
        f::kProtocolSent, f::kProtocolReceived, f::kAcquiresLocal, f::kAcquiresRemote,
        f::kBarriers, f::kFaults, f::kRejected, f::kPollsServed})
    k.fields.insert(name);
  for (size_t w = 0; w < mw::stats::kWaits; w++)
    k.fields.insert(std::string(mw::stats::name(static_cast<mw::stats::Wait>(w))) + f::kWaitSuffix);
  for (size_t i = 0; i < mw::stats::kKinds; i++) {
    const std::string kind = mw::stats::name(static_cast<mw::stats::Kind>(i));
    bool used = false;
    for (const char *dir : {f::kSentPrefix, f::kReceivedPrefix})
      for (const char *what : {f::kMsgsSuffix, f::kPayloadSuffix, f::kProtocolSuffix}) {
        const std::string name = dir + kind + what;
        k.fields.insert(name);
        used = used || js.sum(name) != 0;
      }
    if (used) k.kinds.push_back(kind);
  }
  for (const std::string &name : js.order) {
    std::string_view n = name;
    if (starts_with(n, f::kPhasePrefix) && ends_with(n, f::kPhaseSuffix) &&
        n.size() > std::strlen(f::kPhasePrefix) + std::strlen(f::kPhaseSuffix)) {
      n.remove_prefix(std::strlen(f::kPhasePrefix));
      n.remove_suffix(std::strlen(f::kPhaseSuffix));
      k.phases.emplace_back(n);
      k.fields.insert(name);
    }
  }
  return k;
}

// One row per rank and a total row: Midway's Table 1 for this job.
void print_summary(const JobStats &js, const Known &known) {
  namespace f = mw::stats::fields;
  struct Shown {
    std::string group, header, field;
    std::string (*format)(double);
  };
  auto count = [](double v) { return format_number(v, true); };
  auto mb = [](double bytes) { return fixed3(bytes / 1e6); };
  auto seconds = [](double s) { return fixed3(s); };
  auto ms = [](double s) { return fixed3(s * 1e3); };
  std::vector<Shown> shown{
      {"elapsed", "s", f::kElapsed, seconds},
      {"messages", "sent", f::kMsgsSent, count},
      {"messages", "received", f::kMsgsReceived, count},
      {"MB payload", "sent", f::kPayloadSent, mb},
      {"MB payload", "received", f::kPayloadReceived, mb},
      {"MB protocol", "sent", f::kProtocolSent, mb},
      {"MB protocol", "received", f::kProtocolReceived, mb},
      {"lock acquires", "local", f::kAcquiresLocal, count},
      {"lock acquires", "remote", f::kAcquiresRemote, count},
      {"", "barriers", f::kBarriers, count},
      {"", "faults", f::kFaults, count},
      {"", "rejected", f::kRejected, count},
      {"", "polls", f::kPollsServed, count},  // messages served at loop polls
  };
  for (size_t w = 0; w < mw::stats::kWaits; w++) {
    const char *wait = mw::stats::name(static_cast<mw::stats::Wait>(w));
    shown.push_back({"waiting (ms)", wait, wait + std::string(f::kWaitSuffix), ms});
  }
  for (const std::string &p : known.phases)
    shown.push_back({"phases (s)", p, f::kPhasePrefix + p + f::kPhaseSuffix, seconds});

  Table t;
  t.add_column("", "rank");
  for (const Shown &s : shown) t.add_column(s.group, s.header);
  for (int r = 0; r <= js.nprocs; r++) {
    const bool total = r == js.nprocs;
    std::vector<std::string> row{total ? "total" : std::to_string(r)};
    for (const Shown &s : shown) {
      std::optional<double> v = total ? (js.has(s.field) ? std::optional(js.sum(s.field))
                                                         : std::nullopt)
                                      : js.get(r, s.field);
      row.push_back(v ? s.format(*v) : "-");  // "-": the rank has no such figure
    }
    t.add_row(std::move(row));
  }
  std::fprintf(stderr,
               "mwrun: statistics of %d ranks (MB = 10^6 bytes; total: the sum over the ranks, "
               "the longest elapsed time)\n",
               js.nprocs);
  t.print(stderr);
}

// The messages of the whole job by kind: which protocol traffic the totals are made of.
void print_kinds(const JobStats &js, const Known &known) {
  namespace f = mw::stats::fields;
  if (known.kinds.empty()) return;
  Table t;
  t.add_column("", "kind");
  for (const char *dir : {"sent", "received"})
    for (const char *what : {"messages", "MB payload", "MB protocol"}) t.add_column(dir, what);
  for (const std::string &kind : known.kinds) {
    std::vector<std::string> row{kind};
    for (const char *dir : {f::kSentPrefix, f::kReceivedPrefix}) {
      row.push_back(format_number(js.sum(dir + kind + f::kMsgsSuffix), true));
      row.push_back(fixed3(js.sum(dir + kind + f::kPayloadSuffix) / 1e6));
      row.push_back(fixed3(js.sum(dir + kind + f::kProtocolSuffix) / 1e6));
    }
    t.add_row(std::move(row));
  }
  std::fprintf(stderr, "\nmwrun: messages by kind, all ranks\n");
  t.print(stderr);
}

// Fields the runtime does not name (or hand-written files): one row per field.
void print_others(const JobStats &js, const Known &known, bool first) {
  std::vector<std::string> names;
  for (const std::string &name : js.order)
    if (!known.fields.count(name)) names.push_back(name);
  if (names.empty()) return;
  Table t;
  t.add_column("", "statistic");
  for (int r = 0; r < js.nprocs; r++) t.add_column("", "rank " + std::to_string(r));
  t.add_column("", "total");
  for (const std::string &name : names) {
    std::vector<std::string> row{name};
    for (int r = 0; r < js.nprocs; r++) {
      std::optional<double> v = js.get(r, name);
      row.push_back(v ? format_number(*v, js.ranks[r]->field.at(name).integral) : "-");
    }
    row.push_back(format_number(js.total.at(name).v, js.total.at(name).integral));
    t.add_row(std::move(row));
  }
  if (first)
    std::fprintf(stderr, "mwrun: statistics of %d ranks\n", js.nprocs);
  else
    std::fprintf(stderr, "\nmwrun: other statistics\n");
  t.print(stderr);
}

// Returns false if the combined statistics could not be written.
bool report_stats(const JobDir &dir, int nprocs, const std::string &spec) {
  const JobStats js = read_stats(dir, nprocs);
  if (js.order.empty()) return true;

  if (spec == "table") {
    const Known known = known_fields(js);
    bool summary = false;
    for (const std::string &name : js.order) summary = summary || known.fields.count(name);
    if (summary) {
      print_summary(js, known);
      print_kinds(js, known);
    }
    print_others(js, known, !summary);
    return true;
  }

  std::string out_path = spec.substr(5);  // json:FILE
  Json doc;
  doc["nprocs"] = nprocs;
  doc["ranks"] = Json::array();
  for (int r = 0; r < nprocs; r++) doc["ranks"].push_back(js.ranks[r] ? js.ranks[r]->json : Json());
  Json &total = doc["total"] = Json::object();
  for (const std::string &name : js.order) {
    const Value &t = js.total.at(name);
    if (t.integral) total[name] = static_cast<uint64_t>(t.v);
    else total[name] = t.v;
  }
  std::ofstream out(out_path);
  out << doc.dump(1) << "\n";
  out.close();
  if (!out) {
    say("--stats: cannot write %s: %s", out_path.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

// ---- The timeline (mwrun --trace) ----
//
// Each rank that reaches mw_finalize writes MW_JOB_DIR/trace.<rank>.json, a Chrome trace
// of its own (runtime/core/trace.hpp); mwrun puts their events into one, so that every
// rank shows as a process of one timeline, and prints how long each rank spent in each
// kind of event. A fault's wait is split at the moment its home began to serve it (the
// home's "serve page" event for that page), and an acquire's at the moment a rank began
// to grant it the lock (a "grant" event to it of that lock): before it, the home or the
// owner was busy elsewhere (computing, in its own fault, in a flush) and the request
// waited; after it, the pages or the lock's data were being sent. The ranks of one mwrun
// share a host, and so the clock both events are stamped by.
void print_trace_summary(const Json &events, int nprocs) {
  struct Sum {
    uint64_t n = 0;
    double us = 0;
  };
  struct Rank {
    Sum fault, barrier, acquire, flush, serve, update, grant;
    double fault_before_serve_us = 0, acquire_before_grant_us = 0;
  };
  std::vector<Rank> ranks(static_cast<size_t>(nprocs));
  std::map<std::pair<int, std::string>, std::vector<double>> served;   // (home, page): starts
  std::map<std::pair<int, std::string>, std::vector<double>> granted;  // (acquirer, lock): starts
  for (const Json &e : events) {
    if (e.value("ph", "") != "X") continue;
    const int pid = e.value("pid", -1);
    if (pid < 0 || pid >= nprocs) continue;
    Rank &r = ranks[static_cast<size_t>(pid)];
    const std::string name = e.value("name", "");
    const double dur = e.value("dur", 0.0);
    Sum *s = name == "fault" ? &r.fault : name == "barrier" ? &r.barrier : name == "acquire" ? &r.acquire
           : name == "flush" ? &r.flush : name == "serve page" ? &r.serve : name == "apply update" ? &r.update
           : name == "grant" ? &r.grant : nullptr;
    if (!s) continue;
    s->n++;
    s->us += dur;
    const Json args = e.value("args", Json::object());
    if (name == "serve page") served[{pid, args.value("page", "")}].push_back(e.value("ts", 0.0));
    if (name == "grant") granted[{args.value("peer", -1), args.value("lock", "")}].push_back(e.value("ts", 0.0));
  }
  for (auto *m : {&served, &granted})
    for (auto &[key, starts] : *m) std::sort(starts.begin(), starts.end());
  // The part of a wait before its answer began: all of it if no answer began within it.
  auto before = [](const auto &starts, const auto &key, double ts, double dur) {
    auto it = starts.find(key);
    if (it == starts.end()) return dur;
    auto s = std::lower_bound(it->second.begin(), it->second.end(), ts);
    return s != it->second.end() && *s <= ts + dur ? *s - ts : dur;
  };
  for (const Json &e : events) {
    const std::string name = e.value("name", "");
    if (e.value("ph", "") != "X" || (name != "fault" && name != "acquire")) continue;
    const Json args = e.value("args", Json::object());
    const int pid = e.value("pid", -1);
    if (pid < 0 || pid >= nprocs) continue;
    const double ts = e.value("ts", 0.0), dur = e.value("dur", 0.0);
    Rank &r = ranks[static_cast<size_t>(pid)];
    if (name == "fault")
      r.fault_before_serve_us += before(served, std::pair{args.value("peer", -1), args.value("page", "")}, ts, dur);
    else
      r.acquire_before_grant_us += before(granted, std::pair{pid, args.value("lock", "")}, ts, dur);
  }
  std::fprintf(stderr,
               "mwrun: where each rank's time went (ms; a fault's wait split at the moment its home "
               "began serving it, an acquire's at the moment a rank began granting it)\n"
               "rank      faults  fault wait  before served    acquires  acquire wait  before granted    "
               "barrier wait   flushes  flushing   pages served  serving   grants  granting   updates  applying\n");
  auto count = [](const Sum &s) { return static_cast<unsigned long long>(s.n); };
  for (int p = 0; p < nprocs; p++) {
    const Rank &r = ranks[static_cast<size_t>(p)];
    std::fprintf(stderr,
                 "%-6d %9llu %11.3f %14.3f %11llu %13.3f %15.3f %15.3f %9llu %9.3f %14llu %8.3f %8llu %9.3f %9llu %9.3f\n",
                 p, count(r.fault), r.fault.us / 1e3, r.fault_before_serve_us / 1e3, count(r.acquire),
                 r.acquire.us / 1e3, r.acquire_before_grant_us / 1e3, r.barrier.us / 1e3, count(r.flush),
                 r.flush.us / 1e3, count(r.serve), r.serve.us / 1e3, count(r.grant), r.grant.us / 1e3,
                 count(r.update), r.update.us / 1e3);
  }
}

// Merges the ranks' timelines, `files[r]` being rank r's, into out_path, and prints the
// summary. `what` names the option in messages, which name the files if they are the
// user's (not in the job directory).
bool merge_traces(const std::vector<std::string> &files, const std::string &out_path, const char *what,
                  bool users_files) {
  const int nprocs = static_cast<int>(files.size());
  Json events = Json::array();
  Json dropped = Json::object();
  int read = 0;
  // Per host, the ranks' events and the offset of its system clock from its steady clock.
  std::map<std::string, std::pair<std::vector<size_t>, int64_t>> hosts;
  for (int r = 0; r < nprocs; r++) {
    const std::string &file = files[static_cast<size_t>(r)];
    std::optional<std::string> text = read_file(file);
    if (!text) {
      if (users_files) say("%s: rank %d wrote no trace (%s; it did not reach mw_finalize)", what, r, file.c_str());
      else say("%s: rank %d wrote no trace (it did not reach mw_finalize)", what, r);
      continue;
    }
    Json json;
    uint64_t lost = 0;
    try {
      json = Json::parse(*text);
      const Json &other = json.at("otherData");
      if (other.value("rank", r) != r)
        throw std::runtime_error("it is rank " + std::to_string(other.value("rank", -1)) + "'s");
      lost = other.value("dropped", uint64_t{0});
      auto &host = hosts[other.value("host", std::string())];
      host.second = other.value("realtime_offset_ns", int64_t{0});
      for (Json &e : json.at("traceEvents")) {
        host.first.push_back(events.size());
        events.push_back(std::move(e));
      }
    } catch (const std::exception &e) {
      say("%s: rank %d's %s is not its trace (%s); left out", what, r,
          (users_files ? file : "trace." + std::to_string(r) + ".json").c_str(), e.what());
      continue;
    }
    if (lost) {
      say("%s: rank %d recorded more events than it keeps; its last %llu are left out", what, r,
          static_cast<unsigned long long>(lost));
      dropped[std::to_string(r)] = lost;
    }
    ++read;
  }
  if (read == 0) return false;
  // Ranks of several hosts: each host's steady clock starts at its own boot, so their
  // events are placed by the hosts' system clocks, which NTP keeps close (within a
  // millisecond or much less), relative to the host whose name sorts first.
  if (hosts.size() > 1) {
    const int64_t base = hosts.begin()->second.second;
    for (const auto &[name, host] : hosts)
      for (size_t i : host.first)
        if (events[i].contains("ts"))
          events[i]["ts"] = events[i]["ts"].get<double>() + static_cast<double>(host.second - base) / 1e3;
    say("%s: the ranks ran on %zu hosts: their events are placed by each host's system clock, "
        "so across hosts they are as close as those clocks agree (the waits split at their answers too)",
        what, hosts.size());
  }
  print_trace_summary(events, nprocs);
  Json doc = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ns"},
              {"otherData", {{"nprocs", nprocs}, {"dropped", dropped}}}};
  std::ofstream out(out_path);
  out << doc.dump() << "\n";
  out.close();
  if (!out) {
    say("%s: cannot write %s: %s", what, out_path.c_str(), std::strerror(errno));
    return false;
  }
  say("%s: the timeline of %d rank%s is in %s (open it in ui.perfetto.dev or chrome://tracing)",
      what, read, read == 1 ? "" : "s", out_path.c_str());
  return true;
}

bool report_trace(const JobDir &dir, int nprocs, const std::string &out_path) {
  std::vector<std::string> files;
  for (int r = 0; r < nprocs; r++) files.push_back(dir.path() + "/trace." + std::to_string(r) + ".json");
  return merge_traces(files, out_path, "--trace", false);
}

// mwrun --merge-trace=PATH: the timelines a job launched otherwise (mpirun, srun) left in
// PATH.<rank>.json (MW_TRACE=PATH), merged into PATH as mwrun --trace=PATH would have.
// The ranks are those files' numbers; a rank missing among them is said.
int merge_trace_files(const std::string &path) {
  namespace fs = std::filesystem;
  const fs::path prefix(path);
  const fs::path dir = prefix.has_parent_path() ? prefix.parent_path() : fs::path(".");
  const std::string stem = prefix.filename().string() + ".";
  int nprocs = 0;
  std::error_code ec;
  for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() <= stem.size() + 5 || name.compare(0, stem.size(), stem) != 0 ||
        name.compare(name.size() - 5, 5, ".json") != 0)
      continue;
    const std::string digits = name.substr(stem.size(), name.size() - stem.size() - 5);
    int r = 0;
    auto [end, bad] = std::from_chars(digits.data(), digits.data() + digits.size(), r);
    if (bad == std::errc() && end == digits.data() + digits.size() && r >= 0 && r < kMaxRanks)
      nprocs = std::max(nprocs, r + 1);
  }
  if (ec) die("--merge-trace: cannot read the folder %s: %s", dir.c_str(), ec.message().c_str());
  if (nprocs == 0)
    die("--merge-trace: no %s.<rank>.json (run the job with MW_TRACE=%s: each rank writes its own)",
        path.c_str(), path.c_str());
  std::vector<std::string> files;
  for (int r = 0; r < nprocs; r++) files.push_back(path + "." + std::to_string(r) + ".json");
  return merge_traces(files, path, "--merge-trace", true) ? 0 : EXIT_FAILURE;
}

// ---- Running the job ----

// ---- What each rank waits for (runtime/core/waits.hpp) ----

// Names of the program's code and data, and source lines of code addresses, as the
// ranks' own errors give them (symbols::wait_name): read from the executable only when a
// table is printed, once it is set to the ranks' executable.
bool g_symbols_set = false;

// The file execvp runs for `name` (searching PATH, as it does), or "" if there is none.
std::string find_program(const std::string &name) {
  if (name.find('/') != std::string::npos) return name;
  const char *path = std::getenv("PATH");
  for (std::string_view dirs = path ? path : "/bin:/usr/bin";;) {
    const size_t colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    const std::string file = (dir.empty() ? "." : dir) + "/" + name;
    if (access(file.c_str(), X_OK) == 0) return file;
    if (colon == std::string_view::npos) return "";
    dirs.remove_prefix(colon + 1);
  }
}

// The ranks' wait records, mapped as they appear in the job directory.
class Waits {
 public:
  Waits(const JobDir &dir, int nprocs, const std::string &program)
      : dir_(dir), maps_(static_cast<size_t>(nprocs), nullptr), program_(program) {}
  ~Waits() {
    for (auto *m : maps_)
      if (m) munmap(m, sizeof(mw::waits::Record));
  }
  Waits(const Waits &) = delete;
  Waits &operator=(const Waits &) = delete;

  std::vector<mw::waits::Snapshot> read() {
    std::vector<mw::waits::Snapshot> out(maps_.size());
    for (size_t r = 0; r < maps_.size(); r++) {
      if (!maps_[r]) map(r);
      if (maps_[r]) out[r].valid = mw::waits::read(*maps_[r], &out[r].rec);
    }
    return out;
  }

  // One line per rank: its wait, or why it is not answering.
  std::string table(const std::vector<pid_t> &pids, const std::vector<mw::waits::Snapshot> &s) {
    use_symbols();
    const uint64_t now = mw::waits::realtime_ns();
    std::string out;
    for (size_t r = 0; r < s.size(); r++) {
      std::string line = "  rank " + std::to_string(r);
      const pid_t pid = r < pids.size() ? pids[r] : 0;
      if (pid > 0) line += " (pid " + std::to_string(pid);
      if (s[r].valid) line += std::string(pid > 0 ? ", " : " (") + "host " + s[r].rec.host + ")";
      else if (pid > 0) line += ")";
      line += ": ";
      const char state = process_state(pid);
      if (pid <= 0 || state == 0) {
        line += "exited";
      } else if (state == 'T' || state == 't') {
        line += "not answering: its process is stopped (SIGSTOP or a debugger)";
        if (s[r].valid && s[r].rec.kind != static_cast<uint32_t>(mw::waits::Kind::kNone))
          line += "; it was waiting for " + mw::waits::describe(s[r].rec, mw::symbols::wait_name, now);
      } else if (!s[r].valid && dir_.has(mw::bootstrap::files::kJoinedPrefix + std::to_string(r))) {
        // Joined, and its record not yet open: mw_init waits for the ranks still to join.
        std::string missing;
        for (size_t q = 0; q < s.size(); q++)
          if (!dir_.has(mw::bootstrap::files::kJoinedPrefix + std::to_string(q)))
            missing += (missing.empty() ? "" : ", ") + std::to_string(q);
        line += "waits in mw_init for the other ranks to reach it" +
                (missing.empty() ? std::string() : " (not yet: rank " + missing + ")");
      } else if (!s[r].valid) {
        line += "not answering: it has not reached mw_init";
      } else if (now > s[r].rec.alive_ns + kSilentNs) {
        line += "not answering: its runtime has not run for " +
                fixed1(static_cast<double>(now - s[r].rec.alive_ns) / 1e9) + " s; last waiting for " +
                mw::waits::describe(s[r].rec, mw::symbols::wait_name, now);
      } else if (s[r].rec.kind == static_cast<uint32_t>(mw::waits::Kind::kNone)) {
        // Its process's state tells a loop from a sleep (sleep(3), read(2), a mutex).
        line += std::string("running outside Midway (") +
                (state == 'R' ? "computing or spinning" : "blocked in a system call") + ") for " +
                fixed1(static_cast<double>(now - std::min(now, s[r].rec.since_ns)) / 1e9) + " s";
      } else {
        line += "waits for " + mw::waits::describe(s[r].rec, mw::symbols::wait_name, now);
      }
      out += (out.empty() ? "" : "\n") + line;
    }
    return out;
  }

  // Where the fault rank `r` died of stopped, as " in FUNCTION+0x4c at FILE:LINE" (the rank's
  // handler could not read lines), or "" if the rank recorded none or the executable's
  // line tables do not have it.
  std::string crash_site(int r) {
    const std::vector<mw::waits::Snapshot> s = read();
    const mw::waits::Snapshot &me = s[static_cast<size_t>(r)];
    if (!me.valid || me.rec.crash_pc == 0) return "";
    use_symbols();
    const std::string site = mw::symbols::instruction_site(me.rec.crash_pc);
    return site.empty() ? "" : " in " + site;
  }

  // The reason, headed by what kind of deadlock it is, once the ranks it is about (every
  // rank, or a lock cycle's) have waited, stuck, with nothing changed for kStableNs;
  // else empty.
  std::string deadlock(const std::vector<mw::waits::Snapshot> &s) {
    std::vector<int> involved;
    std::string why = mw::waits::describe_deadlock(s, &involved);
    if (!why.empty())
      why = std::string(involved.size() < s.size()
                            ? "ranks wait in a cycle, each for a lock the next one holds:\n"
                            : "every rank waits for what only another waiting rank can give:\n") +
            why;
    std::vector<uint64_t> key;  // the records the answer rests on (a rank outside a lock cycle may run on)
    for (int r : involved) {
      key.push_back(static_cast<uint64_t>(r));
      key.push_back(s[static_cast<size_t>(r)].rec.seq);
    }
    const uint64_t now = mw::waits::realtime_ns();
    if (why.empty() || key != stuck_key_) {
      stuck_key_ = why.empty() ? std::vector<uint64_t>{} : key;
      stuck_since_ = now;
      return "";
    }
    return now - stuck_since_ >= kStableNs ? why : "";
  }

 private:
  static constexpr uint64_t kSilentNs = 3'000'000'000ull;  // a service thread wakes every second
  static constexpr uint64_t kStableNs = 2'000'000'000ull;

  static std::string fixed1(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", v);
    return b;
  }
  // The state letter of /proc/<pid>/stat (R, S, D, T, t, Z...), or 0 if it is gone.
  static char process_state(pid_t pid) {
    if (pid <= 0) return 0;
    std::optional<std::string> st = read_file("/proc/" + std::to_string(pid) + "/stat");
    if (!st) return 0;
    size_t close = st->rfind(')');
    if (close == std::string::npos || close + 2 >= st->size()) return 0;
    char c = (*st)[close + 2];
    return c == 'Z' || c == 'X' ? 0 : c;
  }
  void map(size_t r) {
    const std::string path = dir_.path() + "/" + mw::waits::kFilePrefix + std::to_string(r);
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= sizeof(mw::waits::Record)) {
      void *p = mmap(nullptr, sizeof(mw::waits::Record), PROT_READ, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) maps_[r] = static_cast<mw::waits::Record *>(p);
    }
    close(fd);
  }

  // Code and data are named from the program's file (not /proc/<pid>/exe, which is a
  // wrapper's under --exec-prefix).
  void use_symbols() {
    if (g_symbols_set || program_.empty()) return;
    mw::symbols::set_executable(program_);
    g_symbols_set = true;
  }

  const JobDir &dir_;
  std::vector<mw::waits::Record *> maps_;
  const std::string program_;
  std::vector<uint64_t> stuck_key_;
  uint64_t stuck_since_ = 0;
};

std::string describe_signal(int sig) {
  const char *abbrev = sigabbrev_np(sig);
  return "signal " + std::to_string(sig) + (abbrev ? std::string(" (SIG") + abbrev + ")" : "");
}

class Job {
 public:
  Job(const Options &o, const JobDir &dir, uint64_t secret)
      : o_(o), dir_(dir), secret_(secret), pids_(o.nprocs, 0), waits_(dir, o.nprocs, find_program(o.command[0])) {}

  // The job's exit status.
  int run() {
    sigset_t wanted;
    sigemptyset(&wanted);
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGUSR1}) sigaddset(&wanted, s);
    // Blocked, so that they wait for sigtimedwait below (and none is lost between the
    // fork of a rank and the wait); the ranks get mwrun's original mask back.
    sigset_t original;
    sigprocmask(SIG_BLOCK, &wanted, &original);
    start_ranks(original);

    std::optional<Clock::time_point> job_deadline;
    if (o_.timeout_s > 0) job_deadline = Clock::now() + std::chrono::seconds(o_.timeout_s);
    // Every kScan, while the job runs, mwrun reads the ranks' wait records for a deadlock.
    Clock::time_point next_scan = Clock::now() + kScan;
    while (alive_ > 0) {
      std::optional<Clock::time_point> deadline = stopping_ ? kill_at_ : job_deadline;
      const bool scanning = !stopping_ && o_.nprocs > 1;
      const bool scan_first = scanning && (!deadline || next_scan < *deadline);
      if (scan_first) deadline = next_scan;
      siginfo_t info;
      int sig;
      if (deadline) {
        auto left = std::max(Clock::duration::zero(), *deadline - Clock::now());
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
        sig = sigtimedwait(&wanted, &info, &ts);
      } else {
        sig = sigwaitinfo(&wanted, &info);
      }
      if (sig < 0 && errno == EINTR) continue;
      if (sig < 0 && errno == EAGAIN && scan_first) {
        next_scan = Clock::now() + kScan;
        check_unjoined();
        auto snap = waits_.read();
        std::string why = waits_.deadlock(snap);
        if (!why.empty()) {
          say("deadlock: %swhat each rank waits for:\n%s\nstopping the job", why.c_str(),
              waits_.table(pids_, snap).c_str());
          fail(EXIT_FAILURE);
          stop(SIGTERM);
        }
        continue;
      }
      if (sig < 0 && errno == EAGAIN) {
        if (stopping_) {
          // Past the grace period: whatever is left does not get another chance, and
          // the wait it caused is explained.
          std::string left;
          int count = 0;
          for (int r = 0; r < o_.nprocs; r++)
            if (pids_[r] > 0 && !reaped_[r]) {
              left += std::string(count++ ? ", " : "") + std::to_string(r) + " (pid " + std::to_string(pids_[r]) + ")";
            }
          if (count > 0)
            say("rank%s %s did not stop within %lld s of %s; killing %s", count > 1 ? "s" : "", left.c_str(),
                static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(kGrace).count()),
                describe_signal(stop_signal_).c_str(), count > 1 ? "them" : "it");
          killpg(pgid_, SIGKILL);
          kill_at_.reset();
        } else {
          say("the job ran longer than --timeout %d s; stopping it. What each rank waits for:\n%s",
              o_.timeout_s, waits_.table(pids_, waits_.read()).c_str());
          fail(kTimeoutExit);
          stop(SIGTERM);
        }
        continue;
      }
      if (sig < 0) {
        say("sigtimedwait failed: %s; killing the ranks", std::strerror(errno));
        fail(EXIT_FAILURE);
        killpg(pgid_, SIGKILL);
        while (alive_ > 0 && waitpid(-pgid_, nullptr, 0) > 0) alive_--;
        break;
      }
      if (sig == SIGCHLD) {
        reap();
      } else if (sig == SIGUSR1) {
        say("what each rank waits for:\n%s", waits_.table(pids_, waits_.read()).c_str());
      } else if (!stopping_) {
        say("received %s; forwarding it to the ranks and stopping the job",
            describe_signal(sig).c_str());
        fail(128 + sig);
        stop(sig);
      } else {
        killpg(pgid_, SIGKILL);  // asked again while stopping: no more grace
      }
    }
    // The ranks are gone; nothing they started outlives the job. A rank killed between
    // opening the job's doorbell page and connecting (which unlinks it) leaves its name.
    if (pgid_ > 0) killpg(pgid_, SIGKILL);
    shm_unlink(mw::leftovers::bells_name(dir_.name()).c_str());
    // A job none of whose ranks joined ran N unrelated copies of the program, and a wrong
    // binary (or a script) would pass for a good run: say so, once it has ended well.
    bool joined = false;
    for (int r = 0; r < o_.nprocs && !joined; r++)
      joined = dir_.has(mw::bootstrap::files::kJoinedPrefix + std::to_string(r));
    if (exit_code_ == 0 && !joined)
      say("note: no rank called mw_init, so the %d processes of %s ran unconnected (not a "
          "Midway program, or each left before mw_init)", o_.nprocs, o_.command[0].c_str());
    return exit_code_;
  }

 private:
  void start_ranks(const sigset_t &original) {
    // mwrun's environment, with the job's variables set (MW_PROVIDER, MW_MODEL and
    // MW_STATS pass through unless an option sets them).
    char secret[17];
    std::snprintf(secret, sizeof secret, "%016llx", static_cast<unsigned long long>(secret_));
    std::vector<std::string> set{"MW_NPROCS=" + std::to_string(o_.nprocs),
                                 "MW_JOB_DIR=" + dir_.path(), "MW_JOB_ID=" + dir_.name(),
                                 std::string("MW_SECRET=") + secret};
    if (o_.provider) set.push_back("MW_PROVIDER=" + *o_.provider);
    if (o_.model) set.push_back("MW_MODEL=" + *o_.model);
    if (o_.stats) set.push_back("MW_STATS=" + *o_.stats);
    if (o_.trace) set.push_back("MW_TRACE=" + *o_.trace);
    if (o_.advise) set.push_back("MW_ADVISE=1");
    if (o_.liveness) set.push_back("MW_LIVENESS_TIMEOUT=" + *o_.liveness);
    auto is_set = [&set](std::string_view entry) {
      if (entry.rfind("MW_RANK=", 0) == 0) return true;
      for (const std::string &v : set)
        if (entry.rfind(std::string_view(v).substr(0, v.find('=') + 1), 0) == 0) return true;
      return false;
    };
    std::vector<std::string> env;
    for (char **e = environ; *e; e++)
      if (!is_set(*e)) env.emplace_back(*e);
    env.insert(env.end(), set.begin(), set.end());
    env.emplace_back();  // MW_RANK, per rank

    const bool stdin_is_tty = isatty(STDIN_FILENO);
    const pid_t mwrun = getpid();
    // Each rank starts with address-space randomization off, as the runtime would make it
    // (memory/same_layout.hpp), unless MW_SAME_LAYOUT=0. Set here, it spares every rank
    // the re-execution, which loads libfabric a second time: Debian's libfabric needs
    // libpsm2 and libinfinipath, whose constructors each sleep 100 ms to calibrate a
    // clock, so a rank's start cost 0.4 s instead of 0.2 s.
    const char *layout = std::getenv("MW_SAME_LAYOUT");
    const bool same_layout = !layout || std::strcmp(layout, "0") != 0;

    for (int r = 0; r < o_.nprocs; r++) {
      env.back() = "MW_RANK=" + std::to_string(r);
      // The rank's command line: the exec prefix, {rank} replaced, then the program.
      std::vector<std::string> words;
      for (std::string w : o_.exec_prefix) {
        for (size_t at; (at = w.find("{rank}")) != std::string::npos;)
          w.replace(at, 6, std::to_string(r));
        words.push_back(std::move(w));
      }
      words.insert(words.end(), o_.command.begin(), o_.command.end());
      std::vector<char *> argv;
      for (std::string &w : words) argv.push_back(w.data());
      argv.push_back(nullptr);
      std::vector<char *> envp;
      for (std::string &e : env) envp.push_back(e.data());
      envp.push_back(nullptr);
      std::fflush(nullptr);
      pid_t pid = fork();
      if (pid < 0) {
        say("cannot start rank %d: fork failed: %s", r, std::strerror(errno));
        fail(EXIT_FAILURE);
        stop(SIGTERM);
        return;
      }
      if (pid == 0) {
        // The child of a single-threaded process: everything here is safe to call.
        setpgid(0, pgid_);
        // If mwrun dies (even by SIGKILL), so does the rank, rather than wait forever
        // for peers that are gone.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != mwrun) _exit(EXIT_FAILURE);
        sigprocmask(SIG_SETMASK, &original, nullptr);
        if (!o_.cpus.empty()) {
          cpu_set_t one;
          CPU_ZERO(&one);
          CPU_SET(o_.cpus[static_cast<size_t>(r)], &one);
          if (sched_setaffinity(0, sizeof one, &one) != 0) {
            std::fprintf(stderr, "mwrun: rank %d: cannot bind to CPU %d: %s\n", r,
                         o_.cpus[static_cast<size_t>(r)], std::strerror(errno));
            _exit(EXIT_FAILURE);
          }
        }
        if (same_layout) {
          const int persona = personality(0xffffffff);
          if (persona != -1) personality(static_cast<unsigned long>(persona) | ADDR_NO_RANDOMIZE);
        }
        if (r != 0 || stdin_is_tty) {
          // A rank reading the terminal from a background process group would be stopped.
          FILE *null = std::freopen("/dev/null", "r", stdin);
          if (!null) _exit(EXIT_FAILURE);
        }
        execvpe(argv[0], argv.data(), envp.data());
        std::fprintf(stderr, "mwrun: rank %d: cannot run %s: %s\n", r, argv[0],
                     std::strerror(errno));
        _exit(127);
      }
      if (pgid_ == 0) {
        pgid_ = pid;
        // For the next mwrun, should this one be killed: what the ranks start there
        // outlives them (leftovers.hpp). Without it, only the directory is cleaned up.
        mw::leftovers::write_group(dir_.path(), pgid_);
      }
      setpgid(pid, pgid_);  // also here, so that the group exists before the next fork
      pids_[r] = pid;
      alive_++;
    }
  }

  // A rank that dies before every peer has mapped its endpoint's region leaves it in
  // /dev/shm (16 MiB; runtime/core/leftovers.hpp): nothing of the rank's own uses it now,
  // and a peer's mapping outlives the name.
  static void remove_region_of(pid_t pid, int rank) {
    shm_unlink(("/" + mw::leftovers::endpoint_name(rank, pid)).c_str());
  }

  void reap() {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      int r = 0;
      while (r < o_.nprocs && pids_[r] != pid) r++;
      if (r == o_.nprocs) continue;  // not a rank
      alive_--;
      reaped_[r] = true;
      remove_region_of(pid, r);
      if (stopping_) continue;  // the first failure has been reported; these follow from it
      std::string why;
      int code = 0;
      if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        why = "was killed by " + describe_signal(sig) + (WCOREDUMP(status) ? " (core dumped)" : "") +
              waits_.crash_site(r);
        code = 128 + sig;
      } else if (WEXITSTATUS(status) != 0) {
        why = "exited with status " + std::to_string(WEXITSTATUS(status));
        code = WEXITSTATUS(status);
      } else if (dir_.has(mw::bootstrap::files::kJoinedPrefix + std::to_string(r)) &&
                 !dir_.has(mw::bootstrap::files::kLeftPrefix + std::to_string(r))) {
        why = std::string("exited with status 0 without calling mw_finalize") +
              (alive_ > 0 ? ", which the other ranks wait for" : "");
        code = EXIT_FAILURE;
      } else {
        if (!dir_.has(mw::bootstrap::files::kJoinedPrefix + std::to_string(r))) {
          unjoined_.emplace_back(r, pid);
          check_unjoined();
        }
        continue;
      }
      say("rank %d (pid %d) %s%s", r, static_cast<int>(pid), why.c_str(),
          alive_ > 0 ? "; stopping the job" : "");
      fail(code);
      stop(SIGTERM);
    }
  }

  // A rank that exited 0 without calling mw_init leaves the others waiting in theirs
  // (MW_STARTUP_TIMEOUT, then a message about a rank that starts slowly). Once another
  // rank has joined the job, it stops at once. (A job none of whose ranks calls mw_init,
  // a program's --help, is not one.)
  void check_unjoined() {
    if (unjoined_.empty() || stopping_) return;
    for (int r = 0; r < o_.nprocs; ++r)
      if (dir_.has(mw::bootstrap::files::kJoinedPrefix + std::to_string(r))) {
        const auto [rank, pid] = unjoined_.front();
        say("rank %d (pid %d) exited with status 0 without calling mw_init, which rank %d waits "
            "for%s", rank, static_cast<int>(pid), r, alive_ > 0 ? "; stopping the job" : "");
        fail(EXIT_FAILURE);
        stop(SIGTERM);
        return;
      }
  }

  void fail(int code) {
    if (exit_code_ == 0) exit_code_ = code;
  }

  void stop(int sig) {
    stopping_ = true;
    stop_signal_ = sig;
    if (alive_ == 0) return;
    killpg(pgid_, sig);
    kill_at_ = Clock::now() + kGrace;
  }

  const Options &o_;
  const JobDir &dir_;
  const uint64_t secret_;
  std::vector<pid_t> pids_;  // by rank
  Waits waits_;
  int alive_ = 0;            // ranks not yet reaped
  std::vector<bool> reaped_ = std::vector<bool>(o_.nprocs, false);  // by rank
  int stop_signal_ = SIGTERM;  // what stop() sent
  std::vector<std::pair<int, pid_t>> unjoined_;  // ranks that exited 0 before mw_init
  pid_t pgid_ = 0;           // the ranks' process group: rank 0's pid
  bool stopping_ = false;
  std::optional<Clock::time_point> kill_at_;  // when stopping: SIGKILL to the stragglers
  int exit_code_ = 0;
};

// What killed jobs left behind: their job directories, and /dev/shm files of ranks that
// died while starting. Removed before this job makes its own, and said in one line.
void remove_leftovers() {
  namespace lo = mw::leftovers;
  std::vector<lo::Removed> removed = lo::remove_dead_job_dirs(tmp_dir());
  for (auto *more : {lo::remove_dead_endpoints, lo::remove_unused_bells}) {
    std::vector<lo::Removed> r = more();
    removed.insert(removed.end(), r.begin(), r.end());
  }
  if (!removed.empty()) say("%s", lo::describe(removed).c_str());
}

}  // namespace

int main(int argc, char **argv) {
  Options o = parse(argc, argv);
  if (o.merge_trace) return merge_trace_files(*o.merge_trace);
  o.cpus = placement(o);
  check_program(o.command[0]);
  remove_leftovers();
  int code;
  {
    uint64_t secret = random_secret();
    JobDir dir;
    code = Job(o, dir, secret).run();
    if (code == 0 && o.stats && !report_stats(dir, o.nprocs, *o.stats)) code = EXIT_FAILURE;
    // The timeline also of a job that failed: the ranks that finalized wrote theirs.
    if (o.trace && !report_trace(dir, o.nprocs, *o.trace) && code == 0) code = EXIT_FAILURE;
    // The advice also after a checked run that reported (its ranks reached mw_finalize).
    if (o.advise && !mw::advise::report(dir.path(), o.nprocs, o.advise_file) && code == 0)
      code = EXIT_FAILURE;
  }
  return code;
}
