// The binding advisor's merge (mwrun --advise). Each rank recorded, per cache line, the
// intersection of the locksets it held at its accesses, the barrier phases in which it
// stored and loaded the line, and a few access sites (runtime/check/advisor.cpp). Here
// the ranks' records are cut into segments where any of them changes, each segment gets
// one piece of advice, and neighbouring segments with the same advice merge:
//
//   used by one rank alone, or only loaded       no binding needed
//   one lock L held at every access, every rank  mw_bind(&L, ...)
//   every load of another rank's store has one   mw_barrier_bind(&B, ...)
//     barrier B crossed between the two, and no
//     two ranks store between the same crossings
//   otherwise                                    no consistent lock: two access sites
//
// Entry consistency's rule of one writer per barrier phase is about bytes; the record is
// about lines, so two ranks that store different bytes of one line in one phase are
// reported as a conflict (the advice says so).
#include "advise.hpp"

#include <algorithm>
#include <cstdarg>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/advisor.hpp"

namespace mw::advise {
namespace {

using Json = nlohmann::ordered_json;

struct Phases {
  uint32_t first, last;
};

// One run of lines of one rank's record.
struct Run {
  uint64_t begin, end;
  std::string where;  // the runtime's name for `begin` (heap memory by allocation site)
  std::vector<uint64_t> locks, first_locks, emptied_locks;
  std::vector<Phases> stores, loads;
  std::string first, emptied, first_store, first_load;  // site texts ("" if none)
};

struct Object {
  std::string name;
  uint64_t base, size, element_size;
  std::vector<uint64_t> dims;
  std::string from;  // a block of the shared heap: the mw_malloc call that made it
  uint64_t row() const { return dims.empty() ? size : size / dims[0]; }
};

struct Record {
  int nprocs = 0;
  std::vector<std::vector<Run>> runs;  // by rank, sorted
  std::vector<uint64_t> crossings;     // the barrier of crossing k at [k - 1]
  std::vector<uint32_t> run_start;     // [k - 1]: the first crossing of the run of crossings of
                                       // one barrier that crossing k ends
  std::map<uint64_t, std::string> names;
  std::vector<Object> objects;  // sorted by base, one per variable
};

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("mwrun: --advise: ", stderr);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

std::vector<Phases> phases(const Json &j) {
  std::vector<Phases> out;
  for (const Json &p : j) out.push_back({p[0].get<uint32_t>(), p[1].get<uint32_t>()});
  return out;
}

std::optional<Record> read(const std::string &dir, int nprocs) {
  Record rec;
  rec.nprocs = nprocs;
  rec.runs.resize(nprocs);
  std::map<uint64_t, Object> objects;
  for (int r = 0; r < nprocs; r++) {
    const std::string file = kFilePrefix + std::to_string(r) + kFileSuffix;
    std::ifstream in(dir + "/" + file);
    if (!in) {
      say("rank %d left no record (%s): it did not reach mw_finalize, or the program is not a "
          "check build (mwcc -fmidway-check); no advice",
          r, file.c_str());
      return std::nullopt;
    }
    Json j;
    try {
      j = Json::parse(in);
      const Json &sets = j.at("locksets"), &sites = j.at("sites");
      auto set = [&](const Json &id) { return sets.at(std::to_string(id.get<uint32_t>())).get<std::vector<uint64_t>>(); };
      auto site = [&](const Json &s) { return sites.contains(s.get<std::string>()) ? sites[s.get<std::string>()].get<std::string>() : ""; };
      for (const auto &[addr, name] : j.at("names").items()) rec.names[std::stoull(addr)] = name.get<std::string>();
      std::vector<uint64_t> crossings;
      for (const Json &c : j.at("crossings"))
        crossings.insert(crossings.end(), c[1].get<size_t>(), c[0].get<uint64_t>());
      if (crossings.size() > rec.crossings.size()) rec.crossings = crossings;
      for (const Json &o : j.at("objects")) {
        Object ob{o.at("name"), o.at("base"), o.at("size"), o.at("element_size"), o.at("dims"), ""};
        objects.emplace(ob.base, ob);
      }
      for (const Json &b : j.at("blocks")) {
        Object ob{"", b.at("base"), b.at("size"), 0, {}, b.at("from")};
        ob.name = "mw_malloc(" + std::to_string(ob.size) + ") at " + ob.from;
        objects.emplace(ob.base, ob);
      }
      for (const Json &x : j.at("runs"))
        rec.runs[r].push_back({x.at("begin"), x.at("end"), x.at("where"), set(x.at("locks")),
                               set(x.at("first_locks")), set(x.at("emptied_locks")), phases(x.at("stores")),
                               phases(x.at("loads")), site(x.at("first")), site(x.at("emptied")),
                               site(x.at("first_store")), site(x.at("first_load"))});
    } catch (const Json::exception &e) {
      say("rank %d's record %s is not what the runtime writes (%s); no advice", r, file.c_str(), e.what());
      return std::nullopt;
    }
  }
  for (auto &[base, o] : objects) rec.objects.push_back(o);
  for (size_t k = 0; k < rec.crossings.size(); k++)
    rec.run_start.push_back(k > 0 && rec.crossings[k] == rec.crossings[k - 1] ? rec.run_start[k - 1]
                                                                                : static_cast<uint32_t>(k + 1));
  return rec;
}

// ---- One segment's advice ----

enum class Kind { kPrivate, kReadOnly, kUnshared, kLock, kBarrier, kConflict };

struct Advice {
  Kind kind = Kind::kConflict;
  uint64_t begin = 0, end = 0;
  uint64_t object = 0;           // the lock or barrier
  std::vector<uint64_t> others;  // other locks held at every access
  std::set<int> writers, readers;
  std::vector<std::string> why;  // a conflict: what breaks each rule, with access sites

