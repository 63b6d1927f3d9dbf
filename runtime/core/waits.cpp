// Waits: see waits.hpp.
#include "core/waits.hpp"

#include "core/error.hpp"  // t_call_pc: where the waiting call was made

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>

namespace mw::waits {

namespace {

Record g_memory;               // without a job directory
std::string g_dir;             // the job directory, or ""
Record *g_rec = nullptr;       // this rank's record
std::atomic<HeldFn> g_held{nullptr};
constinit thread_local int t_depth = 0;  // nested waits (a fault inside a wait) keep the outer one
constinit thread_local bool t_detailed = false;

std::atomic_ref<uint64_t> seq(Record &r) { return std::atomic_ref<uint64_t>(r.seq); }

// The record is written by the thread that waits, with plain stores to its seqlock, not
// read-modify-writes: a crossing writes it twice, and the four locked instructions were a
// sixth of a two-rank crossing. Two threads of a rank waiting at once would tear what a
// reader sees (as they did with read-modify-writes), but every write ends on an even
// count, so the record stays readable.
uint64_t begin_write(Record &r) {
  const uint64_t even = seq(r).load(std::memory_order_relaxed) & ~uint64_t{1};
  seq(r).store(even + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  return even;
}
void end_write(Record &r, uint64_t even) { seq(r).store(even + 2, std::memory_order_release); }

const char *kind_name(uint32_t k) {
  switch (static_cast<Kind>(k)) {
    case Kind::kNone: return "running";
    case Kind::kLock: return "lock";
    case Kind::kBarrier: return "barrier";
    case Kind::kPage: return "page";
    case Kind::kUpdateAcks: return "update acknowledgements";
    case Kind::kFinalize: return "mw_finalize";
    case Kind::kSemaphore: return "semaphore";
    case Kind::kCondition: return "condition variable";
    case Kind::kFork: return "the next mw_fork";
    case Kind::kJoin: return "mw_join: the other ranks' ends of the fork";
  }
  return "?";
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}

std::string name_of(uint64_t addr, Symbolizer symbol, bool code) {
  std::string s = symbol ? symbol(addr, code) : "";
  return s.empty() ? hex(addr) : s + " (" + hex(addr) + ")";
}

// When a wait began or ended: the coarse clock (the last tick's time, a few ms old). The
// record shows it to a tenth of a second, and a wait begins at every barrier crossing,
// where the fine clock's read (about 30 ns on these paravirtualized guests, up to a
// system call on others) was a tenth of a two-rank crossing.
uint64_t coarse_realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool read(const Record &r, Record *out) {
  Record &m = const_cast<Record &>(r);
  for (int tries = 0; tries < 100; tries++) {
    uint64_t s0 = seq(m).load(std::memory_order_acquire);
    if (s0 & 1) continue;
    std::memcpy(static_cast<void *>(out), &r, sizeof r);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (seq(m).load(std::memory_order_relaxed) == s0)
      return out->magic == kMagic && out->version == kVersion;
  }
  return false;
}

void open(const std::string &job_dir, int rank, const char *host) {
  Record *r = &g_memory;
  g_dir = job_dir;
  if (!job_dir.empty()) {
    std::string path = job_dir + "/" + kFilePrefix + std::to_string(rank);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0 && ftruncate(fd, sizeof(Record)) == 0) {
      void *p = mmap(nullptr, sizeof(Record), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) r = static_cast<Record *>(p);
    }
    if (fd >= 0) ::close(fd);
  }
  r->rank = rank;
  r->pid = getpid();
  std::snprintf(r->host, sizeof r->host, "%s", host);
  r->peer = -1;
  r->since_ns = realtime_ns();
  std::atomic_ref<uint64_t>(r->alive_ns).store(realtime_ns(), std::memory_order_relaxed);
  r->version = kVersion;
  std::atomic_ref<uint32_t>(r->magic).store(kMagic, std::memory_order_release);
  g_rec = r;
}

void close() {
  if (g_rec && g_rec != &g_memory) munmap(g_rec, sizeof(Record));
  g_rec = nullptr;
}

void set_held_fn(HeldFn fn) { g_held.store(fn); }

Waiting::Waiting(Kind kind, uint64_t object, int peer, uint32_t mode) {
  if (t_depth++ > 0 || !g_rec) return;
  Record &r = *g_rec;
  const uint64_t even = begin_write(r);
  r.kind = static_cast<uint32_t>(kind);
  r.mode = mode;
  r.object = object;
  r.peer = peer;
  r.pc = t_call_pc;
  r.nheld = 0;
  r.since_ns = coarse_realtime_ns();
  r.waits++;
  if (kind == Kind::kBarrier) r.barriers++;
  end_write(r, even);
  t_detailed = false;
}

Waiting::~Waiting() {
  if (--t_depth > 0 || !g_rec) return;
  Record &r = *g_rec;
  const uint64_t even = begin_write(r);
  r.kind = static_cast<uint32_t>(Kind::kNone);
  r.object = 0;
  r.peer = -1;
  r.nheld = 0;
  r.since_ns = coarse_realtime_ns();
  end_write(r, even);
}

void beat() {
  if (g_rec) std::atomic_ref<uint64_t>(g_rec->alive_ns).store(realtime_ns(), std::memory_order_relaxed);
}

void crashed(uint64_t pc) {
  if (g_rec) std::atomic_ref<uint64_t>(g_rec->crash_pc).store(pc, std::memory_order_release);
}

void detail() {
  if (t_detailed || t_depth == 0 || !g_rec) return;
  t_detailed = true;
  HeldFn fn = g_held.load();
  if (!fn) return;
  uint64_t held[kMaxHeld];
  int n = fn(held, kMaxHeld);
  if (n < 0) {
    t_detailed = false;  // asked again at the next look
    return;
  }
  Record &r = *g_rec;
  const uint64_t even = begin_write(r);
  r.nheld = static_cast<uint32_t>(n);
  for (int i = 0; i < n && i < kMaxHeld; i++) r.held[i] = held[i];
  end_write(r, even);
}

std::string describe(const Record &r, Symbolizer symbol, uint64_t now_ns) {
  const auto k = static_cast<Kind>(r.kind);
  if (now_ns == 0) now_ns = realtime_ns();
  char since[48] = "";
  if (r.since_ns != 0 && now_ns > r.since_ns)
    std::snprintf(since, sizeof since, "%.1f s", static_cast<double>(now_ns - r.since_ns) / 1e9);
  if (k == Kind::kNone) {
    // Not waiting: the call site is that of its last wait, which has ended.
    std::string s = "nothing: running its program, outside Midway";
    if (r.pc != 0) s += ", since its call at " + name_of(r.pc, symbol, true) + " returned";
    if (*since) s += std::string(" ") + since + " ago";
    return s;
  }
  std::string s = kind_name(r.kind);
  if (k == Kind::kLock || k == Kind::kBarrier || k == Kind::kPage || k == Kind::kSemaphore ||
      k == Kind::kCondition)
    s += " " + name_of(r.object, symbol, false);
  if (k == Kind::kLock) s += r.mode == 2 ? " (non-exclusive)" : " (exclusive)";
  if (r.peer >= 0) {
    const char *who = k == Kind::kPage ? "home" : k == Kind::kFork ? "creator" : "manager";
    s += ", its " + std::string(who) + " rank " + std::to_string(r.peer);
  }
  if (r.pc != 0) s += ", called from " + name_of(r.pc, symbol, true);
  if (k == Kind::kBarrier && r.mode != 0) s += ", its crossing number " + std::to_string(r.mode);
  if (r.nheld > 0) {
    s += ", holding lock";
    s += r.nheld > 1 ? "s " : " ";
    for (uint32_t i = 0; i < r.nheld && i < static_cast<uint32_t>(kMaxHeld); i++)
      s += (i ? ", " : "") + name_of(r.held[i], symbol, false);
  }
  if (*since) s += std::string(", for ") + since;
  return s;
}

std::atomic<Symbolizer> g_quick{nullptr}, g_lines{nullptr};

std::string describe_rank(int rank) {
  if (g_dir.empty()) return "";
  int fd = ::open((g_dir + "/" + kFilePrefix + std::to_string(rank)).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text;
  void *p = mmap(nullptr, sizeof(Record), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return "";
  Record r;
  if (read(*static_cast<const Record *>(p), &r)) text = describe(r, g_lines.load());
  munmap(p, sizeof(Record));
  return text;
}

void set_symbolizers(Symbolizer quick, Symbolizer lines) {
  g_quick.store(quick);
  g_lines.store(lines);
}

std::string describe_mine(bool source_lines) {
  Record r;
  if (!g_rec || !read(*g_rec, &r)) return "unknown";
  return describe(r, source_lines ? g_lines.load() : g_quick.load());
}

namespace {
// The rank holding `lock` other than `self`, or -1.
int holder_of(const std::vector<Snapshot> &ranks, size_t self, uint64_t lock) {
  for (size_t j = 0; j < ranks.size(); j++)
    for (uint32_t i = 0; j != self && ranks[j].valid && i < ranks[j].rec.nheld && i < static_cast<uint32_t>(kMaxHeld); i++)
      if (ranks[j].rec.held[i] == lock) return static_cast<int>(j);
  return -1;
}

// Ranks that each wait in mw_acquire for a lock the next one holds, round a cycle: they
// wait forever, whatever the other ranks do. Said from the cycle's lowest rank; "" if
// there is none.
std::string lock_cycle(const std::vector<Snapshot> &ranks, std::vector<int> *involved) {
  const size_t n = ranks.size();
  auto next = [&](size_t i) -> int {
    const Record &r = ranks[i].rec;
    if (!ranks[i].valid || r.kind != static_cast<uint32_t>(Kind::kLock)) return -1;
    return holder_of(ranks, i, r.object);
  };
  for (size_t start = 0; start < n; start++) {
    size_t at = start;
    for (size_t steps = 0; steps < n && next(at) >= 0; steps++) at = static_cast<size_t>(next(at));
    if (next(at) < 0) continue;  // the walk ended: no cycle from here
    // After n steps the walk is in its cycle.
    size_t low = at;
    for (size_t i = static_cast<size_t>(next(at)); i != at; i = static_cast<size_t>(next(i))) low = std::min(low, i);
    std::string why;
    size_t i = low;
    do {
      if (involved) involved->push_back(static_cast<int>(i));
      why += "  rank " + std::to_string(i) + ": held by rank " + std::to_string(next(i)) + "\n";
      i = static_cast<size_t>(next(i));
    } while (i != low);
    return why;
  }
  return "";
}
}  // namespace

std::string describe_deadlock(const std::vector<Snapshot> &ranks, std::vector<int> *involved) {
  const size_t n = ranks.size();
  if (involved) involved->clear();
  uint64_t max_barriers = 0;
  for (const Snapshot &s : ranks) {
    // Some rank runs, and may yet do what the others wait for, but not end a lock cycle.
    if (!s.valid || s.rec.kind == static_cast<uint32_t>(Kind::kNone)) return lock_cycle(ranks, involved);
    max_barriers = std::max(max_barriers, s.rec.barriers);
  }
  if (involved)
    for (size_t i = 0; i < n; i++) involved->push_back(static_cast<int>(i));
  std::string why;
  for (size_t i = 0; i < n; i++) {
    const Record &r = ranks[i].rec;
    std::string stuck;
    switch (static_cast<Kind>(r.kind)) {
      case Kind::kLock: {
        int h = holder_of(ranks, i, r.object);
        if (h >= 0) stuck = "held by rank " + std::to_string(h);
        break;
      }
      case Kind::kBarrier: {
        if (max_barriers > r.barriers) break;  // a later barrier began: this one's release is on its way
        for (size_t j = 0; j < n && stuck.empty(); j++) {
          const Record &o = ranks[j].rec;
          if (o.kind != r.kind || o.object != r.object || o.barriers != r.barriers) {
            stuck = "rank " + std::to_string(j) + " will not arrive";
            // Unequal crossings are the usual cause: say which crossing the other is at.
            if (o.kind == r.kind && o.object != r.object && o.mode != 0)
              stuck += ": it waits at another barrier, its crossing number " + std::to_string(o.mode) + " of that one";
            else if (o.kind == r.kind && o.mode != r.mode && o.mode != 0 && r.mode != 0)
              stuck += ": it waits at its crossing number " + std::to_string(o.mode) + " of this barrier, this rank at its " +
                       std::to_string(r.mode);
          }
        }
        break;
      }
      case Kind::kFinalize:
        for (size_t j = 0; j < n && stuck.empty(); j++)
          if (ranks[j].rec.kind != r.kind) stuck = "rank " + std::to_string(j) + " waits elsewhere";
        break;
      // Every rank waits: none will post or signal (a post on its way lands within the
      // caller's 2 s, and a grant changes the waiter's record).
      case Kind::kSemaphore: stuck = "no rank is left to post it"; break;
      case Kind::kCondition: stuck = "no rank is left to signal it"; break;
      case Kind::kFork: stuck = "rank " + std::to_string(r.peer) + " will not fork"; break;
      case Kind::kJoin:
        // Stuck only while a worker waits inside the forked function: one that waits
        // for its next start has ended it (its word is on its way).
        for (size_t j = 0; j < n && stuck.empty(); j++)
          if (j != i && ranks[j].rec.kind != static_cast<uint32_t>(Kind::kFork))
            stuck = "rank " + std::to_string(j) + " will not end the forked function";
        break;
      default: break;  // a page or acknowledgements: served by the peer's service thread
    }
    if (stuck.empty()) return "";
    why += "  rank " + std::to_string(i) + ": " + stuck + "\n";
  }
  return why;
}

}  // namespace mw::waits
