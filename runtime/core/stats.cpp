// Statistics: the counters' storage, phases, snapshots and the JSON a rank leaves for
// mwrun (see stats.hpp).
#include "core/stats.hpp"

#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include "core/error.hpp"
#include "core/settings.hpp"

namespace mw::stats {

namespace detail {
Messages g_messages;
Events g_events;
}  // namespace detail

namespace {

// When elapsed time started: mw_init's start(), or the last reset().
std::atomic<uint64_t> g_start_ns{0};

// ---- Phases ----

struct Phase {
  std::string name;
  uint64_t total_ns = 0;           // of the runs that have ended
  std::optional<uint64_t> since;   // when the current run began, if it is running
};

std::mutex g_phase_mutex;
// Never destroyed (as all module state the service thread touches): a rank that
// exits without mw_finalize runs static destructors while the service thread still
// serves peers.
std::vector<Phase> &g_phases = *new std::vector<Phase>;  // in the order first begun; guarded by g_phase_mutex

Phase *find_phase(const char *name) {
  for (Phase &p : g_phases)
    if (p.name == name) return &p;
  return nullptr;
}

// A phase name becomes the field phase.<name>.seconds, which mwrun splits at dots.
void check_phase_name(const char *call, const char *name) {
  if (!name) fatal(call, "the phase name is NULL");
  if (!*name) fatal(call, "the phase name is empty");
  size_t len = std::strlen(name);
  if (len > kMaxPhaseName)
    fatal(call, "phase name \"%.20s...\" is %zu characters long; the limit is %zu", name, len,
          kMaxPhaseName);
  for (const char *c = name; *c; c++) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-';
    if (!ok)
      fatal(call, "phase name \"%s\" may hold only letters, digits, '_' and '-'", name);
  }
}

// The lock is released before any error: mw::fatal exits, and a mutex must not be
// destroyed locked.
enum class PhaseError { kNone, kAlreadyRunning, kNotRunning, kNeverBegun, kTooMany };

}  // namespace

void phase_begin(const char *call, const char *name) {
  check_phase_name(call, name);
  const uint64_t now = now_ns();
  PhaseError error = PhaseError::kNone;
  {
    std::lock_guard<std::mutex> hold(g_phase_mutex);
    Phase *p = find_phase(name);
    if (!p && g_phases.size() == kMaxPhases) {
      error = PhaseError::kTooMany;
    } else if (!p) {
      g_phases.push_back({name, 0, now});
    } else if (p->since) {
      error = PhaseError::kAlreadyRunning;
    } else {
      p->since = now;
    }
  }
  if (error == PhaseError::kTooMany)
    fatal(call, "cannot begin phase \"%s\": a program may name at most %zu phases", name,
          kMaxPhases);
  if (error == PhaseError::kAlreadyRunning)
    fatal(call, "phase \"%s\" is already running (end it with mw_phase_end before beginning it "
                "again)", name);
}

void phase_end(const char *call, const char *name) {
  check_phase_name(call, name);
  const uint64_t now = now_ns();
  PhaseError error = PhaseError::kNone;
  {
    std::lock_guard<std::mutex> hold(g_phase_mutex);
    Phase *p = find_phase(name);
    if (!p) {
      error = PhaseError::kNeverBegun;
    } else if (!p->since) {
      error = PhaseError::kNotRunning;
    } else {
      p->total_ns += now - *p->since;
      p->since.reset();
    }
  }
  if (error == PhaseError::kNeverBegun)
    fatal(call, "phase \"%s\" was never begun (mw_phase_begin(\"%s\") begins it)", name, name);
  if (error == PhaseError::kNotRunning)
    fatal(call, "phase \"%s\" is not running: it has already ended", name);
}

double phase_seconds(const char *call, const char *name) {
  check_phase_name(call, name);
  const uint64_t now = now_ns();
  std::optional<uint64_t> ns;
  {
    std::lock_guard<std::mutex> hold(g_phase_mutex);
    if (const Phase *p = find_phase(name)) ns = p->total_ns + (p->since ? now - *p->since : 0);
  }
  if (!ns)
    fatal(call, "phase \"%s\" was never begun (mw_phase_begin(\"%s\") begins it)", name, name);
  return static_cast<double>(*ns) * 1e-9;
}

// ---- Snapshots ----

Traffic Snapshot::total_sent() const {
  Traffic t;
  for (const Traffic &k : sent) t += k;
  return t;
}