  bool neutral() const { return kind == Kind::kPrivate || kind == Kind::kReadOnly || kind == Kind::kUnshared; }
  bool same(const Advice &o) const {
    if (kind != o.kind || object != o.object) return false;
    if (kind == Kind::kLock) return true;
    return writers == o.writers && readers == o.readers && why == o.why;
  }
};

struct Seen {
  int rank;
  const Run *run;
};

std::string name_of(const Record &rec, uint64_t a) {
  auto it = rec.names.find(a);
  if (it != rec.names.end()) return it->second;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(a));
  return buf;
}

std::string lockset(const Record &rec, const std::vector<uint64_t> &locks) {
  if (locks.empty()) return "no lock";
  std::string out;
  for (uint64_t l : locks) out += (out.empty() ? "" : ", ") + name_of(rec, l);
  return out;
}

std::string ranks(const std::set<int> &rs) {
  std::string out;
  for (int r : rs) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return (rs.size() == 1 ? "rank " : "ranks ") + out;
}

// The two accesses that leave no lock common to all (Eraser's report).
std::string lock_conflict(const Record &rec, const std::vector<Seen> &seen) {
  for (const Seen &s : seen)
    if (!s.run->emptied.empty())
      return "holding " + lockset(rec, s.run->first_locks) + " at " + s.run->first + " (rank " +
             std::to_string(s.rank) + "), then " + lockset(rec, s.run->emptied_locks) + " at " +
             s.run->emptied + " (rank " + std::to_string(s.rank) + ")";
  for (const Seen &a : seen)
    for (const Seen &b : seen) {
      if (a.rank >= b.rank) continue;
      std::vector<uint64_t> both;
      std::set_intersection(a.run->locks.begin(), a.run->locks.end(), b.run->locks.begin(),
                            b.run->locks.end(), std::back_inserter(both));
      if (both.empty())
        return "holding " + lockset(rec, a.run->first_locks) + " at " + a.run->first + " (rank " +
               std::to_string(a.rank) + "), " + lockset(rec, b.run->first_locks) + " at " +
               b.run->first + " (rank " + std::to_string(b.rank) + ")";
    }
  // Every two ranks share a lock, but no lock is common to all three or more.
  std::string out;
  for (const Seen &s : seen)
    out += std::string(out.empty() ? "" : ", ") + "holding " + lockset(rec, s.run->locks) + " at " + s.run->first +
           " (rank " + std::to_string(s.rank) + ")";
  return out;
}

// Phase k: the time between barrier crossings k and k + 1 (of any barrier).
std::string phase(uint32_t k) {
  if (k == 0) return "before the first barrier crossing";
  return "between barrier crossings " + std::to_string(k) + " and " + std::to_string(k + 1);
}

Advice classify(const Record &rec, const std::vector<Seen> &seen) {
  Advice a;
  std::set<int> accessed;
  for (const Seen &s : seen) {
    accessed.insert(s.rank);
    if (!s.run->stores.empty()) a.writers.insert(s.rank);
  }
  for (const Seen &s : seen)
    if (!s.run->loads.empty() && !a.writers.count(s.rank)) a.readers.insert(s.rank);
  if (accessed.size() == 1) {
    a.kind = Kind::kPrivate;
    return a;
  }
  if (a.writers.empty()) {
    a.kind = Kind::kReadOnly;
    return a;
  }

  // Eraser: the locks held at every access of every rank.
  std::vector<uint64_t> common = seen[0].run->locks;
  for (const Seen &s : seen) {
    std::vector<uint64_t> both;
    std::set_intersection(common.begin(), common.end(), s.run->locks.begin(), s.run->locks.end(),
                          std::back_inserter(both));
    common = std::move(both);
  }
  if (!common.empty()) {
    a.kind = Kind::kLock;
    a.object = common[0];
    a.others.assign(common.begin() + 1, common.end());
    return a;
  }

  // Barriers: one writer per phase, and for every load of another rank's store one
  // barrier crossed between them.
  auto barrier = [&](uint32_t k) { return k >= 1 && k <= rec.crossings.size() ? rec.crossings[k - 1] : 0; };
  auto run_start = [&](uint32_t k) { return k >= 1 && k <= rec.crossings.size() ? rec.run_start[k - 1] : k; };
  std::string barrier_why;
  for (const Seen &x : seen)
    for (const Seen &y : seen) {
      if (x.rank >= y.rank || !barrier_why.empty()) continue;
      for (const Phases &p : x.run->stores)
        for (const Phases &q : y.run->stores)
          if (p.first <= q.last && q.first <= p.last && barrier_why.empty())
            barrier_why = "ranks " + std::to_string(x.rank) + " and " + std::to_string(y.rank) +
                          " both store to it " + phase(std::max(p.first, q.first)) + ", at " +
                          x.run->first_store + " and " + y.run->first_store;
    }
  std::optional<std::set<uint64_t>> cand;  // nullopt: nothing constrains the barrier
  auto meet = [&](const std::set<uint64_t> &c, const Seen &w, const Seen &r) {
    std::set<uint64_t> both;
    if (!cand) both = c;
    else std::set_intersection(cand->begin(), cand->end(), c.begin(), c.end(), std::inserter(both, both.end()));
    if (both.empty() && barrier_why.empty())
      barrier_why = "no one barrier is crossed between its stores by rank " + std::to_string(w.rank) + " (at " +
                    w.run->first_store + ") and every load of them by rank " + std::to_string(r.rank) +
                    " (at " + r.run->first_load + ")";
    cand = std::move(both);
  };
  for (const Seen &r : seen)
    for (const Phases &ld : r.run->loads)
      for (const Seen &w : seen) {
        if (w.rank == r.rank) continue;
        uint32_t latest = 0;  // the last phase before ld.first in which w stored, + 1
        for (const Phases &st : w.run->stores) {
          if (st.first < ld.first) latest = std::max(latest, std::min(st.last, ld.first - 1) + 1);
          // Loads in phase k of a store in phase k - 1: the crossing k carries it.
          const uint32_t lo = std::max(ld.first, st.first + 1), hi = std::min(ld.last, st.last + 1);
          if (lo <= hi) meet(run_start(hi) <= lo ? std::set<uint64_t>{barrier(hi)} : std::set<uint64_t>{}, w, r);
        }
        // The load at ld.first of a store older than the phase before: any barrier
        // crossed since carries it.
        if (latest > 0 && latest < ld.first) {
          std::set<uint64_t> any;
          for (uint32_t k = ld.first; k >= latest; k = run_start(k) - 1) any.insert(barrier(k));
          meet(any, w, r);
        }
      }
  if (barrier_why.empty()) {
    if (!cand) {
      a.kind = Kind::kUnshared;
      return a;
    }
    // The barrier crossed least often: it ships the data least often.
    auto crossings = [&](uint64_t b) { return std::count(rec.crossings.begin(), rec.crossings.end(), b); };
    a.kind = Kind::kBarrier;
    a.object = *std::min_element(cand->begin(), cand->end(), [&](uint64_t x, uint64_t y) {
      return std::make_pair(crossings(x), x) < std::make_pair(crossings(y), y);
    });
    return a;
  }
  a.why.push_back("no lock is held at every access: " + lock_conflict(rec, seen));
  a.why.push_back("no barrier: " + barrier_why);
  return a;
}

// ---- Ranges as the source writes them ----

const Object *object_of(const Record &rec, uint64_t a) {
  auto it = std::upper_bound(rec.objects.begin(), rec.objects.end(), a,
                             [](uint64_t x, const Object &o) { return x < o.base; });
  if (it == rec.objects.begin()) return nullptr;
  --it;
  return a < it->base + it->size ? &*it : nullptr;
}

// `&A[3]`, `&A[3][17]`, `(char *)&A + 12`; and its length `4 * sizeof A[0]` or bytes.
std::pair<std::string, std::string> spell(const Object &o, uint64_t begin, uint64_t end) {
  const uint64_t off = begin - o.base, len = end - begin;
  const std::string plus = off ? " + " + std::to_string(off) : "";
  if (!o.from.empty()) return {"(char *)P" + plus, std::to_string(len)};  // P: the block
  if (o.dims.empty()) {
    if (off == 0 && len == o.size) return {"&" + o.name, "sizeof " + o.name};
    return {"(char *)&" + o.name + plus, std::to_string(len)};
  }
  // The coarsest dimension whose elements the range is made of.
  uint64_t elem = o.size;
  std::string sub;
  std::vector<uint64_t> idx;
  for (size_t d = 0; d < o.dims.size(); d++) {
    elem /= o.dims[d];
    sub += "[0]";
    if (elem && off % elem == 0 && len % elem == 0) {
      std::string at = "&" + o.name;
      uint64_t rest = off, e = o.size;
      for (size_t k = 0; k <= d; k++) {
        e /= o.dims[k];
        at += "[" + std::to_string(rest / e) + "]";
        rest %= e;
      }
      const uint64_t n = len / elem;
      return {at, (n == 1 ? "" : std::to_string(n) + " * ") + "sizeof " + o.name + sub};
    }
  }
  return {"(char *)&" + o.name + plus, std::to_string(len)};
}

std::string describe(const Record &rec, const Advice &a, const std::string &where) {
  const Object *o = object_of(rec, a.begin);
  std::string at, len;
  if (o) std::tie(at, len) = spell(*o, a.begin, a.end);
  else at = where, len = std::to_string(a.end - a.begin);
  switch (a.kind) {
    case Kind::kLock: return "mw_bind(&" + name_of(rec, a.object) + ", " + at + ", " + len + ");";
    case Kind::kBarrier: return "mw_barrier_bind(&" + name_of(rec, a.object) + ", " + at + ", " + len + ");";
    default: return at + ", " + len;
  }
}

std::string comment(const Record &rec, const Advice &a) {
  switch (a.kind) {
    case Kind::kPrivate: return "used by " + ranks(a.writers.empty() ? a.readers : a.writers) + " alone";
    case Kind::kReadOnly: return "only loaded, never stored";
    case Kind::kUnshared: return "no rank loads what another stored";
    case Kind::kLock: {
      std::string s = "held at every access";
      if (!a.others.empty()) s += " (so was " + lockset(rec, a.others) + ")";
      return s;
    }
    case Kind::kBarrier: {
      return "stored by " + ranks(a.writers) + ", loaded by " + ranks(a.readers) + " after it";
    }
    case Kind::kConflict: return "no consistent lock";
  }
  return "";
}

}  // namespace

