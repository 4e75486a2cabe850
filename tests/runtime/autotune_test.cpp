// tl::autotune: configurations reflected by name, refused by their compile reports before
// anything runs (on the CPU and on a cross-compiled gfx942), timed on the CPU device,
// decisions reused within the process and by the next one, eight processes tuning the
// same key at once, a new compiler or device tuning again, buffers reset between runs.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/cache.hpp"
#include "support/reference.hpp"
#include "tl/autotune.hpp"

namespace fs = std::filesystem;

namespace {

struct Inner {
  BOOST_HANA_DEFINE_STRUCT(Inner, (bool, flag), (double, ratio));
};
enum class Order { row = 0, column = 1 };
struct Everything {
  BOOST_HANA_DEFINE_STRUCT(Everything, (int, block), (int64_t, big), (Order, order), (std::string, label),
                           (Inner, inner), (int, num_warps), (int, num_stages));
};

struct ScaleCfg {
  BOOST_HANA_DEFINE_STRUCT(ScaleCfg, (int, block), (int, num_warps));
};

// y = 2x + 1 over n elements, BLOCK a program.
auto& scale_kernel() {
  static auto k = tl::kernel("tune_scale", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 n, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto m = i < n;
    tl::store(y + i, tl::load(x + i, m, 0.0f) * 2.0f + 1.0f, m);
  });
  return k;
}

// y += x over n elements: a kernel whose output accumulates over runs.
auto& accumulate_kernel() {
  static auto k = tl::kernel("tune_accumulate", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::i32 n, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto m = i < n;
    tl::store(y + i, tl::load(y + i, m, 0.0f) + tl::load(x + i, m, 0.0f), m);
  });
  return k;
}

// A tuner name no other test (or earlier run sharing the cache directory) has used.
std::string fresh_name(const char* base) {
  static std::atomic<int> n{0};
  return fmt::format("{}_{}_{}_{}", base, ::getpid(), std::rand(), n++);
}

// Every run of the launch function that is not a compile, per configuration.
struct RunCounts {
  std::map<int, int> runs;  // by block
  std::mutex mu;
  void add(int block) {
    std::lock_guard l(mu);
    ++runs[block];
  }
};

template <class Counts> auto scale_tuner(std::string name, std::vector<ScaleCfg> configs, Counts* counts,
                                        tl::autotune_options<ScaleCfg> o = {}) {
  o.args = {"x", "y", "n"};
  o.key = {"n"};
  o.repeats = 3;
  return tl::autotune(std::move(name), std::move(configs), std::move(o),
                      [counts](tl::tuning& t, const ScaleCfg& c, auto& x, auto& y, int n) {
                        if (counts && !t.compiling()) counts->add(c.block);
                        t.launch(scale_kernel(), tl::grid(tl::cdiv(n, c.block)), tl::options_from(c), x, y, n,
                                 c.block);
                      });
}

std::vector<float> scale_reference(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * 2.0f + 1.0f;
  return y;
}

// ---------------------------------------------------------------------------------------
// Separate processes: this binary re-executed in helper mode (before gtest's main).
//   TL_AUTOTUNE_TEST_HELPER=tune: tunes tune_scale for n (TL_AUTOTUNE_TEST_N) under the name
//   TL_AUTOTUNE_TEST_NAME, checks y, writes "timed_runs disk_decisions tunings best_block ok".