Traffic Snapshot::total_received() const {
  Traffic t;
  for (const Traffic &k : received) t += k;
  return t;
}

void start() { g_start_ns.store(now_ns(), std::memory_order_relaxed); }

Snapshot snapshot() {
  constexpr auto relaxed = std::memory_order_relaxed;
  using detail::g_events;
  using detail::g_messages;
  const uint64_t now = now_ns();
  Snapshot s;
  for (size_t k = 0; k < kKinds; k++) {
    const detail::TrafficCounters &out = g_messages.sent[k], &in = g_messages.received[k];
    s.sent[k] = {out.msgs.load(relaxed), out.payload_bytes.load(relaxed),
                 out.protocol_bytes.load(relaxed)};
    s.received[k] = {in.msgs.load(relaxed), in.payload_bytes.load(relaxed),
                     in.protocol_bytes.load(relaxed)};
  }
  s.rejected_messages = g_messages.rejected.load(relaxed);
  s.lock_acquires_local = g_events.lock_acquires_local.load(relaxed);
  s.lock_acquires_remote = g_events.lock_acquires_remote.load(relaxed);
  s.barrier_crossings = g_events.barrier_crossings.load(relaxed);
  s.page_faults = g_events.page_faults.load(relaxed);
  s.polls_served = g_events.polls_served.load(relaxed);
  for (size_t w = 0; w < kWaits; w++) s.wait_ns[w] = g_events.wait_ns[w].load(relaxed);
  s.elapsed_ns = now - g_start_ns.load(relaxed);
  std::lock_guard<std::mutex> hold(g_phase_mutex);
  for (const Phase &p : g_phases)
    s.phase_ns.emplace_back(p.name, p.total_ns + (p.since ? now - *p.since : 0));
  return s;
}

void reset() {
  constexpr auto relaxed = std::memory_order_relaxed;
  using detail::g_events;
  using detail::g_messages;
  for (auto *by_kind : {&g_messages.sent, &g_messages.received})
    for (detail::TrafficCounters &t : *by_kind)
      for (detail::Counter *c : {&t.msgs, &t.payload_bytes, &t.protocol_bytes})
        c->store(0, relaxed);
  for (detail::Counter *c :
       {&g_messages.rejected, &g_events.lock_acquires_local, &g_events.lock_acquires_remote,
        &g_events.barrier_crossings, &g_events.page_faults, &g_events.polls_served})
    c->store(0, relaxed);
  for (detail::Counter &c : g_events.wait_ns) c.store(0, relaxed);
  const uint64_t now = now_ns();
  g_start_ns.store(now, relaxed);
  std::lock_guard<std::mutex> hold(g_phase_mutex);
  for (Phase &p : g_phases) {
    p.total_ns = 0;
    if (p.since) p.since = now;
  }
}

mw_stats_t to_public(const Snapshot &s) {
  const Traffic sent = s.total_sent(), received = s.total_received();
  auto seconds = [](uint64_t ns) { return static_cast<double>(ns) * 1e-9; };
  auto wait = [&](Wait w) { return seconds(s.wait_ns[static_cast<size_t>(w)]); };
  mw_stats_t out{};
  out.msgs_sent = sent.msgs;
  out.msgs_received = received.msgs;
  out.payload_bytes_sent = sent.payload_bytes;
  out.payload_bytes_received = received.payload_bytes;
  out.protocol_bytes_sent = sent.protocol_bytes;
  out.protocol_bytes_received = received.protocol_bytes;
  out.lock_acquires_local = s.lock_acquires_local;
  out.lock_acquires_remote = s.lock_acquires_remote;
  out.barrier_crossings = s.barrier_crossings;
  out.page_faults = s.page_faults;
  out.polls_served = s.polls_served;
  out.rejected_messages = s.rejected_messages;
  out.elapsed_seconds = seconds(s.elapsed_ns);
  out.acquire_wait_seconds = wait(Wait::Acquire);
  out.barrier_wait_seconds = wait(Wait::Barrier);
  out.fault_wait_seconds = wait(Wait::Fault);
  return out;
}

// ---- JSON ----

namespace {

class JsonObject {
 public:
  void count(const std::string &field, uint64_t v) {
    char b[32];
    std::snprintf(b, sizeof b, "%" PRIu64, v);
    add(field, b);
  }
  void seconds(const std::string &field, uint64_t ns) {
    char b[48];
    std::snprintf(b, sizeof b, "%" PRIu64 ".%09" PRIu64, ns / 1000000000, ns % 1000000000);
    add(field, b);
  }
  std::string done() { return text_ + "\n}\n"; }