bool report(const std::string &job_dir, int nprocs, const std::optional<std::string> &json_path) {
  std::optional<Record> got = read(job_dir, nprocs);
  if (!got) return false;
  const Record &rec = *got;

  // Segments: cut wherever any rank's record or any variable begins or ends.
  std::vector<uint64_t> cuts;
  for (const auto &runs : rec.runs)
    for (const Run &r : runs) cuts.push_back(r.begin), cuts.push_back(r.end);
  for (const Object &o : rec.objects) cuts.push_back(o.base), cuts.push_back(o.base + o.size);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  std::vector<size_t> at(nprocs, 0);
  std::vector<Advice> segs;
  std::vector<std::string> wheres;
  for (size_t i = 0; i + 1 < cuts.size(); i++) {
    const uint64_t x = cuts[i], y = cuts[i + 1];
    std::vector<Seen> seen;
    std::string where;
    for (int r = 0; r < nprocs; r++) {
      const auto &runs = rec.runs[r];
      while (at[r] < runs.size() && runs[at[r]].end <= x) at[r]++;
      if (at[r] < runs.size() && runs[at[r]].begin <= x) {
        seen.push_back({r, &runs[at[r]]});
        if (where.empty() && runs[at[r]].begin == x) where = runs[at[r]].where;
      }
    }
    if (seen.empty()) continue;
    // The rest of a line a variable ends in (or begins in) is padding, not data.
    if (!object_of(rec, x)) {
      const uint64_t lo = x / kLine * kLine, hi = (y + kLine - 1) / kLine * kLine;
      auto it = std::lower_bound(rec.objects.begin(), rec.objects.end(), lo,
                                 [](const Object &o, uint64_t a) { return o.base + o.size <= a; });
      if (it != rec.objects.end() && it->base < hi) continue;
    }
    Advice a = classify(rec, seen);
    if (a.kind == Kind::kPrivate) a.writers = {seen[0].rank}, a.readers.clear();
    a.begin = x, a.end = y;
    segs.push_back(std::move(a));
    wheres.push_back(where.empty() ? seen[0].run->where : where);
  }

  // Merge: neighbours with the same advice, across untouched bytes and data that needs
  // no binding shorter than a row of the variable (the columns a program never uses).
  std::vector<Advice> out;
  std::vector<std::string> out_where;
  for (size_t i = 0; i < segs.size(); i++) {
    Advice &a = segs[i];
    const Object *o = object_of(rec, a.begin);
    const uint64_t reach = o ? o->row() : 4096;
    bool merged = false;
    for (size_t j = out.size(); j-- > 0;) {
      Advice &b = out[j];
      if (object_of(rec, b.begin) != o || a.begin - b.end >= reach) break;
      if (b.same(a) && (!a.neutral() || j + 1 == out.size())) {
        b.end = a.end;
        out.resize(j + 1);
        out_where.resize(j + 1);
        merged = true;
        break;
      }
      if (!b.neutral()) break;
    }
    if (!merged) out.push_back(a), out_where.push_back(wheres[i]);
  }
  // A binding of whole rows: extended over the untouched or unbound rest of its rows
  // (then so is what needs no binding, over the untouched rest).
  for (size_t pass = 0; pass < 2; pass++)
  for (size_t i = 0; i < out.size(); i++) {
    Advice &a = out[i];
    const Object *o = object_of(rec, a.begin);
    if (a.neutral() != (pass == 1) || a.begin >= a.end || !o || o->dims.empty()) continue;
    const uint64_t row = o->row();
    const uint64_t lo = o->base + (a.begin - o->base) / row * row;
    const uint64_t hi = std::min(o->base + o->size, o->base + (a.end - o->base + row - 1) / row * row);
    bool ok = true;
    for (size_t j = 0; j < out.size(); j++)
      if (j != i && (!out[j].neutral() || pass == 1) && out[j].begin < out[j].end && out[j].begin < hi &&
          lo < out[j].end)
        ok = false;
    if (!ok) continue;
    a.begin = lo, a.end = hi;
    for (Advice &n : out)
      if (&n != &a && n.neutral()) {
        if (n.begin >= lo && n.end <= hi) n.end = n.begin;  // absorbed
        else if (n.begin < hi && n.end > hi) n.begin = hi;
        else if (n.begin < lo && n.end > lo) n.end = lo;
      }
  }

  Json doc = {{"nprocs", nprocs}, {"advice", Json::array()}};
  std::string bindings, notes, conflicts;
  for (size_t i = 0; i < out.size(); i++) {
    const Advice &a = out[i];
    if (a.begin >= a.end) continue;
    const Object *o = object_of(rec, a.begin);
    const std::string text = describe(rec, a, out_where[i]),
                      why = (o && !o->from.empty() ? "P = " + o->name + "; " : "") + comment(rec, a);
    Json j = {{"advice", a.kind == Kind::kLock      ? "mw_bind"
                         : a.kind == Kind::kBarrier ? "mw_barrier_bind"
                         : a.kind == Kind::kConflict ? "no consistent lock"
                                                     : "no binding needed"},
              {"variable", o ? o->name : out_where[i]},
              {"begin", a.begin},
              {"bytes", a.end - a.begin}};
    if (a.kind == Kind::kLock) j["lock"] = name_of(rec, a.object);
    if (a.kind == Kind::kBarrier) j["barrier"] = name_of(rec, a.object);
    j[a.neutral() || a.kind == Kind::kConflict ? "range" : "call"] = text;
    j["why"] = why;
    if (!a.why.empty()) j["conflict"] = a.why;
    doc["advice"].push_back(j);
    if (a.kind == Kind::kLock || a.kind == Kind::kBarrier) {
      bindings += "  " + text + "  // " + why + "\n";
    } else if (a.kind == Kind::kConflict) {
      conflicts += "  " + text + ":" + (o && !o->from.empty() ? "  // P = " + o->name : "") + "\n";
      for (const std::string &w : a.why) conflicts += "      " + w + "\n";
    } else {
      notes += "  " + text + "  // " + why + "\n";
    }
  }
  std::fprintf(stderr, "mwrun: binding advice (--advise) from %d rank%s, %zu barrier crossing%s:\n", nprocs,
               nprocs == 1 ? "" : "s", rec.crossings.size(), rec.crossings.size() == 1 ? "" : "s");
  if (!bindings.empty()) std::fprintf(stderr, "bind:\n%s", bindings.c_str());
  if (!conflicts.empty()) std::fprintf(stderr, "no consistent lock:\n%s", conflicts.c_str());
  if (!notes.empty()) std::fprintf(stderr, "no binding needed:\n%s", notes.c_str());
  if (bindings.empty() && conflicts.empty() && notes.empty())
    std::fprintf(stderr, "  no shared data was accessed\n");
  if (json_path) {
    std::ofstream f(*json_path);
    f << doc.dump(2) << '\n';
    if (!f.flush()) {
      say("cannot write %s: %s", json_path->c_str(), std::strerror(errno));
      return false;
    }
  }
  return true;
}

}  // namespace mw::advise
