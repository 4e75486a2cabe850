// The tl-cache inspection tool, run as a separate binary on a cache populated through the
// library: list, show, ir, isa, stats, prune, clear, --json output and exit codes.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/cache.hpp"

#ifndef TL_TEST_BINARY_DIR
#error "TL_TEST_BINARY_DIR must name the build root (tests/CMakeLists.txt sets it)"
#endif

namespace fs = std::filesystem;
using nlohmann::json;
using tl::cache::DiskCache;
using tl::cache::Entry;

namespace {

const std::string kTool = TL_TEST_BINARY_DIR "/tools/tl-cache";

struct Result {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

// Keys with a shared prefix ("aaa") so that prefix ambiguity can be tested.
const std::string kAdd = "aaa1" + std::string(27, '0') + "1";
const std::string kMatmul = "aaa2" + std::string(27, '0') + "2";
const std::string kSoftmax = "c0ffee" + std::string(25, '0') + "3";

class ToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::access(kTool.c_str(), X_OK), 0) << kTool << " is missing: build the tl-cache target";
    std::string tmpl = (fs::temp_directory_path() / "tl-cache-tool-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    tmp_ = tmpl;
    ::chmod(tmp_.c_str(), 0700);
    dir_ = tmp_ / "cache";
    DiskCache cache(dir_, uint64_t(1) << 30);

    Entry add;
    add.key = kAdd;
    add.meta = {{"kernel", "add"}, {"source", {{"file", "add.cpp"}, {"line", 7}}}, {"target", "gfx942"},
                {"signature", "(f32*, f32*, f32*, i32)"}, {"constants", {{"BLOCK", 256}}},
                {"report", {{"vgpr", 32}, {"sgpr", 20}, {"spill_vgpr", 2}, {"spill_sgpr", 1}, {"occupancy", 8}}},
                {"compile_ms", 41.5}};
    add.artifacts["tile_ir"] = bytes("func @add(%a: ptr<f32>) {\n  return\n}\n");
    add.artifacts["llvm_ir"] = bytes("define amdgpu_kernel void @add() {\n  ret void\n}\n");
    add.artifacts["code"] = std::vector<uint8_t>(5000, 0x7f);
    add.artifacts["isa"] = bytes("add:\n  s_endpgm\n");
    ASSERT_TRUE(cache.store(add));
    pause();

    Entry matmul;
    matmul.key = kMatmul;
    matmul.meta = {{"kernel", "matmul"}, {"target", "gfx1100"}, {"report", {{"vgpr", 128}}}};
    matmul.artifacts["tile_ir"] = bytes("func @matmul() {}\n");
    matmul.artifacts["code"] = std::vector<uint8_t>(9000, 1);
    ASSERT_TRUE(cache.store(matmul));
    pause();

    Entry softmax;
    softmax.key = kSoftmax;
    softmax.meta = {{"kernel", "softmax"}, {"target", "x86_64"}};
    softmax.artifacts["code"] = std::vector<uint8_t>(3000, 2);
    ASSERT_TRUE(cache.store(softmax));
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
  // File times use a coarse clock; keep events apart so that "most recent" is defined.
  static void pause() { std::this_thread::sleep_for(std::chrono::milliseconds(25)); }

  // Runs the tool with `args` (the cache directory via --dir unless `with_dir` is false).
  Result tool(std::vector<std::string> args, bool with_dir = true) {
    if (with_dir) args.insert(args.begin(), {"--dir", dir_.string()});
    const fs::path out = tmp_ / "stdout", err = tmp_ / "stderr";
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(o, 1);
      ::dup2(e, 2);
      std::vector<char*> argv{const_cast<char*>(kTool.c_str())};
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(kTool.c_str(), argv.data());
      std::_Exit(127);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    Result r;
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  static std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> v;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  }

  fs::path tmp_, dir_;
};

// An NVIDIA entry (the driver's report, runtime/cuda_device.cpp): REGS is its registers per
// thread, SPILLS its spill-store bytes / 4 (else its local memory / 4, Triton's n_spills).
TEST_F(ToolTest, ListShowsNvidiaRegistersAndSpills) {
  {
    DiskCache cache(dir_, uint64_t(1) << 30);
    Entry e;
    e.key = "babe" + std::string(27, '0') + "4";
    e.meta = {{"kernel", "rmsnorm_fwd"}, {"target", "sm_90"},
              {"report", {{"regs", 40}, {"spill_store_bytes", 24}, {"local_bytes", 32}, {"shared_bytes", 0}}}};
    e.artifacts["code"] = bytes("// ptx");
    ASSERT_TRUE(cache.store(e));
    pause();
    Entry f = e;
    f.key = "babe" + std::string(27, '0') + "5";
    f.meta = {{"kernel", "old_fwd"}, {"target", "sm_90"}, {"report", {{"regs", 255}, {"local_bytes", 64}}}};
    ASSERT_TRUE(cache.store(f));
  }
  Result r = tool({"list", "--target", "sm_90"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto ls = lines(r.out);
  ASSERT_EQ(ls.size(), 3u) << r.out;
  std::istringstream fresh(ls[2]), old(ls[1]);
  std::string key, kernel, target, regs, spills;
  fresh >> key >> kernel >> target >> regs >> spills;
  EXPECT_EQ(kernel, "rmsnorm_fwd");
  EXPECT_EQ(regs, "40");
  EXPECT_EQ(spills, "6");
  old >> key >> kernel >> target >> regs >> spills;
  EXPECT_EQ(kernel, "old_fwd");
  EXPECT_EQ(regs, "255");
  EXPECT_EQ(spills, "16");
}

TEST_F(ToolTest, ListTable) {
  Result r = tool({"list"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto ls = lines(r.out);
  ASSERT_EQ(ls.size(), 4u) << r.out;
  for (const char* h : {"KEY", "KERNEL", "TARGET", "REGS", "SPILLS", "OCCUPANCY", "SIZE", "LAST USED"})
    EXPECT_NE(ls[0].find(h), std::string::npos) << h;
  // Most recently used first; keys shortened to 12 characters.
  EXPECT_TRUE(ls[1].starts_with(kSoftmax.substr(0, 12) + " ")) << ls[1];
  EXPECT_TRUE(ls[2].starts_with(kMatmul.substr(0, 12) + " ")) << ls[2];
  EXPECT_TRUE(ls[3].starts_with(kAdd.substr(0, 12) + " ")) << ls[3];
  EXPECT_EQ(r.out.find(kAdd), std::string::npos);  // never the full key

  auto words = [](const std::string& l) {
    std::vector<std::string> w;
    std::istringstream in(l);
    for (std::string x; in >> x;) w.push_back(x);
    return w;
  };
  // KEY KERNEL TARGET REGS SPILLS OCCUPANCY SIZE(2 words) LAST USED(2 words)
  auto add = words(ls[3]);
  ASSERT_EQ(add.size(), 10u) << ls[3];
  EXPECT_EQ(add[1], "add");
  EXPECT_EQ(add[2], "gfx942");
  EXPECT_EQ(add[3], "32");
  EXPECT_EQ(add[4], "3");  // spill_vgpr + spill_sgpr
  EXPECT_EQ(add[5], "8");
  EXPECT_EQ(add[7], "KiB");
  auto matmul = words(ls[2]);
  ASSERT_EQ(matmul.size(), 10u) << ls[2];
  EXPECT_EQ(matmul[3], "128");
  EXPECT_EQ(matmul[4], "-");
  EXPECT_EQ(matmul[5], "-");
  auto softmax = words(ls[1]);
  ASSERT_EQ(softmax.size(), 10u) << ls[1];
  EXPECT_EQ(softmax[1], "softmax");
  EXPECT_EQ(softmax[3], "-");

  Result k = tool({"list", "--kernel", "matmul"});
  ASSERT_EQ(k.rc, 0);
  ASSERT_EQ(lines(k.out).size(), 2u) << k.out;
  EXPECT_NE(k.out.find("matmul"), std::string::npos);
  Result t = tool({"list", "--target=gfx942"});
  ASSERT_EQ(lines(t.out).size(), 2u) << t.out;
  EXPECT_NE(t.out.find(" add "), std::string::npos);
}

TEST_F(ToolTest, ListJson) {
  Result r = tool({"list", "--json"});
  ASSERT_EQ(r.rc, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_array()) << r.out;
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["key"], kSoftmax);
  EXPECT_EQ(j[2]["key"], kAdd);
  EXPECT_EQ(j[2]["kernel"], "add");
  EXPECT_EQ(j[2]["meta"]["report"]["occupancy"], 8);
  EXPECT_EQ(j[2]["size"].get<uint64_t>(), fs::file_size(dir_ / "aa" / (kAdd + ".tlc")));
  EXPECT_GT(j[2]["last_used"].get<int64_t>(), 0);
  Result f = tool({"list", "--json", "--target", "gfx1100"});
  json jf = json::parse(f.out, nullptr, false);
  ASSERT_TRUE(jf.is_array()) << f.out;
  ASSERT_EQ(jf.size(), 1u);
  EXPECT_EQ(jf[0]["key"], kMatmul);
}

TEST_F(ToolTest, Show) {
  Result r = tool({"show", "aaa1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find(kAdd), std::string::npos);
  EXPECT_NE(r.out.find("add.cpp:7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(f32*, f32*, f32*, i32)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("compile_ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tile_ir"), std::string::npos) << r.out;

  Result j = tool({"show", "C0FFEE", "--json"});  // prefixes are case-insensitive
  ASSERT_EQ(j.rc, 0) << j.err;
  json v = json::parse(j.out, nullptr, false);
  ASSERT_TRUE(v.is_object()) << j.out;
  EXPECT_EQ(v["key"], kSoftmax);
  EXPECT_EQ(v["meta"]["kernel"], "softmax");
  EXPECT_EQ(v["artifacts"]["code"], 3000);
  EXPECT_TRUE(v["meta"].contains("created"));
  EXPECT_TRUE(v["meta"].contains("hits"));

  Result full = tool({"show", kMatmul, "--json"});
  ASSERT_EQ(full.rc, 0) << full.err;
  EXPECT_EQ(json::parse(full.out)["meta"]["report"]["vgpr"], 128);
}

TEST_F(ToolTest, KeyErrors) {
  Result amb = tool({"show", "aaa"});
  EXPECT_EQ(amb.rc, 1);
  EXPECT_NE(amb.err.find("ambiguous"), std::string::npos) << amb.err;
  EXPECT_TRUE(amb.out.empty());
  Result none = tool({"show", "ffff"});
  EXPECT_EQ(none.rc, 1);
  EXPECT_NE(none.err.find("no cache entry matches 'ffff'"), std::string::npos) << none.err;
  Result bad = tool({"ir", "xyz"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("not a cache key prefix"), std::string::npos) << bad.err;
  Result missing = tool({"show"});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("needs a KEY"), std::string::npos);
}

TEST_F(ToolTest, IrAndIsa) {
  Result ir = tool({"ir", "aaa1"});
  ASSERT_EQ(ir.rc, 0) << ir.err;
  EXPECT_EQ(ir.out, "func @add(%a: ptr<f32>) {\n  return\n}\n");
  Result llvm = tool({"ir", "aaa1", "--llvm"});
  ASSERT_EQ(llvm.rc, 0) << llvm.err;
  EXPECT_EQ(llvm.out, "define amdgpu_kernel void @add() {\n  ret void\n}\n");
  Result no_llvm = tool({"ir", "aaa2", "--llvm"});
  EXPECT_EQ(no_llvm.rc, 1);
  EXPECT_NE(no_llvm.err.find("no llvm_ir"), std::string::npos) << no_llvm.err;

  Result isa = tool({"isa", "aaa1"});
  ASSERT_EQ(isa.rc, 0) << isa.err;
  EXPECT_EQ(isa.out, "add:\n  s_endpgm\n");
  Result no_isa = tool({"isa", "aaa2"});
  EXPECT_EQ(no_isa.rc, 1);
  EXPECT_NE(no_isa.err.find("no ISA text stored for this entry"), std::string::npos) << no_isa.err;
  EXPECT_TRUE(no_isa.out.empty());
}

TEST_F(ToolTest, Stats) {
  {
    DiskCache cache(dir_, uint64_t(1) << 30);
    ASSERT_TRUE(cache.load(kAdd));
    ASSERT_TRUE(cache.load(kAdd));
    ASSERT_FALSE(cache.load("f" + std::string(31, '0')));
  }
  uint64_t total = 0;
  for (const auto& k : {kAdd, kMatmul, kSoftmax}) total += fs::file_size(dir_ / k.substr(0, 2) / (k + ".tlc"));
  Result r = tool({"stats"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("entries    3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fmt::format("({} bytes)", total)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hits       2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("misses     1"), std::string::npos) << r.out;
  Result j = tool({"stats", "--json"});
  ASSERT_EQ(j.rc, 0) << j.err;
  json v = json::parse(j.out, nullptr, false);
  ASSERT_TRUE(v.is_object()) << j.out;
  EXPECT_EQ(v["entries"], 3);
  EXPECT_EQ(v["bytes"], total);
  EXPECT_EQ(v["hits"], 2);
  EXPECT_EQ(v["misses"], 1);
  EXPECT_EQ(v["rejected"], 0);
  EXPECT_EQ(v["usable"], true);
  // Inspecting with the tool is not a use: hits unchanged after show/ir.
  ASSERT_EQ(tool({"show", "aaa1"}).rc, 0);
  ASSERT_EQ(tool({"ir", "aaa1"}).rc, 0);
  EXPECT_EQ(json::parse(tool({"stats", "--json"}).out)["hits"], 2);
}

TEST_F(ToolTest, PruneEvictsLeastRecentlyUsed) {
  {
    pause();
    DiskCache cache(dir_, uint64_t(1) << 30);
    ASSERT_TRUE(cache.load(kAdd));  // now the most recently used
  }
  const uint64_t add_size = fs::file_size(dir_ / "aa" / (kAdd + ".tlc"));
  Result r = tool({"prune", "--max-size", std::to_string(add_size)});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("freed"), std::string::npos);
  Result left = tool({"list", "--json"});
  json j = json::parse(left.out);
  ASSERT_EQ(j.size(), 1u) << left.out;
  EXPECT_EQ(j[0]["key"], kAdd);

  Result k = tool({"prune", "--max-size=1K"});  // suffixes; add (~5 KiB) goes too
  ASSERT_EQ(k.rc, 0) << k.err;
  EXPECT_EQ(json::parse(tool({"list", "--json"}).out).size(), 0u);

  Result bad = tool({"prune", "--max-size", "lots"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("bad size"), std::string::npos) << bad.err;
  EXPECT_EQ(tool({"prune"}).rc, 1);
}

TEST_F(ToolTest, Clear) {
  Result r = tool({"clear"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(json::parse(tool({"list", "--json"}).out).size(), 0u);
  EXPECT_EQ(json::parse(tool({"stats", "--json"}).out)["entries"], 0);
  EXPECT_TRUE(fs::is_directory(dir_));  // the directory itself stays
  EXPECT_EQ(tool({"show", "aaa1"}).rc, 1);
}

TEST_F(ToolTest, UsesTlCacheDirWithoutDir) {
  ::setenv("TL_CACHE_DIR", dir_.c_str(), 1);
  Result r = tool({"list", "--json"}, /*with_dir=*/false);
  ::unsetenv("TL_CACHE_DIR");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).size(), 3u);
}

TEST_F(ToolTest, BadCommandLines) {
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {}, {"frobnicate"}, {"list", "--bogus"}, {"list", "extra"}, {"show", "aaa1", "aaa2"},
           {"list", "--kernel"}, {"--verbose", "list"}, {"clear", "now"}}) {
    Result r = tool(args);
    EXPECT_EQ(r.rc, 1) << fmt::format("{}", fmt::join(args, " "));
    EXPECT_NE(r.err.find("usage: tl-cache"), std::string::npos) << r.err;
  }
  Result h = tool({"--help"});
  EXPECT_EQ(h.rc, 0);
  EXPECT_NE(h.out.find("usage: tl-cache"), std::string::npos);
  // Nothing was removed by the refused "clear now".
  EXPECT_EQ(json::parse(tool({"list", "--json"}).out).size(), 3u);
}

}  // namespace