int helper_main() {
  const char* name = std::getenv("TL_AUTOTUNE_TEST_NAME");
  const char* out = std::getenv("TL_AUTOTUNE_TEST_OUT");
  if (!name || !out) return 100;
  tl::detail::set_tune_identity_for_testing(std::getenv("TL_AUTOTUNE_TEST_COMPILER") ?: "",
                                            std::getenv("TL_AUTOTUNE_TEST_DEVICE") ?: "");
  if (const char* start = std::getenv("TL_AUTOTUNE_TEST_START_MS"))
    while (std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
               .count() < std::atoll(start))
      std::this_thread::yield();
  const int n = std::atoi(std::getenv("TL_AUTOTUNE_TEST_N"));
  auto dev = tl::cpu_device();
  std::vector<float> hx(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) hx[size_t(i)] = float(i % 97) * 0.25f - 3.0f;
  auto X = dev.alloc<tl::f32>(size_t(n)), Y = dev.alloc<tl::f32>(size_t(n));
  X.upload(hx);
  auto tuned = scale_tuner<RunCounts>(name, {{64, 1}, {256, 2}, {1024, 4}}, nullptr);
  tuned.on(dev)(X, Y, n);
  bool ok = Y.download() == scale_reference(hx);
  const ScaleCfg& best = tuned.best_on(dev, X, Y, n);
  auto s = tl::tuning_stats();
  std::ofstream(out) << s.timed_runs << ' ' << s.disk_decisions << ' ' << s.tunings << ' ' << best.block << ' '
                     << (ok ? 1 : 0) << '\n';
  return ok ? 0 : 1;
}

[[maybe_unused]] const int g_helper = [] {
  if (std::getenv("TL_AUTOTUNE_TEST_HELPER")) {
    int rc = helper_main();
    std::fflush(nullptr);
    std::_Exit(rc);
  }
  return 0;
}();

fs::path fresh_dir(const char* name) {
  fs::path d = fs::temp_directory_path() / fmt::format("tl-tune-{}-{}-{}", name, ::getpid(), std::rand());
  fs::create_directories(d);
  fs::permissions(d, fs::perms::owner_all, fs::perm_options::replace);
  return d;
}

struct Child {
  std::string compiler, device;
  int64_t start_ms = 0;
};

