// Statistics: counters by message kind, concurrent counting, waits, phases and their
// misuse, and the JSON a rank writes for mwrun. Each test starts from zeroed counters.
#include "core/stats.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "midway.h"

namespace {

namespace fs = std::filesystem;
using mw::stats::Kind;
using mw::stats::Wait;

class StatsTest : public ::testing::Test {
 protected:
  void SetUp() override { mw_stats_reset(); }
};

size_t at(Kind k) { return static_cast<size_t>(k); }
size_t at(Wait w) { return static_cast<size_t>(w); }

TEST_F(StatsTest, MessagesAreCountedByKindWithPayloadApartFromProtocol) {
  mw::stats::sent(Kind::Page, 4096, 24);
  mw::stats::sent(Kind::Page, 4096, 24);
  mw::stats::sent(Kind::Lock, 0, 16);
  mw::stats::received(Kind::Grant, 1000, 40);
  mw::stats::Snapshot s = mw::stats::snapshot();
  EXPECT_EQ(s.sent[at(Kind::Page)].msgs, 2u);
  EXPECT_EQ(s.sent[at(Kind::Page)].payload_bytes, 8192u);
  EXPECT_EQ(s.sent[at(Kind::Page)].protocol_bytes, 48u);
  EXPECT_EQ(s.sent[at(Kind::Lock)].msgs, 1u);
  EXPECT_EQ(s.sent[at(Kind::Grant)].msgs, 0u);
  EXPECT_EQ(s.received[at(Kind::Grant)].payload_bytes, 1000u);
  EXPECT_EQ(s.received[at(Kind::Page)].msgs, 0u);

  mw_stats_t c;
  mw_stats_get(&c);
  EXPECT_EQ(c.msgs_sent, 3u);
  EXPECT_EQ(c.payload_bytes_sent, 8192u);
  EXPECT_EQ(c.protocol_bytes_sent, 64u);
  EXPECT_EQ(c.msgs_received, 1u);
  EXPECT_EQ(c.payload_bytes_received, 1000u);
  EXPECT_EQ(c.protocol_bytes_received, 40u);
}

TEST_F(StatsTest, EventsAreCounted) {
  mw::stats::lock_acquire(false);
  mw::stats::lock_acquire(false);
  mw::stats::lock_acquire(true);
  mw::stats::barrier_crossed();
  mw::stats::page_fault();
  mw::stats::page_fault();
  mw::stats::count_rejected();
  mw_stats_t c;
  mw_stats_get(&c);
  EXPECT_EQ(c.lock_acquires_local, 2u);
  EXPECT_EQ(c.lock_acquires_remote, 1u);
  EXPECT_EQ(c.barrier_crossings, 1u);
  EXPECT_EQ(c.page_faults, 2u);
  EXPECT_EQ(c.rejected_messages, 1u);
  EXPECT_EQ(c.msgs_sent, 0u);
}

TEST_F(StatsTest, IncrementsFromTwoThreadsAreAllCounted) {
  // As the application thread and the service thread count side by side.
  constexpr int kEach = 200000;
  auto work = [](bool remote) {
    for (int i = 0; i < kEach; i++) {
      mw::stats::sent(Kind::Update, 3, 5);
      mw::stats::received(Kind::Update, 7, 11);
      mw::stats::lock_acquire(remote);
      mw::stats::add_wait(Wait::Fault, 2);
    }
  };
  std::thread service(work, true);
  work(false);
  service.join();
  mw::stats::Snapshot s = mw::stats::snapshot();
  const uint64_t n = 2 * kEach;
  EXPECT_EQ(s.sent[at(Kind::Update)].msgs, n);
  EXPECT_EQ(s.sent[at(Kind::Update)].payload_bytes, 3 * n);
  EXPECT_EQ(s.sent[at(Kind::Update)].protocol_bytes, 5 * n);
  EXPECT_EQ(s.received[at(Kind::Update)].msgs, n);
  EXPECT_EQ(s.received[at(Kind::Update)].payload_bytes, 7 * n);
  EXPECT_EQ(s.received[at(Kind::Update)].protocol_bytes, 11 * n);
  EXPECT_EQ(s.lock_acquires_local, uint64_t{kEach});
  EXPECT_EQ(s.lock_acquires_remote, uint64_t{kEach});
  EXPECT_EQ(s.wait_ns[at(Wait::Fault)], 2 * n);
}

TEST_F(StatsTest, ScopedWaitAddsTheTimeBlocked) {
  const auto nap = std::chrono::milliseconds(20);
  {
    mw::stats::ScopedWait waiting(Wait::Barrier);
    std::this_thread::sleep_for(nap);
  }
  mw::stats::Snapshot s = mw::stats::snapshot();
  EXPECT_GE(s.wait_ns[at(Wait::Barrier)], static_cast<uint64_t>(
                                              std::chrono::nanoseconds(nap).count()));
  EXPECT_EQ(s.wait_ns[at(Wait::Acquire)], 0u);
  EXPECT_EQ(s.wait_ns[at(Wait::Fault)], 0u);
  mw_stats_t c;
  mw_stats_get(&c);
  EXPECT_GE(c.barrier_wait_seconds, 0.020);
  EXPECT_EQ(c.acquire_wait_seconds, 0.0);
  EXPECT_GE(c.elapsed_seconds, c.barrier_wait_seconds);
}

TEST_F(StatsTest, ResetZeroesEveryFigure) {
  mw::stats::sent(Kind::Control, 1, 1);
  mw::stats::received(Kind::Barrier, 1, 1);
  mw::stats::lock_acquire(true);
  mw::stats::barrier_crossed();
  mw::stats::page_fault();
  mw::stats::count_rejected();
  mw::stats::add_wait(Wait::Acquire, 5);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const auto before_reset = std::chrono::steady_clock::now();
  mw_stats_reset();
  mw_stats_t c;
  mw_stats_get(&c);
  const std::chrono::duration<double> since_reset = std::chrono::steady_clock::now() - before_reset;
  for (uint64_t v : {c.msgs_sent, c.msgs_received, c.payload_bytes_sent, c.payload_bytes_received,
                     c.protocol_bytes_sent, c.protocol_bytes_received, c.lock_acquires_local,
                     c.lock_acquires_remote, c.barrier_crossings, c.page_faults,
                     c.rejected_messages})
    EXPECT_EQ(v, 0u);
  EXPECT_EQ(c.acquire_wait_seconds, 0.0);
  EXPECT_LE(c.elapsed_seconds, since_reset.count());  // counts from the reset
}

TEST_F(StatsTest, KindsAndWaitsHaveNames) {
  EXPECT_STREQ(mw::stats::name(Kind::Lock), "lock");
  EXPECT_STREQ(mw::stats::name(Kind::Grant), "grant");
  EXPECT_STREQ(mw::stats::name(Kind::Barrier), "barrier");
  EXPECT_STREQ(mw::stats::name(Kind::Page), "page");
  EXPECT_STREQ(mw::stats::name(Kind::Update), "update");
  EXPECT_STREQ(mw::stats::name(Kind::Control), "control");
  EXPECT_STREQ(mw::stats::name(Wait::Acquire), "acquire");
  EXPECT_STREQ(mw::stats::name(Wait::Barrier), "barrier");
  EXPECT_STREQ(mw::stats::name(Wait::Fault), "fault");
}

// ---- Phases ----

TEST_F(StatsTest, PhasesAddUpTheirRuns) {
  mw_phase_begin("unit_input");
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  mw_phase_end("unit_input");
  const double once = mw_phase_seconds("unit_input");
  EXPECT_GE(once, 0.010);
  mw_phase_begin("unit_input");
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(mw_phase_seconds("unit_input"), once + 0.010);  // running: counted up to now
  mw_phase_end("unit_input");
  EXPECT_GE(mw_phase_seconds("unit_input"), once + 0.010);
}

TEST_F(StatsTest, PhasesOfDifferentNamesMayNestAndAppearInOrder) {
  mw_phase_begin("unit_outer");
  mw_phase_begin("unit_inner");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  mw_phase_end("unit_inner");
  mw_phase_end("unit_outer");
  EXPECT_GE(mw_phase_seconds("unit_outer"), mw_phase_seconds("unit_inner"));
  mw::stats::Snapshot s = mw::stats::snapshot();
  std::vector<std::string> names;
  for (const auto &[name, ns] : s.phase_ns) names.push_back(name);
  auto outer = std::find(names.begin(), names.end(), "unit_outer");
  auto inner = std::find(names.begin(), names.end(), "unit_inner");
  ASSERT_NE(outer, names.end());
  ASSERT_NE(inner, names.end());
  EXPECT_LT(outer, inner);
}

TEST_F(StatsTest, ResetZeroesPhaseTimes) {
  mw_phase_begin("unit_reset");
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  mw_phase_end("unit_reset");
  mw_stats_reset();
  EXPECT_EQ(mw_phase_seconds("unit_reset"), 0.0);
}

using StatsDeathTest = StatsTest;

TEST_F(StatsDeathTest, EndingAPhaseNeverBegunNamesIt) {
  EXPECT_DEATH(mw_phase_end("unit_never"),
               "midway: mw_phase_end: phase \"unit_never\" was never begun "
               "\\(mw_phase_begin\\(\"unit_never\"\\) begins it\\) \\(rank 0\\)");
}

TEST_F(StatsDeathTest, EndingAPhaseTwiceNamesIt) {
  mw_phase_begin("unit_twice");
  mw_phase_end("unit_twice");
  EXPECT_DEATH(mw_phase_end("unit_twice"),
               "midway: mw_phase_end: phase \"unit_twice\" is not running: it has already "
               "ended \\(rank 0\\)");
}

TEST_F(StatsDeathTest, BeginningARunningPhaseNamesIt) {
  mw_phase_begin("unit_running");
  EXPECT_DEATH(mw_phase_begin("unit_running"),
               "midway: mw_phase_begin: phase \"unit_running\" is already running \\(end it "
               "with mw_phase_end before beginning it again\\) \\(rank 0\\)");
  mw_phase_end("unit_running");
}

TEST_F(StatsDeathTest, FinalizingWithAPhaseRunningNamesIt) {
  EXPECT_DEATH(
      {
        mw_phase_begin("unit_open");
        mw_finalize();
      },
      "midway: mw_finalize: phase \"unit_open\" is still running \\(end it with mw_phase_end "
      "before mw_finalize\\) \\(rank 0\\)");
}

TEST_F(StatsDeathTest, BadPhaseNamesAreRefused) {
  EXPECT_DEATH(mw_phase_begin(nullptr), "midway: mw_phase_begin: the phase name is NULL");
  EXPECT_DEATH(mw_phase_begin(""), "midway: mw_phase_begin: the phase name is empty");
  EXPECT_DEATH(mw_phase_begin("in.put"),
               "midway: mw_phase_begin: phase name \"in.put\" may hold only letters, digits, "
               "'_' and '-' \\(rank 0\\)");
  EXPECT_DEATH(mw_phase_end("a b"), "mw_phase_end: phase name \"a b\" may hold only");
  EXPECT_DEATH(mw_phase_begin(std::string(64, 'x').c_str()),
               "mw_phase_begin: phase name \"x{20}...\" is 64 characters long; the limit is 63");
  EXPECT_DEATH(mw_phase_seconds("unit_unknown"),
               "midway: mw_phase_seconds: phase \"unit_unknown\" was never begun");
}

TEST_F(StatsDeathTest, TooManyPhasesAreRefused) {
  EXPECT_DEATH(
      {
        for (size_t i = 0; i <= mw::stats::kMaxPhases; i++) {
          std::string name = "unit_many_" + std::to_string(i);
          mw_phase_begin(name.c_str());
          mw_phase_end(name.c_str());
        }
      },
      "mw_phase_begin: cannot begin phase \"unit_many_[0-9]+\": a program may name at most 32 "
      "phases");
}

TEST_F(StatsDeathTest, StatsGetNeedsSomewhereToWrite) {
  EXPECT_DEATH(mw_stats_get(nullptr),
               "midway: mw_stats_get: out is NULL: pass the address of an mw_stats_t");
}

// ---- The JSON a rank writes ----

// The fields of a flat JSON object of numbers, or a test failure if it is not one.
std::map<std::string, std::string> parse_flat(const std::string &text) {
  std::map<std::string, std::string> fields;
  std::regex field("\\s*\"([^\"\\\\]+)\":\\s*(-?[0-9]+(\\.[0-9]+)?)\\s*");
  EXPECT_TRUE(text.size() >= 2 && text.front() == '{' && text.substr(text.size() - 2) == "}\n")
      << text;
  std::string body = text.substr(1, text.size() - 3);
  std::stringstream items(body);
  for (std::string item; std::getline(items, item, ',');) {
    std::smatch m;
    if (!std::regex_match(item, m, field)) {
      ADD_FAILURE() << "not a numeric field: '" << item << "'";
      continue;
    }
    EXPECT_TRUE(fields.emplace(m[1], m[2]).second) << "field " << m[1] << " twice";
  }
  return fields;
}

mw::stats::Snapshot sample() {
  mw::stats::Snapshot s;
  s.sent[at(Kind::Grant)] = {12, 2140000, 480};
  s.sent[at(Kind::Lock)] = {12, 0, 192};
  s.received[at(Kind::Lock)] = {24, 0, 384};
  s.received[at(Kind::Page)] = {3, 12288, 72};
  s.rejected_messages = 1;
  s.lock_acquires_local = 7;
  s.lock_acquires_remote = 12;
  s.barrier_crossings = 4;
  s.page_faults = 3;
  s.polls_served = 5;
  s.wait_ns = {1500000000, 250, 12000000};
  s.elapsed_ns = 148400000001;
  s.phase_ns = {{"input", 12920000000}, {"compute", 132400000000}, {"output", 3050000000}};
  return s;
}

TEST(StatsJson, EveryFigureReadsBack) {
  std::map<std::string, std::string> f = parse_flat(mw::stats::to_json(sample()));
  const std::map<std::string, std::string> expected{
      {"elapsed_seconds", "148.400000001"},
      {"msgs_sent", "24"},
      {"msgs_received", "27"},
      {"payload_bytes_sent", "2140000"},
      {"payload_bytes_received", "12288"},
      {"protocol_bytes_sent", "672"},
      {"protocol_bytes_received", "456"},
      {"lock_acquires_local", "7"},
      {"lock_acquires_remote", "12"},
      {"barrier_crossings", "4"},
      {"page_faults", "3"},
      {"rejected_messages", "1"},
      {"polls_served", "5"},
      {"acquire_wait_seconds", "1.500000000"},
      {"barrier_wait_seconds", "0.000000250"},
      {"fault_wait_seconds", "0.012000000"},
      {"sent.grant.msgs", "12"},
      {"sent.grant.payload_bytes", "2140000"},
      {"sent.grant.protocol_bytes", "480"},
      {"sent.lock.msgs", "12"},
      {"sent.page.msgs", "0"},
      {"received.lock.protocol_bytes", "384"},
      {"received.page.payload_bytes", "12288"},
      {"received.control.msgs", "0"},
      {"phase.input.seconds", "12.920000000"},
      {"phase.compute.seconds", "132.400000000"},
      {"phase.output.seconds", "3.050000000"},
  };
  for (const auto &[name, value] : expected) {
    auto it = f.find(name);
    ASSERT_NE(it, f.end()) << name;
    EXPECT_EQ(it->second, value) << name;
  }
  // 16 totals and events, 6 kinds x 2 directions x 3 figures, 3 phases.
  EXPECT_EQ(f.size(), 16u + 36u + 3u);
}

TEST(StatsJson, IsWrittenWholeUnderItsName) {
  std::string tmpl = (fs::temp_directory_path() / "mw-stats-test.XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  const std::string path = (dir / "stats.0.json").string();
  mw::stats::write_json("mw_finalize", path, sample());
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  EXPECT_EQ(text.str(), mw::stats::to_json(sample()));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1)
      << "a temporary file was left behind";
  fs::remove_all(dir);
}

TEST(StatsJson, AnUnwritablePathIsAnError) {
  EXPECT_DEATH(mw::stats::write_json("mw_finalize", "/nonexistent-dir/x.0.json", sample()),
               "midway: mw_finalize: cannot write statistics to /nonexistent-dir/x.0.json: No "
               "such file or directory");
}

TEST(StatsJson, EachLauncherHasItsPlaceForTheFile) {
  using mw::stats::output_path;
  EXPECT_EQ(output_path("", "/tmp/mwrun.x", 3), "");                   // statistics off
  EXPECT_EQ(output_path("table", "/tmp/mwrun.x", 3), "/tmp/mwrun.x/stats.3.json");
  EXPECT_EQ(output_path("json:/out/s", "/tmp/mwrun.x", 3), "/tmp/mwrun.x/stats.3.json");
  EXPECT_EQ(output_path("json:/out/s", "", 3), "/out/s.3.json");       // mpirun -x MW_STATS
  EXPECT_EQ(output_path("table", "", 3), "");                          // nobody prints it
}

}  // namespace