 private:
  // Field names are ours or phase names checked to need no escaping.
  void add(const std::string &field, const char *value) {
    text_ += text_.size() > 1 ? ",\n  \"" : "\n  \"";
    text_ += field;
    text_ += "\": ";
    text_ += value;
  }
  std::string text_ = "{";
};

}  // namespace

std::string to_json(const Snapshot &s) {
  namespace f = fields;
  JsonObject o;
  o.seconds(f::kElapsed, s.elapsed_ns);
  const Traffic out = s.total_sent(), in = s.total_received();
  o.count(f::kMsgsSent, out.msgs);
  o.count(f::kMsgsReceived, in.msgs);
  o.count(f::kPayloadSent, out.payload_bytes);
  o.count(f::kPayloadReceived, in.payload_bytes);
  o.count(f::kProtocolSent, out.protocol_bytes);
  o.count(f::kProtocolReceived, in.protocol_bytes);
  o.count(f::kAcquiresLocal, s.lock_acquires_local);
  o.count(f::kAcquiresRemote, s.lock_acquires_remote);
  o.count(f::kBarriers, s.barrier_crossings);
  o.count(f::kFaults, s.page_faults);
  o.count(f::kRejected, s.rejected_messages);
  o.count(f::kPollsServed, s.polls_served);
  for (size_t w = 0; w < kWaits; w++)
    o.seconds(std::string(name(static_cast<Wait>(w))) + f::kWaitSuffix, s.wait_ns[w]);
  for (auto [prefix, by_kind] : {std::pair{f::kSentPrefix, &s.sent},
                                 std::pair{f::kReceivedPrefix, &s.received}}) {
    for (size_t k = 0; k < kKinds; k++) {
      const std::string kind = prefix + std::string(name(static_cast<Kind>(k)));
      o.count(kind + f::kMsgsSuffix, (*by_kind)[k].msgs);
      o.count(kind + f::kPayloadSuffix, (*by_kind)[k].payload_bytes);
      o.count(kind + f::kProtocolSuffix, (*by_kind)[k].protocol_bytes);
    }
  }
  for (const auto &[phase, ns] : s.phase_ns) o.seconds(f::kPhasePrefix + phase + f::kPhaseSuffix, ns);
  return o.done();
}

void write_json(const char *call, const std::string &path, const Snapshot &s) {
  const std::string text = to_json(s);
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE *f = std::fopen(tmp.c_str(), "w");
  if (!f) fatal_errno(call, "cannot write statistics to %s", path.c_str());
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int saved = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (!ok) {
    std::remove(tmp.c_str());
    errno = saved;
    fatal_errno(call, "cannot write statistics to %s", path.c_str());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    saved = errno;
    std::remove(tmp.c_str());
    errno = saved;
    fatal_errno(call, "cannot rename %s to %s", tmp.c_str(), path.c_str());
  }
}

std::string output_path(const std::string &spec, const std::string &job_dir, int rank) {
  if (spec.empty()) return "";
  const std::string file = std::to_string(rank) + fields::kFileSuffix;
  if (!job_dir.empty()) return job_dir + "/" + fields::kFilePrefix + file;
  if (spec.rfind("json:", 0) == 0) return spec.substr(5) + "." + file;
  return "";  // a table, and no mwrun to print it
}

void finish(const char *call) {
  std::string running;
  {
    std::lock_guard<std::mutex> hold(g_phase_mutex);
    for (const Phase &p : g_phases)
      if (p.since) {
        running = p.name;
        break;
      }
  }
  if (!running.empty())
    fatal(call, "phase \"%s\" is still running (end it with mw_phase_end before mw_finalize)",
          running.c_str());

  const std::string spec = settings::text(settings::Id::MW_STATS, call);
  const std::string dir = settings::text(settings::Id::MW_JOB_DIR, call);
  if (spec == "table" && dir.empty() && g_rank == 0)
    warn(call,
         "MW_STATS=table prints a table only under mwrun (mwrun --stats); under another "
         "launcher set MW_STATS=json:PATH and each rank writes PATH.<rank>.json");
  const std::string path = output_path(spec, dir, g_rank);
  if (!path.empty()) write_json(call, path, snapshot());
}

}  // namespace mw::stats
