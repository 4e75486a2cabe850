// The per-phase compile profile (codegen/compile_profile.hpp): every compile records its
// trace, tile passes, GPU planning, lowering, LLVM middle end, code generation and (AMD)
// link, in pipeline order; they sum to at most the whole; the cache entry keeps them, a
// hit gives them back, and `tl-cache show` prints them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/cache.hpp"
#include "runtime/kernel_entry.hpp"
#include "tl/tl.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path g_cache = [] {
  fs::path d = fs::temp_directory_path() / fmt::format("tl-profile-{}-{}", getpid(), std::rand());
  fs::create_directories(d);
  setenv("TL_CACHE_DIR", d.c_str(), 1);
  unsetenv("TL_ALWAYS_COMPILE");
  return d;
}();

auto& softmax_kernel() {
  static auto k = tl::kernel("profile_probe", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, int n) {
    auto c = tl::arange(0, 256);
    auto m = c < n;
    auto row = tl::program_id(0);
    auto v = tl::load(x + row * n + c, m, -1e30f);
    auto e = tl::exp(v - tl::max(v, 0));
    tl::store(y + row * n + c, e / tl::sum(e, 0), m);
  });
  return k;
}

std::vector<std::string> expected_phases(const std::string& target) {
  if (target == "cpu") return {"trace", "tile passes", "lowering", "llvm middle end", "backend codegen"};
  std::vector<std::string> p = {"trace", "tile passes", "gpu planning", "lowering", "llvm middle end", "backend codegen"};
  if (target.rfind("gfx", 0) == 0) p.push_back("link");
  return p;
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  pclose(p);
  return out;
}

}  // namespace

TEST(CompileProfile, EveryPhaseIsRecordedAndTheySumToAtMostTheWhole) {
  auto* p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  for (const std::string target : {"cpu", "gfx942", "sm_90"}) {
    SCOPED_TRACE(target);
    const tl::jit_stats before = tl::stats();
    auto meta = nlohmann::json::parse(softmax_kernel().compile(target, {}, p, p, 200));
    ASSERT_EQ(tl::stats().compiles, before.compiles + 1) << "expected a fresh compile";
    const auto& phases = meta.at("phases_ms");
    std::vector<std::string> names;
    double sum = 0, trace = 0;
    for (const auto& ph : phases) {
      names.push_back(ph.at(0).get<std::string>());
      const double ms = ph.at(1).get<double>();
      EXPECT_GE(ms, 0) << names.back();
      (names.back() == "trace" ? trace : sum) += ms;
    }
    EXPECT_EQ(names, expected_phases(target)) << phases.dump();
    EXPECT_GT(trace, 0);
    // compile_ms is the compile after the trace, measured around all of compile().
    EXPECT_LE(sum, meta.at("compile_ms").get<double>() + 1e-6) << phases.dump();
    // The phases that do the work are most of it: nothing large left unmeasured.
    EXPECT_GE(sum, 0.5 * meta.at("compile_ms").get<double>()) << phases.dump();

    // The entry gives them back (a later cache hit, `tl-cache show`).
    auto entry = tl::cache::DiskCache::global().load(meta.at("key").get<std::string>());
    ASSERT_TRUE(entry);
    std::string why;
    auto code = tl::runtime::read_kernel_entry(*entry, &why);
    ASSERT_TRUE(code) << why;
    ASSERT_EQ(code->phase_ms.size(), names.size());
    for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(code->phase_ms[i].first, names[i]);

    const std::string shown = run(fmt::format("TL_CACHE_DIR={} {}/tools/tl-cache show {} 2>&1", g_cache.string(),
                                              TL_TEST_BINARY_DIR, meta.at("key").get<std::string>()));
    EXPECT_NE(shown.find("phases     trace "), std::string::npos) << shown;
    EXPECT_NE(shown.find(", backend codegen "), std::string::npos) << shown;
  }
}

TEST(CompileProfile, AMalformedProfileInAnEntryIsRefused) {
  auto* p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  auto meta = nlohmann::json::parse(softmax_kernel().compile("cpu", {}, p, p, 100));
  auto entry = tl::cache::DiskCache::global().load(meta.at("key").get<std::string>());
  ASSERT_TRUE(entry);
  for (const char* bad : {R"("fast")", R"([["trace", -1]])", R"([["trace"]])", R"([[1, 2]])"}) {
    tl::cache::Entry e = *entry;
    e.meta["phases_ms"] = nlohmann::json::parse(bad);
    std::string why;
    EXPECT_FALSE(tl::runtime::read_kernel_entry(e, &why)) << bad;
    EXPECT_NE(why.find("phases_ms"), std::string::npos) << why;
  }
}
