// A kernel's cache entry with a malformed metadata field (wrong type, out of range,
// missing, unknown) or a missing artifact is refused as it is read: the launch compiles
// the kernel again, runs it correctly, the cache counts the entry as rejected and holds a
// good entry afterwards. Never a JSON exception in the user's launch. Each case edits the
// entry the launch itself stored, with a valid checksum, so the checksum cannot be what
// refuses it; the unedited control case shows the entry is otherwise a disk hit.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "runtime/cache.hpp"
#include "runtime/kernel_entry.hpp"
#include "tl/tl.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A cache directory of this process's own, set before anything opens the cache: ctest runs
// the cases as parallel processes, and the cache's counters, which every case checks, are
// shared by all the processes of one directory.
const fs::path kCacheDir = [] {
  fs::path dir = fs::temp_directory_path() / fmt::format("tl-kernel-entry-test-{}", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  ::setenv("TL_CACHE_DIR", dir.c_str(), 1);
  std::atexit([] { std::error_code ec; fs::remove_all(kCacheDir, ec); });
  return dir;
}();

// A fresh kernel object each call, so that its first launch goes to the disk cache (the
// compiled specialization is kept per kernel object). `name` keeps every case's entry
// apart from the others'.
void launch_probe(const std::string& name, int salt) {
  auto k = tl::kernel(name, [](tl::ptr<tl::i32> out, int SALT) {
    auto i = tl::arange(0, 64);
    tl::store(out + i, i * 5 + SALT);
  });
  auto dev = tl::cpu_device();
  auto O = dev.alloc<tl::i32>(64);
  k[tl::grid(1)].on(dev)(O, salt);
  auto h = O.download();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(h[i], i * 5 + salt) << "element " << i;
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

// The one entry of kernel `name`.
std::string key_of(const std::string& name) {
  std::string key;
  for (const auto& info : tl::cache::DiskCache::global().list())
    if (info.meta.value("kernel", json()) == name) {
      EXPECT_TRUE(key.empty()) << "two entries for " << name;
      key = info.key;
    }
  return key;
}

fs::path path_of(const std::string& key) {
  return tl::cache::DiskCache::global().dir() / key.substr(0, 2) / (key + ".tlc");
}

struct Case {
  const char* name;
  std::function<void(tl::cache::Entry&)> edit;
  bool refused = true;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class MalformedEntry : public ::testing::TestWithParam<Case> {};

TEST_P(MalformedEntry, IsRebuiltAndCountedAsRejected) {
  const Case& c = GetParam();
  const std::string name = fmt::format("entry_probe_{}", c.name);
  const int salt = 17;
  auto& disk = tl::cache::DiskCache::global();

  launch_probe(name, salt);  // compiles and stores
  const std::string key = key_of(name);
  ASSERT_FALSE(key.empty());
  const fs::path path = path_of(key);
  auto e = tl::cache::parse_entry(read_bytes(path), key);
  ASSERT_TRUE(e) << "the stored entry must parse";
  std::string why;
  ASSERT_TRUE(tl::runtime::read_kernel_entry(*e, &why)) << "the stored entry must be readable: " << why;
  c.edit(*e);
  write_bytes(path, tl::cache::serialize_entry(*e));  // a valid checksum over the edit

  const tl::cache::Stats before = disk.stats();
  const tl::jit_stats jit_before = tl::stats();
  ASSERT_NO_FATAL_FAILURE(launch_probe(name, salt));
  const tl::cache::Stats after = disk.stats();
  const tl::jit_stats jit_after = tl::stats();
  if (!c.refused) {
    EXPECT_EQ(jit_after.disk_hits - jit_before.disk_hits, 1u) << "a good entry is a hit";
    EXPECT_EQ(jit_after.compiles - jit_before.compiles, 0u);
    EXPECT_EQ(after.rejected - before.rejected, 0u);
    return;
  }
  EXPECT_EQ(jit_after.compiles - jit_before.compiles, 1u) << "a malformed entry must be compiled again";
  EXPECT_EQ(jit_after.disk_hits - jit_before.disk_hits, 0u);
  EXPECT_EQ(after.rejected - before.rejected, 1u) << "and counted as rejected";
  EXPECT_EQ(after.misses - before.misses, 1u);

  // The rebuilt entry replaced it: readable, and the next process-fresh launch is a hit.
  auto again = tl::cache::parse_entry(read_bytes(path), key);
  ASSERT_TRUE(again);
  EXPECT_TRUE(tl::runtime::read_kernel_entry(*again, &why)) << why;
  const tl::jit_stats jit_third = tl::stats();
  ASSERT_NO_FATAL_FAILURE(launch_probe(name, salt));
  EXPECT_EQ(tl::stats().disk_hits - jit_third.disk_hits, 1u);
}

// Edits of the metadata at a JSON pointer ("/options/num_warps"): a new value, or removal.
std::function<void(tl::cache::Entry&)> set(const char* at, json value) {
  return [at, value](tl::cache::Entry& e) { e.meta[json::json_pointer(at)] = value; };
}
std::function<void(tl::cache::Entry&)> drop(const char* at) {
  return [at](tl::cache::Entry& e) {
    json::json_pointer p(at);
    e.meta[p.parent_pointer()].erase(p.back());
  };
}

const Case kCases[] = {
    {"unchanged", [](tl::cache::Entry&) {}, false},
    // A string, a float, a bool where an integer is expected.
    {"block_threads_string", set("/block_threads", "1")},
    {"shared_bytes_float", set("/shared_bytes", 0.5)},
    {"num_warps_bool", set("/options/num_warps", true)},
    {"report_value_string", set("/report/stack_bytes", "big")},
    {"compile_ms_string", set("/compile_ms", "fast")},
    // Out of range: negative sizes, too large, not a power of two, past int64.
    {"shared_bytes_negative", set("/shared_bytes", -1)},
    {"report_value_negative", set("/report/shared_bytes", -4096)},
    {"block_threads_too_large", set("/block_threads", 100000)},
    {"block_threads_zero", set("/block_threads", 0)},
    {"num_warps_not_power_of_two", set("/options/num_warps", 3)},
    {"mma_version_one", set("/options/mma_version", 1)},
    {"mma_version_out_of_range", set("/options/mma_version", 7)},
    {"shared_bytes_past_int64", set("/shared_bytes", std::numeric_limits<uint64_t>::max())},
    {"compile_ms_negative", set("/compile_ms", -1.0)},
    {"code_bytes_wrong", [](tl::cache::Entry& e) { e.meta["code_bytes"] = e.artifacts["code"].size() + 1; }},
    {"source_line_negative", set("/source/line", -3)},
    {"format_unknown", set("/format", "exe")},
    {"constants_hex_not_hex", set("/constants_hex", "zz")},
    {"created_string", set("/created", "yesterday")},
    // An array where an object is expected, and the other way round.
    {"options_array", set("/options", json::array())},
    {"report_array", set("/report", json::array({1, 2}))},
    {"source_string", set("/source", "f.cpp:1")},
    {"remarks_object", set("/remarks", json::object())},
    {"remarks_number_inside", set("/remarks", json::array({7}))},
    {"signature_string", set("/signature", "i32*")},
    {"linker_number", set("/linker", 5)},
    {"kernel_symbol_null", set("/kernel_symbol", nullptr)},
    // Missing keys, empty required strings and unknown ones.
    {"kernel_symbol_missing", drop("/kernel_symbol")},
    {"kernel_symbol_empty", set("/kernel_symbol", "")},
    {"format_missing", drop("/format")},
    {"options_kpack_missing", drop("/options/kpack")},
    {"report_missing", drop("/report")},
    {"created_missing", drop("/created")},
    {"unknown_field", set("/launch_hook", "rm -rf")},
    {"unknown_option", set("/options/unroll", 4)},
    // Artifacts: the code missing or empty, a known one missing, an unknown one.
    {"code_missing", [](tl::cache::Entry& e) { e.artifacts.erase("code"); }},
    {"code_empty",
     [](tl::cache::Entry& e) {
       e.artifacts["code"].clear();
       e.meta["code_bytes"] = 0;
     }},
    {"tile_ir_missing", [](tl::cache::Entry& e) { e.artifacts.erase("tile_ir"); }},
    {"unknown_artifact", [](tl::cache::Entry& e) { e.artifacts["payload"] = {1, 2, 3}; }},
};

INSTANTIATE_TEST_SUITE_P(Fields, MalformedEntry, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

// What the launch writes, the reader takes back field for field.
TEST(KernelEntry, ReadsBackWhatItWrites) {
  tl::codegen::CodeObject code;
  code.kernel_symbol = "k";
  code.format = "hsaco";
  code.binary = {1, 2, 3, 4};
  code.tile_ir = "tile";
  code.llvm_ir = "llvm";
  code.report = {{"vgpr", 24}, {"dynamic_shared_bytes", 1024}};
  code.remarks = {"pipelined: yes"};
  code.block_threads = 256;
  code.shared_bytes = 1024;
  code.compile_ms = 12.5;
  code.linker = "lld";
  code.linker_reason = "default";
  tl::runtime::KernelOrigin o{"k", "k.cpp", 3, "gfx942", "amdgcn-amd-amdhsa--gfx942", {"ptr<f32> div16", "i32"},
                              std::string("\x01\xff", 2)};
  o.compiler = "test";
  auto e = tl::runtime::kernel_entry(std::string(32, 'a'), tl::runtime::kernel_meta(o, code), code);
  e.meta["created"] = 1;
  std::string why;
  auto back = tl::runtime::read_kernel_entry(e, &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->kernel_symbol, code.kernel_symbol);
  EXPECT_EQ(back->format, code.format);
  EXPECT_EQ(back->binary, code.binary);
  EXPECT_EQ(back->tile_ir, code.tile_ir);
  EXPECT_EQ(back->llvm_ir, code.llvm_ir);
  EXPECT_EQ(back->report, code.report);
  EXPECT_EQ(back->remarks, code.remarks);
  EXPECT_EQ(back->block_threads, code.block_threads);
  EXPECT_EQ(back->shared_bytes, code.shared_bytes);
  EXPECT_EQ(back->compile_ms, code.compile_ms);
  EXPECT_EQ(back->linker, code.linker);
  EXPECT_EQ(back->linker_reason, code.linker_reason);
  EXPECT_EQ(e.meta["constants_hex"], "01ff");
}

}  // namespace
