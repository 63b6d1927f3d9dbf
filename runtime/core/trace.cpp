#include "core/trace.hpp"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/settings.hpp"

namespace mw::trace {
namespace {

struct Event {
  uint64_t begin_ns, end_ns, object, count;
  int32_t peer, tid;
  Kind kind;
};

// 2^18 events (12 MiB) hold a Splash-3 run many times over; a lock-heavy run of
// millions of acquires keeps its first 2^18.
constexpr size_t kCapacity = size_t{1} << 18;

// Never destroyed, as all module state: mw_finalize may run from an exit handler.
struct Buffer {
  std::vector<Event> events;  // sized at start: record() only writes a claimed slot
  std::atomic<size_t> next{0};
  std::mutex names_mu;
  std::vector<std::pair<int32_t, std::string>> names;  // thread id, name
  int rank = 0;
  std::string path;
};
Buffer &g = *new Buffer;

int32_t this_tid() {
  static thread_local int32_t tid = static_cast<int32_t>(syscall(SYS_gettid));
  return tid;
}

}  // namespace

std::atomic<bool> g_on{false};

// A Span begun before finish() may end after it: its event is dropped, not written into
// the buffer finish() is reading. (By then every rank has left mw_finalize's barrier, and
// no request is in flight.)
void record(Kind kind, uint64_t begin_ns, uint64_t end_ns, int peer, uint64_t object, uint64_t count) {
  if (!on()) return;
  const size_t i = g.next.fetch_add(1, std::memory_order_relaxed);
  if (i < g.events.size()) g.events[i] = Event{begin_ns, end_ns, object, count, peer, this_tid(), kind};
}

void name_thread(const char *name) {
  std::lock_guard<std::mutex> lk(g.names_mu);
  g.names.emplace_back(this_tid(), name);
}

void start(int rank, const char *call) {
  const std::string spec = settings::text(settings::Id::MW_TRACE, call);
  if (spec.empty()) return;
  const std::string dir = settings::text(settings::Id::MW_JOB_DIR, call);
  g.rank = rank;
  g.path = (dir.empty() ? spec : dir + "/trace") + "." + std::to_string(rank) + ".json";
  g.events.resize(kCapacity);
  {
    std::lock_guard<std::mutex> lk(g.names_mu);
    g.names.emplace_back(this_tid(), "application");
  }
  g_on.store(true, std::memory_order_release);
}

void finish(const char *call) {
  if (!g_on.exchange(false)) return;
  using nlohmann::json;
  const size_t claimed = g.next.load(), kept = std::min(claimed, g.events.size());
  json events = json::array();
  const std::string process = "rank " + std::to_string(g.rank);
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", g.rank}, {"args", {{"name", process}}}});
  events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", g.rank}, {"args", {{"sort_index", g.rank}}}});
  {
    std::lock_guard<std::mutex> lk(g.names_mu);
    for (const auto &[tid, name] : g.names)
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", g.rank}, {"tid", tid}, {"args", {{"name", name}}}});
  }
  char hex[24];
  for (size_t i = 0; i < kept; ++i) {
    const Event &e = g.events[i];
    json args = json::object();
    if (e.peer >= 0) args["peer"] = e.peer;
    if (e.object) {
      std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(e.object));
      args[e.kind == Kind::kAcquire || e.kind == Kind::kGrant ? "lock" : "page"] = hex;
    }
    if (e.kind == Kind::kFault || e.kind == Kind::kServe || e.kind == Kind::kFlush) args["pages"] = e.count;
    if (e.kind == Kind::kUpdate || e.kind == Kind::kGrant) args["bytes"] = e.count;
    events.push_back({{"ph", "X"},
                      {"name", name(e.kind)},
                      {"pid", g.rank},
                      {"tid", e.tid},
                      {"ts", static_cast<double>(e.begin_ns) / 1e3},
                      {"dur", static_cast<double>(e.end_ns - e.begin_ns) / 1e3},
                      {"args", std::move(args)}});
  }
  // The steady clock's zero is each host's own (its boot): so that a merge can place the
  // ranks of several hosts on one timeline, the host and where its system clock stood.
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  timespec real;
  clock_gettime(CLOCK_REALTIME, &real);
  const uint64_t steady = now_ns();
  const int64_t realtime_offset_ns =
      static_cast<int64_t>(real.tv_sec) * 1000000000 + real.tv_nsec - static_cast<int64_t>(steady);
  const json doc = {{"traceEvents", std::move(events)},
                    {"displayTimeUnit", "ns"},
                    {"otherData",
                     {{"rank", g.rank},
                      {"events", kept},
                      {"dropped", claimed - kept},
                      {"host", host},
                      {"realtime_offset_ns", realtime_offset_ns}}}};
  const std::string text = doc.dump();
  FILE *f = std::fopen(g.path.c_str(), "w");
  if (!f) fatal_errno(call, "cannot write the trace to %s", g.path.c_str());
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_errno = errno;
  if (std::fclose(f) != 0 || !written) {
    if (!written) errno = write_errno;  // else fclose's
    fatal_errno(call, "cannot write the trace to %s", g.path.c_str());
  }
}

}  // namespace mw::trace