pid_t spawn(const fs::path& dir, const std::string& name, int n, const fs::path& out, const Child& c = {}) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("TL_AUTOTUNE_TEST_HELPER", "tune", 1);
    ::setenv("TL_CACHE_DIR", dir.c_str(), 1);
    ::setenv("TL_AUTOTUNE_TEST_NAME", name.c_str(), 1);
    ::setenv("TL_AUTOTUNE_TEST_OUT", out.c_str(), 1);
    ::setenv("TL_AUTOTUNE_TEST_N", std::to_string(n).c_str(), 1);
    ::setenv("TL_AUTOTUNE_TEST_COMPILER", c.compiler.c_str(), 1);
    ::setenv("TL_AUTOTUNE_TEST_DEVICE", c.device.c_str(), 1);
    ::setenv("TL_AUTOTUNE_TEST_START_MS", std::to_string(c.start_ms).c_str(), 1);
    ::unsetenv("TL_PRINT_AUTOTUNING");
    ::execl("/proc/self/exe", "autotune_test_helper", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int st = 0;
  if (::waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

struct ChildResult {
  uint64_t timed = 0, disk = 0, tunings = 0;
  int best = 0, ok = 0;
};
ChildResult read_result(const fs::path& p) {
  ChildResult r;
  std::ifstream(p) >> r.timed >> r.disk >> r.tunings >> r.best >> r.ok;
  return r;
}

std::vector<tl::cache::EntryInfo> decisions(const fs::path& dir) {
  tl::cache::DiskCache cache(dir, uint64_t(1) << 30);
  auto all = cache.list();
  std::erase_if(all, [](const auto& i) { return i.meta.value("kind", "") != "autotune"; });
  return all;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Reflection.

TEST(AutotuneReflect, FieldsByNameWithoutPerStructCode) {
  Everything e{256, int64_t(1) << 40, Order::column, "wide", {true, 0.5}, 8, 3};
  EXPECT_EQ(tl::to_string(e), "{block=256, big=1099511627776, order=1, label=wide, inner.flag=true, inner.ratio=0.5, "
                              "num_warps=8, num_stages=3}");
  auto j = nlohmann::json::parse(tl::to_json(e));
  EXPECT_EQ(j["block"], 256);
  EXPECT_EQ(j["big"], int64_t(1) << 40);
  EXPECT_EQ(j["label"], "wide");
  EXPECT_EQ(j["inner.flag"], true);
  EXPECT_DOUBLE_EQ(j["inner.ratio"].get<double>(), 0.5);
  // The hash sees every field: change any one and it changes; equal values hash equal.
  Everything same = e;
  EXPECT_EQ(tl::hash_of(e), tl::hash_of(same));
  Everything other = e;
  other.inner.ratio = 0.25;
  EXPECT_NE(tl::hash_of(e), tl::hash_of(other));
  other = e;
  other.label = "narrow";
  EXPECT_NE(tl::hash_of(e), tl::hash_of(other));
  // ... and the field names: the same values under other names are another configuration.
  EXPECT_NE(tl::hash_of(ScaleCfg{4, 8}), tl::hash_of(Inner{true, 8.0}));
  tl::launch_options o = tl::options_from(e, {.waves_per_eu = 2});
  EXPECT_EQ(o.num_warps, 8);
  EXPECT_EQ(o.num_stages, 3);
  EXPECT_EQ(o.waves_per_eu, 2);  // from the base: the struct has no such field
}

// ---------------------------------------------------------------------------------------
// Tuning on the CPU.

TEST(Autotune, TunesOnceThenLooksTheChoiceUp) {
  auto dev = tltest::test_device();
  const int n = 5000;
  auto hx = tltest::random_floats(n);
  auto X = tltest::upload<tl::ty::f32>(hx);
  auto Y = dev.alloc<tl::f32>(n);
  RunCounts counts;
  auto tuned = scale_tuner(fresh_name("once"), {{64, 1}, {256, 2}, {1024, 4}}, &counts);
  auto before = tl::tuning_stats();
  tltest::poison(Y);
  tuned.on(dev)(X, Y, n);
  EXPECT_EQ(Y.download(), scale_reference(hx));
  auto mid = tl::tuning_stats();
  EXPECT_EQ(mid.tunings - before.tunings, 1u);
  EXPECT_EQ(mid.compiled - before.compiled, 3u);
  // For each of the 3 survivors: 1 warm-up, then 3 repeats of 5 launches (nothing to
  // reset between them); the launch after the tuning is not a timed one.
  EXPECT_EQ(mid.timed_runs - before.timed_runs, 48u);
  for (int b : {64, 256, 1024}) EXPECT_EQ(counts.runs[b], 16 + (b == tuned.best_on(dev, X, Y, n).block ? 1 : 0)) << b;

  // The same key again: no compile, no tracing, no timing; only the chosen launch.
  auto jit = tl::stats();
  tltest::poison(Y);
  tuned.on(dev)(X, Y, n);
  EXPECT_EQ(Y.download(), scale_reference(hx));
  auto after = tl::tuning_stats();
  EXPECT_EQ(after.timed_runs, mid.timed_runs);
  EXPECT_EQ(after.tunings, mid.tunings);
  EXPECT_EQ(tl::stats().traces, jit.traces);
  EXPECT_EQ(tl::stats().compiles, jit.compiles);

  // A new key tunes again.
  tuned.on(dev)(X, Y, n - 1);
  EXPECT_EQ(tl::tuning_stats().tunings, mid.tunings + 1);

  auto table = tuned.table_on(dev, X, Y, n);
  ASSERT_EQ(table.rows.size(), 3u);
  ASSERT_GE(table.best, 0);
  for (const auto& r : table.rows) {
    EXPECT_TRUE(r.dropped.empty()) << r.config << ": " << r.dropped;
    EXPECT_GT(r.ms, 0);
    EXPECT_LE(table.rows[size_t(table.best)].ms, r.ms);
  }
  EXPECT_EQ(table.key, "n=5000");
  EXPECT_NE(table.str().find("<- best"), std::string::npos) << table.str();
}

// A rule on the report refuses a configuration before it ever runs; a predicate refuses
// one before it is even compiled.
TEST(Autotune, RefusedConfigurationsAreNeverRun) {
  // (the rule reads the CPU's stack frame report, and the predicate checks the CPU's arch:
  // the GPU's own rules are AttentionSample.NvidiaPruningDropsCandidatesThatPtxasSpills')
  if (tltest::on_gpu()) GTEST_SKIP() << "a CPU report rule (stack_bytes)";
  auto dev = tltest::test_device();
  const int n = 4096;
  auto hx = tltest::random_floats(n);
  auto X = tltest::upload<tl::ty::f32>(hx);
  auto Y = dev.alloc<tl::f32>(n);
  RunCounts counts;
  tl::autotune_options<ScaleCfg> o;
  // The CPU reports each kernel's stack frame (its tiles); pretend the budget is 4 KiB:
  // the 4096-wide block's frame (16 KiB of f32 at least) is over it.
  o.report_rules = {{"stack <= 4 KiB", [](const tl::compile_report& r) { return r.at("stack_bytes") <= 4096; }}};
  o.predicates = {{"num_warps <= 4", [](const ScaleCfg& c, const std::string& arch) {
                     EXPECT_EQ(arch, "cpu");
                     return c.num_warps <= 4;
                   }}};
  auto tuned = scale_tuner(fresh_name("refused"), {{64, 1}, {4096, 4}, {128, 8}, {256, 2}}, &counts, o);
  auto before = tl::tuning_stats();
  tuned.on(dev)(X, Y, n);
  EXPECT_EQ(Y.download(), scale_reference(hx));
  auto after = tl::tuning_stats();
  EXPECT_EQ(after.compiled - before.compiled, 3u) << "the predicate's refusal is not compiled";
  EXPECT_EQ(counts.runs.count(4096), 0u) << "a configuration over the rule ran";
  EXPECT_EQ(counts.runs.count(128), 0u) << "a configuration refused by the predicate ran";
  auto t = tuned.table_on(dev, X, Y, n);
  EXPECT_NE(t.rows[1].dropped.find("rule: stack <= 4 KiB"), std::string::npos) << t.str();
  EXPECT_EQ(t.rows[2].dropped, "rule: num_warps <= 4");
  EXPECT_TRUE(t.rows[0].dropped.empty() && t.rows[3].dropped.empty()) << t.str();
  EXPECT_TRUE(t.best == 0 || t.best == 3);
}

TEST(Autotune, AConfigurationThatFailsToCompileIsReportedAndSkipped) {
  auto dev = tltest::test_device();
  const int n = 1000;
  auto hx = tltest::random_floats(n);
  auto X = tltest::upload<tl::ty::f32>(hx);
  auto Y = dev.alloc<tl::f32>(n);
  RunCounts counts;
  // 96 is not a power of two: tl::arange refuses it while tracing.
  auto tuned = scale_tuner(fresh_name("fails"), {{96, 1}, {128, 1}}, &counts);
  tuned.on(dev)(X, Y, n);
  EXPECT_EQ(Y.download(), scale_reference(hx));
  EXPECT_EQ(counts.runs.count(96), 0u);
  auto t = tuned.table_on(dev, X, Y, n);
  EXPECT_NE(t.rows[0].dropped.find("failed to compile"), std::string::npos) << t.str();
  EXPECT_NE(t.rows[0].dropped.find("power of two"), std::string::npos) << t.str();
  EXPECT_EQ(t.best, 1);
}

TEST(Autotune, AllFailingIsAClearError) {
  auto dev = tltest::test_device();
  auto X = dev.alloc<tl::f32>(100), Y = dev.alloc<tl::f32>(100);
  auto tuned = scale_tuner<RunCounts>(fresh_name("allfail"), {{96, 1}, {48, 2}}, nullptr);
  try {
    tuned.on(dev)(X, Y, 100);
    FAIL() << "no error";
  } catch (const tl::launch_error& e) {
    std::string w = e.what();
    EXPECT_NE(w.find("no configuration can run (2 given"), std::string::npos) << w;
    EXPECT_NE(w.find("#0 {block=96, num_warps=1}: failed to compile"), std::string::npos) << w;
    EXPECT_NE(w.find("#1 {block=48, num_warps=2}: failed to compile"), std::string::npos) << w;
  }
  // Nothing was stored: fixing the list is enough, no stale decision to clear.
  EXPECT_THROW(tuned.on(dev)(X, Y, 100), tl::launch_error);
}

// Kernels that accumulate: tuning runs each configuration several times, but the call's
// output is as if it ran once.
TEST(Autotune, ResetsAccumulatedOutputsBetweenRuns) {
  auto dev = tltest::test_device();
  const int n = 3000;
  auto hx = tltest::random_floats(n), hy = tltest::random_floats(n);
  auto X = tltest::upload<tl::ty::f32>(hx);
  for (bool zero : {true, false}) {
    SCOPED_TRACE(zero ? "reset_to_zero" : "restore");
    auto Y = tltest::upload<tl::ty::f32>(hy);
    tl::autotune_options<ScaleCfg> o{.args = {"x", "y", "n"}, .key = {"n"}};
    (zero ? o.reset_to_zero : o.restore) = {"y"};
    auto tuned = tl::autotune(fresh_name("accumulate"), std::vector<ScaleCfg>{{64, 1}, {512, 4}}, o,
                              [](tl::tuning& t, const ScaleCfg& c, auto& x, auto& y, int n) {
                                t.launch(accumulate_kernel(), tl::grid(tl::cdiv(n, c.block)), tl::options_from(c), x,
                                         y, n, c.block);
                              });
    tuned.on(dev)(X, Y, n);
    std::vector<double> want(n);
    for (int i = 0; i < n; ++i) want[size_t(i)] = double((zero ? 0.0f : hy[size_t(i)]) + hx[size_t(i)]);
    EXPECT_TRUE(tltest::near(Y.download(), want, 0, 0));
  }
}

// ---------------------------------------------------------------------------------------
// Pruning for a cross-compiled AMD target: the spilling configuration is refused by its
// gfx942 report, the one over a predicate is never compiled, nothing runs.

struct RowCfg {
  BOOST_HANA_DEFINE_STRUCT(RowCfg, (int, block), (int, num_warps), (int, waves_per_eu));
};

TEST(AutotunePrune, Gfx942RefusesTheSpillingConfigurationByItsReport) {
  // y = x / sum(x) over a row: the whole row stays live across the reduction. A 4096-wide
  // row on one wave is 64 floats a lane; asking for 8 waves per SIMD caps a wave at 64
  // VGPRs, so it spills (a huge per-thread tile at few warps, cheap to compile).
  static auto k = tl::kernel("tune_rownorm", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, int BLOCK) {
    auto c = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    auto v = tl::load(x + c);
    tl::store(y + c, v / tl::sum(v, 0));
  });
  RunCounts counts;
  tl::autotune_options<RowCfg> o{.args = {"x", "y"}};
  o.predicates = {{"tiles <= 8192 and warps <= 4 on AMD", [](const RowCfg& c, const std::string& arch) {
                     return arch.rfind("gfx", 0) != 0 || (c.block <= 8192 && c.num_warps <= 4);
                   }}};
  o.rules.min_occupancy = 4;
  auto tuned = tl::autotune(fresh_name("rownorm"), std::vector<RowCfg>{{1024, 4, 0}, {4096, 1, 8}, {65536, 16, 0}, {8192, 1, 0}}, o,
                            [&counts](tl::tuning& t, const RowCfg& c, auto x, auto y) {
                              if (!t.compiling()) counts.add(c.block);
                              t.launch(k, tl::grid(4), tl::options_from(c), x, y, c.block);
                            });
  std::vector<float> x(65536 * 4), y(65536 * 4);
  auto before = tl::tuning_stats();
  tl::tune_table t = tuned.prune("gfx942", x.data(), y.data());
  EXPECT_EQ(tl::tuning_stats().compiled - before.compiled, 3u) << "the predicate's refusal was compiled";
  EXPECT_TRUE(counts.runs.empty());
  ASSERT_EQ(t.rows.size(), 4u);
  for (size_t i : {0u, 1u, 3u}) ASSERT_EQ(t.rows[i].reports.size(), 1u) << t.str();
  EXPECT_TRUE(t.rows[0].dropped.empty()) << t.str();
  EXPECT_EQ(t.rows[0].reports[0].at("spill_vgpr"), 0);
  EXPECT_GT(t.rows[1].reports[0].at("spill_vgpr"), 0) << t.str();
  EXPECT_NE(t.rows[1].dropped.find("spills"), std::string::npos) << t.str();
  EXPECT_EQ(t.rows[2].dropped, "rule: tiles <= 8192 and warps <= 4 on AMD");
  // 128 floats a lane fit without spilling, but leave room for fewer than 4 waves a SIMD.
  EXPECT_EQ(t.rows[3].reports[0].at("spill_vgpr"), 0) << t.str();
  EXPECT_LT(t.rows[3].reports[0].at("occupancy"), 4) << t.str();
  EXPECT_NE(t.rows[3].dropped.find("(floor 4)"), std::string::npos) << t.str();
  EXPECT_NE(t.str().find("dropped: spills"), std::string::npos) << t.str();
}

// ---------------------------------------------------------------------------------------
// Across processes.

TEST(AutotuneProcesses, TheNextProcessReusesTheDecisionWithoutTiming) {
  auto dir = fresh_dir("reuse");
  const std::string name = fresh_name("reuse");
  ASSERT_EQ(wait_exit(spawn(dir, name, 6000, dir / "r1")), 0);
  ASSERT_EQ(wait_exit(spawn(dir, name, 6000, dir / "r2")), 0);
  auto r1 = read_result(dir / "r1"), r2 = read_result(dir / "r2");
  EXPECT_EQ(r1.tunings, 1u);
  EXPECT_GT(r1.timed, 0u);
  EXPECT_EQ(r1.disk, 0u);
  EXPECT_EQ(r2.tunings, 0u) << "the second process tuned again";
  EXPECT_EQ(r2.timed, 0u) << "the second process timed configurations";
  EXPECT_EQ(r2.disk, 1u);
  EXPECT_EQ(r2.best, r1.best);
  EXPECT_EQ(r1.ok + r2.ok, 2);
  EXPECT_EQ(decisions(dir).size(), 1u);
}

// A stored decision with a malformed field (here of the wrong type, or missing) is
// refused as it is read: the next process tunes again instead of failing with a JSON type
// error, the cache counts the record as rejected, and a good decision replaces it.
TEST(AutotuneProcesses, AMalformedDecisionIsTunedAgain) {
  const std::pair<const char*, std::function<void(nlohmann::json&)>> edits[] = {
      {"best_string", [](nlohmann::json& m) { m["best"] = "0"; }},
      {"kind_number", [](nlohmann::json& m) { m["kind"] = 7; }},
      {"table_object", [](nlohmann::json& m) { m["table"] = nlohmann::json::object(); }},
      {"row_ms_string", [](nlohmann::json& m) { m["table"][0]["ms"] = "fast"; }},
      {"best_missing", [](nlohmann::json& m) { m.erase("best"); }},
  };
  for (const auto& [what, edit] : edits) {
    SCOPED_TRACE(what);
    auto dir = fresh_dir("malformed");
    const std::string name = fresh_name("malformed");
    ASSERT_EQ(wait_exit(spawn(dir, name, 6000, dir / "r1")), 0);
    auto found = decisions(dir);
    ASSERT_EQ(found.size(), 1u);
    const std::string key = found[0].key;
    const fs::path path = dir / key.substr(0, 2) / (key + ".tlc");
    std::vector<uint8_t> bytes;
    {
      std::ifstream f(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(f), {});
    }
    auto e = tl::cache::parse_entry(bytes, key);
    ASSERT_TRUE(e);
    edit(e->meta);
    bytes = tl::cache::serialize_entry(*e);
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(bytes.data()),
                                                                   std::streamsize(bytes.size()));
    const uint64_t rejected_before = tl::cache::DiskCache(dir, uint64_t(1) << 30).stats().rejected;
    ASSERT_EQ(wait_exit(spawn(dir, name, 6000, dir / "r2")), 0);
    auto r2 = read_result(dir / "r2");
    EXPECT_EQ(r2.tunings, 1u) << "a malformed decision must be tuned again";
    EXPECT_EQ(r2.disk, 0u);
    EXPECT_EQ(r2.ok, 1);
    EXPECT_EQ(tl::cache::DiskCache(dir, uint64_t(1) << 30).stats().rejected - rejected_before, 1u);
    ASSERT_EQ(wait_exit(spawn(dir, name, 6000, dir / "r3")), 0);
    EXPECT_EQ(read_result(dir / "r3").disk, 1u) << "the decision stored again is used";
  }
}

TEST(AutotuneProcesses, EightProcessesAtOnceAgreeAndLeaveOneRecord) {
  auto dir = fresh_dir("eight");
  const std::string name = fresh_name("eight");
  const int64_t start = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count() + 1500;
  std::vector<pid_t> kids;
  for (int p = 0; p < 8; ++p) kids.push_back(spawn(dir, name, 7000, dir / fmt::format("r{}", p), {"", "", start}));
  uint64_t tunings = 0;
  std::set<int> bests;
  for (int p = 0; p < 8; ++p) {
    EXPECT_EQ(wait_exit(kids[size_t(p)]), 0) << "process " << p;
    auto r = read_result(dir / fmt::format("r{}", p));
    EXPECT_EQ(r.ok, 1) << "process " << p;
    EXPECT_EQ(r.tunings + r.disk, 1u) << "process " << p << " neither tuned nor took the stored decision";
    tunings += r.tunings;
    bests.insert(r.best);
  }
  EXPECT_EQ(tunings, 1u) << "the processes took turns: one tuned, the others waited and took its decision";
  EXPECT_EQ(bests.size(), 1u) << "the processes launched different configurations";
  auto d = decisions(dir);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].meta["best_config"]["block"].get<int>(), *bests.begin());
  EXPECT_EQ(d[0].meta["configs"], 3);
}

TEST(AutotuneProcesses, ANewCompilerOrDeviceTunesAgain) {
  // (runs the build tree's tools/tl-cache, which the GPU bundle does not carry)
  if (tltest::on_gpu()) GTEST_SKIP() << "needs the build tree's tools/tl-cache";
  auto dir = fresh_dir("identity");
  const std::string name = fresh_name("identity");
  ASSERT_EQ(wait_exit(spawn(dir, name, 3000, dir / "a")), 0);
  ASSERT_EQ(wait_exit(spawn(dir, name, 3000, dir / "b", {"tl 99.0-next", ""})), 0);
  ASSERT_EQ(wait_exit(spawn(dir, name, 3000, dir / "c", {"", "another device"})), 0);
  ASSERT_EQ(wait_exit(spawn(dir, name, 3000, dir / "d")), 0);
  EXPECT_EQ(read_result(dir / "a").tunings, 1u);
  EXPECT_EQ(read_result(dir / "b").tunings, 1u) << "a new compiler version reused an old decision";
  EXPECT_EQ(read_result(dir / "c").tunings, 1u) << "a new device reused another device's decision";
  auto d = read_result(dir / "d");
  EXPECT_EQ(d.tunings, 0u);
  EXPECT_EQ(d.timed, 0u);
  EXPECT_EQ(decisions(dir).size(), 3u);

  // tl-cache tune lists them, with their tables in --json.
  std::string cmd = fmt::format("{}/tools/tl-cache --dir {} tune --json", TL_TEST_BINARY_DIR, dir.string());
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[4096];
  while (size_t got = std::fread(buf, 1, sizeof buf, p)) text.append(buf, got);
  ASSERT_EQ(::pclose(p), 0) << text;
  auto j = nlohmann::json::parse(text);
  ASSERT_EQ(j.size(), 3u);
  std::set<std::string> compilers;
  for (auto& e : j) {
    EXPECT_EQ(e["kernel"], name);
    EXPECT_EQ(e["tune_key"], "n=3000");
    EXPECT_EQ(e["table"].size(), 3u);
    compilers.insert(e["compiler"].get<std::string>());
  }
  EXPECT_EQ(compilers.size(), 2u);
  EXPECT_TRUE(compilers.count("tl 99.0-next"));
}
