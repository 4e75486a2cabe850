// The on-disk JIT cache: round trips, other processes, concurrent writers, damaged and
// hostile entries, unsafe or unwritable directories, eviction.
#include "runtime/cache.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <thread>

#include <fmt/core.h>
#include <gtest/gtest.h>

#define XXH_INLINE_ALL  // the tests recompute checksums without linking libxxhash
#include <xxhash.h>

#include "tl/error.hpp"

namespace fs = std::filesystem;
using namespace tl::cache;

namespace {

// ---------------------------------------------------------------------------------------
// Fixtures and helpers.

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string key_for(uint64_t i) { return fmt::format("{:016x}{:016x}", splitmix(i), splitmix(i + 1000003)); }

std::vector<uint8_t> pattern(uint64_t tag, size_t size) {
  std::vector<uint8_t> v(size);
  for (size_t i = 0; i < size; ++i) v[i] = uint8_t(splitmix(tag * 131 + i / 8) >> (8 * (i % 8)));
  return v;
}

std::vector<uint8_t> text(const std::string& s) { return {s.begin(), s.end()}; }

Entry make_entry(const std::string& key, uint64_t tag = 1, size_t code_size = 1000) {
  Entry e;
  e.key = key;
  e.meta = {{"kernel", fmt::format("kernel_{}", tag)},
            {"file", "add.cpp"},
            {"line", 12},
            {"target", "gfx942"},
            {"tag", tag},
            {"code_size", code_size},
            {"report", {{"vgpr", 24}, {"spill_vgpr", 0}, {"occupancy", 8}}}};
  e.artifacts["tile_ir"] = text(fmt::format("tile ir of {}\n", tag));
  e.artifacts["llvm_ir"] = text(fmt::format("; llvm ir of {}\n", tag));
  e.artifacts["code"] = pattern(tag, code_size);
  return e;
}

// An entry whose artifacts agree with its meta: a torn or mixed entry would not.
bool consistent(const Entry& e, const std::string& key) {
  if (e.key != key || !e.meta.contains("tag") || !e.meta.contains("code_size")) return false;
  uint64_t tag = e.meta["tag"].get<uint64_t>();
  size_t size = e.meta["code_size"].get<size_t>();
  auto get = [&](const char* n) -> const std::vector<uint8_t>* {
    auto it = e.artifacts.find(n);
    return it == e.artifacts.end() ? nullptr : &it->second;
  };
  return get("code") && *get("code") == pattern(tag, size) && get("tile_ir") &&
         *get("tile_ir") == text(fmt::format("tile ir of {}\n", tag)) &&
         e.meta["kernel"] == fmt::format("kernel_{}", tag) && e.meta.contains("created") &&
         e.meta.contains("last_used") && e.meta.contains("hits");
}

fs::path entry_path(const fs::path& dir, const std::string& key) {
  return dir / key.substr(0, 2) / (key + ".tlc");
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

std::set<std::string> names_in(const fs::path& d) {
  std::set<std::string> s;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(d, ec)) s.insert(e.path().filename().string());
  return s;
}

bool is_root() { return ::geteuid() == 0; }

// A fresh 0700 directory per test; the cache lives in <tmp>/cache.
class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tl-cache-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    tmp_ = tmpl;
    ASSERT_EQ(::chmod(tmp_.c_str(), 0700), 0);
    dir_ = tmp_ / "cache";
  }
  void TearDown() override {
    // Give back write permission that a test took away, so that the tree can be removed.
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(tmp_, ec); !ec && it != fs::end(it); it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec)) ::chmod(it->path().c_str(), 0700);
    ::chmod(tmp_.c_str(), 0700);
    fs::remove_all(tmp_, ec);
  }
  fs::path tmp_, dir_;
};

// Runs `fn` in a forked child (a fresh process: its own once-per-process warning, its own
// rlimits) and returns its exit code.
// Drops, from this process's effective set, the capabilities that let root ignore file
// mode bits; true when the process then has none of them.
bool drop_file_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  for (int cap : {CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER}) data[cap / 32].effective &= ~(1u << (cap % 32));
  return ::syscall(SYS_capset, &header, data) == 0;
}

int in_child(const std::function<int()>& fn) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 99;
    try {
      rc = fn();
    } catch (...) {
    }
    std::fflush(nullptr);
    std::_Exit(rc);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Redirects this process's stderr into a file (in children only).
void stderr_to(const fs::path& p) {
  int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(fd, 2);
  ::close(fd);
}

size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = hay.find(needle); pos != std::string::npos; pos = hay.find(needle, pos + 1)) ++n;
  return n;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), {}};
}

// ---------------------------------------------------------------------------------------
// A helper mode of this binary, for tests that need a genuinely separate process (exec'ed,
// not just forked): TL_CACHE_TEST_HELPER names the mode. It runs before gtest's main.

int helper_main(std::string_view mode) {
  const char* d = std::getenv("TL_CACHE_TEST_DIR");
  const char* k = std::getenv("TL_CACHE_TEST_KEY");
  if (!d || !k) return 100;
  DiskCache cache(d, uint64_t(1) << 30);
  std::string key = k;
  if (mode == "load") {
    auto e = cache.load(key);
    if (!e) return 2;
    return consistent(*e, key) && e->meta["tag"] == 7 ? 0 : 3;
  }
  if (mode == "store") return cache.store(make_entry(key, 8, 3000)) ? 0 : 2;
  if (mode == "hammer") {
    // 8 threads, each storing its own version of the same key and loading it back; every
    // load must find a complete entry (one writer's, whichever rename came last).
    const int64_t start_ms = std::atoll(std::getenv("TL_CACHE_TEST_START_MS"));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        while (std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count() < start_ms)
          std::this_thread::yield();
        uint64_t tag = uint64_t(::getpid()) * 16 + uint64_t(t);
        for (int i = 0; i < 10; ++i) {
          if (!cache.store(make_entry(key, tag, 2000 + size_t(t) * 777 + size_t(i)))) ++failures;
          auto e = cache.load(key);
          if (!e || !consistent(*e, key)) ++failures;
          cache.flush_stats();  // contend on stats.json too, not just once a second
        }
      });
    }
    for (auto& th : threads) th.join();
    return failures == 0 ? 0 : 1;
  }
  return 100;
}

[[maybe_unused]] const int g_helper = [] {
  if (const char* mode = std::getenv("TL_CACHE_TEST_HELPER")) {
    int rc = helper_main(mode);
    std::fflush(nullptr);
    std::_Exit(rc);
  }
  return 0;
}();

pid_t spawn_helper(const std::string& mode, const fs::path& dir, const std::string& key,
                   int64_t start_ms = 0) {
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("TL_CACHE_TEST_HELPER", mode.c_str(), 1);
    ::setenv("TL_CACHE_TEST_DIR", dir.c_str(), 1);
    ::setenv("TL_CACHE_TEST_KEY", key.c_str(), 1);
    ::setenv("TL_CACHE_TEST_START_MS", std::to_string(start_ms).c_str(), 1);
    ::execl("/proc/self/exe", "cache_test_helper", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int st = 0;
  if (::waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// ---------------------------------------------------------------------------------------
// The format.

TEST(CacheFormat, SerializeParseRoundTrip) {
  Entry e = make_entry(key_for(1), 3, 5000);
  e.meta["created"] = 1;
  e.meta["last_used"] = 2;
  e.meta["hits"] = 0;
  auto bytes = serialize_entry(e);
  ASSERT_GE(bytes.size(), kHeaderSize);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "TLCACHE1");
  EXPECT_EQ(bytes[8], kFormatVersion);
  EXPECT_EQ(bytes[12], kKeyLength);
  EXPECT_EQ(std::string(bytes.begin() + 16, bytes.begin() + 48), e.key);
  uint64_t payload_len = 0;
  for (int i = 7; i >= 0; --i) payload_len = (payload_len << 8) | bytes[48 + i];
  EXPECT_EQ(payload_len, bytes.size() - kHeaderSize);

  auto back = parse_entry(bytes, e.key);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->meta, e.meta);
  EXPECT_EQ(back->artifacts, e.artifacts);
  EXPECT_FALSE(parse_entry(bytes, key_for(2)));  // the key inside must match the file's name
}

TEST(CacheFormat, EveryTruncationAndBitFlipIsRefused) {
  Entry e = make_entry(key_for(1), 3, 64);
  auto bytes = serialize_entry(e);
  for (size_t n = 0; n < bytes.size(); ++n)
    ASSERT_FALSE(parse_entry(std::span(bytes.data(), n), e.key)) << "truncated to " << n;
  auto longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(parse_entry(longer, e.key)) << "trailing byte";
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; bit += 3) {
      auto b = bytes;
      b[i] ^= uint8_t(1 << bit);
      ASSERT_FALSE(parse_entry(b, e.key)) << "flipped byte " << i << " bit " << bit;
    }
  }
}

// Builds a file with a valid header and checksum around an arbitrary payload, so that the
// payload parser itself is exercised (a hostile file can always carry a valid checksum).
std::vector<uint8_t> wrap(const std::string& key, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out(kMagic, kMagic + 8);
  auto u32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i))); };
  auto u64 = [&](uint64_t v) { for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i))); };
  u32(kFormatVersion);
  u32(uint32_t(key.size()));
  out.insert(out.end(), key.begin(), key.end());
  u64(payload.size());
  XXH128_hash_t h = XXH3_128bits(payload.data(), payload.size());
  u64(h.high64);
  u64(h.low64);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

TEST(CacheFormat, HostilePayloadsWithValidChecksums) {
  const std::string key = key_for(5);
  auto le32 = [](std::vector<uint8_t>& v, uint32_t x) { for (int i = 0; i < 4; ++i) v.push_back(uint8_t(x >> (8 * i))); };
  auto le64 = [](std::vector<uint8_t>& v, uint64_t x) { for (int i = 0; i < 8; ++i) v.push_back(uint8_t(x >> (8 * i))); };
  const std::string meta = "{}";
  auto with_meta = [&] {
    std::vector<uint8_t> p;
    le32(p, uint32_t(meta.size()));
    p.insert(p.end(), meta.begin(), meta.end());
    return p;
  };
  {  // meta length far beyond the file
    std::vector<uint8_t> p;
    le32(p, 0xffffffffu);
    EXPECT_FALSE(parse_entry(wrap(key, p), key));
  }
  {  // 4 billion artifacts announced, none present
    auto p = with_meta();
    le32(p, 0xffffffffu);
    EXPECT_FALSE(parse_entry(wrap(key, p), key));
  }
  {  // an artifact claiming 2^63 bytes
    auto p = with_meta();
    le32(p, 1);
    le32(p, 4);
    p.insert(p.end(), {'c', 'o', 'd', 'e'});
    le64(p, uint64_t(1) << 63);
    EXPECT_FALSE(parse_entry(wrap(key, p), key));
  }
  {  // duplicate artifact names
    auto p = with_meta();
    le32(p, 2);
    for (int i = 0; i < 2; ++i) {
      le32(p, 1);
      p.push_back('x');
      le64(p, 0);
    }
    EXPECT_FALSE(parse_entry(wrap(key, p), key));
  }
  {  // deeply nested JSON (in an object, so only the depth is wrong), which would recurse
     // when copied or dumped
    std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
    std::vector<uint8_t> p;
    le32(p, uint32_t(deep.size()));
    p.insert(p.end(), deep.begin(), deep.end());
    le32(p, 0);
    EXPECT_FALSE(parse_entry(wrap(key, p), key));
  }
  {  // meta that is JSON but not an object; meta that is not JSON
    for (std::string m : {"[1,2]", "nul", "{\"a\":\xff}"}) {
      std::vector<uint8_t> p;
      le32(p, uint32_t(m.size()));
      p.insert(p.end(), m.begin(), m.end());
      le32(p, 0);
      EXPECT_FALSE(parse_entry(wrap(key, p), key)) << m;
    }
  }
  {  // bytes after the last artifact, inside a correctly checksummed payload
    auto p = with_meta();
    le32(p, 0);
    p.push_back(0);
    EXPECT_FALSE(parse_entry(wrap(key, p), key));
  }
  {  // the well-formed minimum is accepted, so the refusals above are not vacuous
    auto p = with_meta();
    le32(p, 0);
    EXPECT_TRUE(parse_entry(wrap(key, p), key));
  }
  // Random mutations of a real payload, re-checksummed: never a crash, and whatever is
  // accepted re-serializes to a parseable entry.
  Entry e = make_entry(key, 9, 40);
  auto good = serialize_entry(e);
  std::vector<uint8_t> payload(good.begin() + kHeaderSize, good.end());
  std::mt19937_64 rng(42);
  for (int iter = 0; iter < 3000; ++iter) {
    auto p = payload;
    int edits = 1 + int(rng() % 4);
    for (int j = 0; j < edits; ++j) {
      size_t at = rng() % p.size();
      switch (rng() % 3) {
        case 0: p[at] = uint8_t(rng()); break;
        case 1: p.erase(p.begin() + long(at)); break;
        default: p.insert(p.begin() + long(at), uint8_t(rng())); break;
      }
    }
    if (auto back = parse_entry(wrap(key, p), key)) {
      ASSERT_TRUE(parse_entry(serialize_entry(*back), key));
    }
  }
}

TEST(CacheFormat, SizesAndKeys) {
  EXPECT_EQ(parse_size("123"), 123u);
  EXPECT_EQ(parse_size("64K"), 65536u);
  EXPECT_EQ(parse_size("64k"), 65536u);
  EXPECT_EQ(parse_size("512M"), 512u << 20);
  EXPECT_EQ(parse_size("2G"), uint64_t(2) << 30);
  EXPECT_EQ(parse_size("1GiB"), uint64_t(1) << 30);
  EXPECT_EQ(parse_size("10mb"), 10u << 20);
  EXPECT_FALSE(parse_size(""));
  EXPECT_FALSE(parse_size("K"));
  EXPECT_FALSE(parse_size("12Q"));
  EXPECT_FALSE(parse_size("-1"));
  EXPECT_FALSE(parse_size("99999999999999999999G"));
  EXPECT_FALSE(parse_size("17179869184G"));  // overflows 64 bits after the shift

  EXPECT_EQ(normalize_key("0123456789ABCDEF0123456789abcdef"), "0123456789abcdef0123456789abcdef");
  EXPECT_FALSE(normalize_key("0123456789abcdef0123456789abcde"));
  EXPECT_FALSE(normalize_key("../../../../../../etc/passwd00000"));
  EXPECT_FALSE(normalize_key("0123456789abcdef0123456789abcdeg"));
}

// ---------------------------------------------------------------------------------------
// One process.

TEST_F(CacheTest, StoreLoadRoundTrip) {
  DiskCache cache(dir_, uint64_t(1) << 30);
  const std::string key = key_for(1);
  EXPECT_FALSE(cache.load(key));  // a miss
  Entry e = make_entry(key, 7, 10000);
  e.artifacts["isa"] = text("s_endpgm\n");
  ASSERT_TRUE(cache.store(e));

  // On disk where the format says, private to us.
  struct stat st;
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_ / key.substr(0, 2)).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::lstat(entry_path(dir_, key).c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(names_in(dir_ / key.substr(0, 2)), std::set<std::string>{key + ".tlc"});

  auto got = cache.load(key);
  ASSERT_TRUE(got);
  EXPECT_TRUE(consistent(*got, key));
  EXPECT_EQ(got->artifacts, e.artifacts);
  EXPECT_EQ(got->meta["report"]["vgpr"], 24);
  EXPECT_EQ(got->meta["hits"], 1);
  int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_NEAR(got->meta["created"].get<int64_t>(), now, 5);
  EXPECT_NEAR(got->meta["last_used"].get<int64_t>(), now, 5);
  EXPECT_EQ(cache.load(key)->meta["hits"], 2);

  // A new instance (no memory shared) sees the same entry and the same counters, once the
  // first has written them (they are batched, at most a second late).
  cache.flush_stats();
  DiskCache other(dir_, uint64_t(1) << 30);
  EXPECT_EQ(other.load(key)->meta["hits"], 3);
  Stats s = other.stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.bytes, uint64_t(st.st_size));
  EXPECT_EQ(s.hits, 3u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.rejected, 0u);
  EXPECT_EQ(s.memory_entries, 0u);
  auto stats_json = nlohmann::json::parse(slurp(dir_ / "stats.json"));
  EXPECT_EQ(stats_json["hits"], 3);

  // Keys that are not 32 hex digits never reach the file system.
  EXPECT_FALSE(cache.store(make_entry("../../outside/aaaaaaaaaaaaaaaaaa")));
  EXPECT_FALSE(cache.load("../../outside/aaaaaaaaaaaaaaaaaa"));
  EXPECT_FALSE(fs::exists(tmp_ / "outside"));
}

TEST_F(CacheTest, StoreReplacesAndListsAndFindsPrefixes) {
  DiskCache cache(dir_, uint64_t(1) << 30);
  const std::string a = "ab" + std::string(29, '0') + "1";
  const std::string b = "ab" + std::string(29, '0') + "2";
  const std::string c = key_for(3);
  ASSERT_TRUE(cache.store(make_entry(a, 1)));
  ASSERT_TRUE(cache.store(make_entry(b, 2)));
  ASSERT_TRUE(cache.store(make_entry(c, 3)));
  ASSERT_TRUE(cache.store(make_entry(c, 4)));  // the same key again: replaced, one file
  EXPECT_EQ(cache.load(c)->meta["tag"], 4);
  EXPECT_EQ(names_in(dir_ / c.substr(0, 2)), (std::set<std::string>{c + ".tlc", c + ".used"}));

  auto infos = cache.list();
  ASSERT_EQ(infos.size(), 3u);
  std::set<std::string> keys;
  for (const auto& i : infos) {
    keys.insert(i.key);
    EXPECT_EQ(i.size, fs::file_size(entry_path(dir_, i.key)));
    EXPECT_GT(i.last_used, 0);
    EXPECT_FALSE(i.in_memory);
    EXPECT_EQ(i.meta["target"], "gfx942");
  }
  EXPECT_EQ(keys, (std::set<std::string>{a, b, c}));

  EXPECT_THROW(cache.find_prefix("ab"), tl::error);   // two entries
  EXPECT_THROW(cache.find_prefix("a"), tl::error);
  EXPECT_THROW(cache.find_prefix("xyz"), tl::error);  // not hex
  EXPECT_THROW(cache.find_prefix(""), tl::error);
  EXPECT_EQ(cache.find_prefix(a.substr(0, 32))->meta["tag"], 1);
  EXPECT_EQ(cache.find_prefix("AB" + std::string(29, '0') + "2")->meta["tag"], 2);
  EXPECT_EQ(cache.find_prefix(c.substr(0, 5))->key, c);
  EXPECT_FALSE(cache.find_prefix("ab1"));  // a and b are ab0..., c is elsewhere
  EXPECT_FALSE(c.starts_with("ab1"));
  // Inspection is not use: no hits counted.
  EXPECT_EQ(cache.stats().hits, 1u);
}

TEST_F(CacheTest, EvictionKeepsTheCapAndTheRecentlyUsed) {
  const uint64_t cap = 40000;
  DiskCache cache(dir_, cap);
  const std::string hot = key_for(100);
  ASSERT_TRUE(cache.store(make_entry(hot, 100, 6000)));
  const uint64_t entry_size = fs::file_size(entry_path(dir_, hot));
  for (int i = 0; i < 16; ++i) {
    // File times have a coarse clock; keep the uses apart so that LRU order is defined.
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    ASSERT_TRUE(cache.load(hot)) << "the hot entry was evicted at step " << i;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    ASSERT_TRUE(cache.store(make_entry(key_for(uint64_t(i)), uint64_t(i), 6000)));
    Stats s = cache.stats();
    EXPECT_LE(s.bytes, cap) << "after store " << i;
  }
  Stats s = cache.stats();
  EXPECT_GT(s.evicted, 0u);
  EXPECT_LE(s.entries, cap / entry_size);
  EXPECT_TRUE(cache.load(hot));
  EXPECT_TRUE(cache.load(key_for(15)));   // the newest
  EXPECT_FALSE(cache.load(key_for(0)));   // the least recently used went first
  EXPECT_FALSE(fs::exists(dir_ / key_for(0).substr(0, 2) / (key_for(0) + ".used")));
}

TEST_F(CacheTest, PruneAndClear) {
  DiskCache cache(dir_, uint64_t(1) << 30);
  uint64_t total = 0;
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(cache.store(make_entry(key_for(uint64_t(i)), uint64_t(i), 3000)));
    total += fs::file_size(entry_path(dir_, key_for(uint64_t(i))));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(cache.stats().bytes, total);
  EXPECT_EQ(cache.prune(total), 0u);  // already small enough
  uint64_t one = fs::file_size(entry_path(dir_, key_for(0)));
  uint64_t freed = cache.prune(total - 1);
  EXPECT_EQ(freed, one);  // exactly the oldest one
  EXPECT_FALSE(fs::exists(entry_path(dir_, key_for(0))));
  EXPECT_EQ(cache.stats().entries, 5u);
  EXPECT_EQ(cache.prune(0), total - one);
  EXPECT_EQ(cache.stats().entries, 0u);

  // clear() removes entries and only the names the cache creates.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cache.store(make_entry(key_for(uint64_t(i)), uint64_t(i))));
  write_bytes(dir_ / "notes.txt", text("mine"));
  const std::string shard = key_for(0).substr(0, 2);
  write_bytes(dir_ / shard / "readme", text("mine too"));
  ASSERT_TRUE(cache.load(key_for(0)));
  cache.clear();
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().hits, 0u);
  EXPECT_FALSE(cache.load(key_for(1)));
  EXPECT_TRUE(fs::exists(dir_ / "notes.txt"));
  EXPECT_EQ(names_in(dir_ / shard), std::set<std::string>{"readme"});
  for (int i = 1; i < 3; ++i) {  // emptied shards are removed
    const std::string other = key_for(uint64_t(i)).substr(0, 2);
    if (other != shard) {
      EXPECT_FALSE(fs::exists(dir_ / other)) << other;
    }
  }
}

TEST_F(CacheTest, StaleTemporaryFilesAreCleanedUp) {
  DiskCache cache(dir_, uint64_t(1) << 30);
  const std::string key = key_for(1);
  ASSERT_TRUE(cache.store(make_entry(key)));
  const fs::path stale = dir_ / key.substr(0, 2) / (key + ".tmp.1.1.0.deadbeef");
  const fs::path fresh = dir_ / key.substr(0, 2) / (key + ".tmp.2.2.0.deadbeef");
  write_bytes(stale, text("half an entry"));
  write_bytes(fresh, text("a store in progress"));
  struct timespec old[2] = {{0, UTIME_OMIT}, {std::time(nullptr) - 7200, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, stale.c_str(), old, 0), 0);
  Stats s = cache.stats();
  EXPECT_EQ(s.entries, 1u);  // temporary files are not entries
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh));  // may belong to a live writer
}

// ---------------------------------------------------------------------------------------
// Other processes.

TEST_F(CacheTest, AnotherProcessFindsTheEntry) {
  const std::string key = key_for(42), key2 = key_for(43);
  {
    DiskCache cache(dir_, uint64_t(1) << 30);
    ASSERT_TRUE(cache.store(make_entry(key, 7, 3000)));
  }
  EXPECT_EQ(wait_exit(spawn_helper("load", dir_, key)), 0);
  EXPECT_EQ(wait_exit(spawn_helper("load", dir_, key2)), 2);  // the helper really looks
  EXPECT_EQ(wait_exit(spawn_helper("store", dir_, key2)), 0);
  DiskCache cache(dir_, uint64_t(1) << 30);
  auto e = cache.load(key2);
  ASSERT_TRUE(e);
  EXPECT_TRUE(consistent(*e, key2));
  EXPECT_EQ(e->meta["tag"], 8);
  EXPECT_EQ(cache.stats().hits, 2u);  // the helper's and ours, through stats.json
}

TEST_F(CacheTest, ConcurrentWritersOfOneKeyLeaveOneValidEntry) {
  const std::string key = key_for(77);
  const int64_t start = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count() + 300;
  std::vector<pid_t> pids;
  for (int p = 0; p < 8; ++p) pids.push_back(spawn_helper("hammer", dir_, key, start));
  for (pid_t pid : pids) EXPECT_EQ(wait_exit(pid), 0) << "a helper saw a failed store or a bad load";

  // Exactly one entry file, no temporary files anywhere.
  EXPECT_EQ(names_in(dir_ / key.substr(0, 2)), (std::set<std::string>{key + ".tlc", key + ".used"}));
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{key.substr(0, 2), "stats.json", "stats.lock"}));
  DiskCache cache(dir_, uint64_t(1) << 30);
  Stats s = cache.stats();
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.hits, 8u * 8u * 10u);  // every load counted once, none lost to a race
  EXPECT_EQ(s.misses, 0u);
  EXPECT_EQ(s.rejected, 0u);
  auto e = cache.load(key);
  ASSERT_TRUE(e);
  EXPECT_TRUE(consistent(*e, key));
  EXPECT_EQ(e->meta["hits"], 8 * 8 * 10 + 1);
  EXPECT_TRUE(nlohmann::json::parse(slurp(dir_ / "stats.json"), nullptr, false).is_object());
}

TEST_F(CacheTest, ThreadsOfOneProcess) {
  DiskCache cache(dir_, 200000);  // small enough that eviction runs concurrently too
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        std::string key = key_for(uint64_t(i % 20));
        if (!cache.store(make_entry(key, uint64_t(t * 100 + i), 5000))) ++failures;
        if (auto e = cache.load(key); e && !consistent(*e, key)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  Stats s = cache.stats();
  EXPECT_LE(s.bytes, 200000u);
  EXPECT_EQ(s.rejected, 0u);
  for (const auto& info : cache.list()) EXPECT_TRUE(consistent(*cache.load(info.key), info.key));
}

// ---------------------------------------------------------------------------------------
// Damaged, foreign and planted entries.

class BadEntryTest : public CacheTest {
 protected:
  void SetUp() override {
    CacheTest::SetUp();
    DiskCache cache(dir_, uint64_t(1) << 30);
    ASSERT_TRUE(cache.store(make_entry(key_, 5, 4000)));
    ASSERT_TRUE(cache.store(make_entry(other_, 6, 4000)));
    path_ = entry_path(dir_, key_);
    good_ = read_bytes(path_);
  }
  // The bad entry is a miss, counted as rejected; and the cache still works for the key.
  void expect_refused(bool removed) {
    DiskCache cache(dir_, uint64_t(1) << 30);
    EXPECT_FALSE(cache.load(key_));
    Stats s = cache.stats();
    EXPECT_EQ(s.rejected, 1u);
    EXPECT_EQ(s.misses, 1u);
    struct stat st;
    EXPECT_EQ(::lstat(path_.c_str(), &st) != 0, removed) << (removed ? "not removed" : "removed");
    EXPECT_TRUE(cache.load(other_));  // the neighbour is untouched
    if (removed) {
      ASSERT_TRUE(cache.store(make_entry(key_, 5, 4000)));
      auto e = cache.load(key_);
      ASSERT_TRUE(e);
      EXPECT_TRUE(consistent(*e, key_));
    }
  }
  const std::string key_ = key_for(1);
  const std::string other_ = key_for(2);
  fs::path path_;
  std::vector<uint8_t> good_;
};

TEST_F(BadEntryTest, Truncated) {
  fs::resize_file(path_, good_.size() - 100);
  expect_refused(true);
}

TEST_F(BadEntryTest, TruncatedInsideTheHeader) {
  fs::resize_file(path_, 20);
  expect_refused(true);
}

TEST_F(BadEntryTest, Empty) {
  fs::resize_file(path_, 0);
  expect_refused(true);
}

TEST_F(BadEntryTest, BitFlipInThePayload) {
  auto b = good_;
  b[b.size() - 17] ^= 0x10;
  write_bytes(path_, b);
  expect_refused(true);
}

TEST_F(BadEntryTest, ForeignFileWithWrongMagic) {
  auto b = good_;
  std::memcpy(b.data(), "ELF\x7f....", 8);
  write_bytes(path_, b);
  expect_refused(true);
}

TEST_F(BadEntryTest, NewerFormatVersion) {
  auto b = good_;
  b[8] = 2;
  write_bytes(path_, b);
  expect_refused(true);
}

TEST_F(BadEntryTest, KeyDoesNotMatchFileName) {
  write_bytes(path_, read_bytes(entry_path(dir_, other_)));  // a valid entry, for another key
  expect_refused(true);
}

TEST_F(BadEntryTest, Symlink) {
  // Points at a perfectly valid entry for this key outside the cache: refused anyway,
  // because whoever can plant a symlink can point it at anything.
  const fs::path outside = tmp_ / "outside.tlc";
  write_bytes(outside, good_);
  fs::remove(path_);
  fs::create_symlink(outside, path_);
  expect_refused(true);
  EXPECT_TRUE(fs::exists(outside));  // the link was removed, not its target
  EXPECT_EQ(read_bytes(outside), good_);
}

TEST_F(BadEntryTest, DanglingSymlink) {
  fs::remove(path_);
  fs::create_symlink(tmp_ / "nowhere", path_);
  expect_refused(true);
}

TEST_F(BadEntryTest, Fifo) {
  fs::remove(path_);
  ASSERT_EQ(::mkfifo(path_.c_str(), 0600), 0);
  // Opening a FIFO for reading blocks until a writer comes: the load must not. Tried in a
  // child first, so that a hang fails here in seconds rather than at the test timeout.
  ASSERT_EQ(in_child([&] {
              ::alarm(10);
              DiskCache cache(dir_, uint64_t(1) << 30);
              return cache.load(key_) ? 1 : 0;
            }),
            0) << "the load hung on a FIFO (128 + SIGALRM) or accepted it";
  ASSERT_EQ(::unlink(path_.c_str()) == 0 || errno == ENOENT, true);
  ASSERT_EQ(::mkfifo(path_.c_str(), 0600), 0);  // the child's stats do count; start again
  ::unlink((dir_ / "stats.json").c_str());
  expect_refused(true);
}

TEST_F(BadEntryTest, Socket) {
  fs::remove(path_);
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  struct sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path_.string().size(), sizeof addr.sun_path);
  std::strcpy(addr.sun_path, path_.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof addr), 0);
  ::close(fd);
  expect_refused(true);  // open(2) fails with ENXIO; still refused and removed
}

TEST_F(BadEntryTest, Directory) {
  fs::remove(path_);
  fs::create_directory(path_);
  expect_refused(false);  // refused, but the cache never removes directories it did not make
}

TEST_F(BadEntryTest, OwnedByAnotherUser) {
  if (!is_root()) GTEST_SKIP() << "needs root to give a file to another uid";
  ASSERT_EQ(::chown(path_.c_str(), 4242, 4242), 0);
  expect_refused(false);  // not ours to delete
}

// A well-formed file whose contents its reader refuses (a meta field of the wrong type,
// say): the reader's check runs inside load, and the entry goes the way of a damaged one.
TEST_F(BadEntryTest, RefusedByTheReaderIsRemovedAndCountedAsRejected) {
  DiskCache cache(dir_, uint64_t(1) << 30);
  int calls = 0;
  auto refuse_tag_5 = [&](const Entry& e) {
    ++calls;
    return e.meta["tag"] != 5;
  };
  EXPECT_FALSE(cache.load(key_, refuse_tag_5));
  EXPECT_EQ(calls, 1);
  struct stat st;
  EXPECT_NE(::lstat(path_.c_str(), &st), 0) << "the refused entry is still on disk";
  EXPECT_TRUE(cache.load(other_, refuse_tag_5)) << "a neighbour the check accepts is a hit";
  Stats s = cache.stats();
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.hits, 1u);
  // Stored again, the key works as before.
  ASSERT_TRUE(cache.store(make_entry(key_, 5, 4000)));
  EXPECT_TRUE(cache.load(key_));
}

TEST_F(BadEntryTest, ACheckThatThrowsRefusesWithoutThrowing) {
  DiskCache cache(dir_, uint64_t(1) << 30);
  // What a check reading a field as the wrong type does (nlohmann's type_error).
  auto throwing = [](const Entry& e) { return e.meta["kernel"].get<int>() > 0; };
  std::optional<Entry> e;
  EXPECT_NO_THROW(e = cache.load(key_, throwing));
  EXPECT_FALSE(e);
  EXPECT_EQ(cache.stats().rejected, 1u);
  struct stat st;
  EXPECT_NE(::lstat(path_.c_str(), &st), 0);
}

TEST_F(CacheTest, RefusedInMemoryEntryIsDropped) {
  // Where the directory cannot be made, entries live in memory; a refused one must leave
  // memory too, or every later load would return it again. (In a child: the fallback
  // warns once per process.)
  write_bytes(tmp_ / "blocker", text("not a directory"));
  EXPECT_EQ(in_child([&] {
              stderr_to(tmp_ / "stderr");
              DiskCache cache(tmp_ / "blocker" / "cache", uint64_t(1) << 30);
              if (cache.store(make_entry(key_for(7), 7, 4000))) return 1;
              if (cache.stats().memory_entries != 1) return 2;
              if (cache.load(key_for(7), [](const Entry&) { return false; })) return 3;
              Stats s = cache.stats();
              if (s.memory_entries != 0 || s.rejected != 1 || s.misses != 1) return 4;
              if (cache.load(key_for(7))) return 5;
              return 0;
            }),
            0);
}

// ---------------------------------------------------------------------------------------
// Unsafe and unwritable directories.

TEST_F(CacheTest, DirectoryWritableByOthersIsRefused) {
  const std::string key = key_for(1);
  {
    DiskCache cache(dir_, uint64_t(1) << 30);
    ASSERT_TRUE(cache.store(make_entry(key)));
  }
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  int rc = in_child([&] {
    stderr_to(tmp_ / "stderr");
    DiskCache cache(dir_, uint64_t(1) << 30);
    if (cache.load(key)) return 1;                 // refused although the file is intact
    if (cache.stats().rejected != 1) return 2;
    if (cache.store(make_entry(key_for(2)))) return 3;  // nothing is written there either
    if (!cache.load(key_for(2))) return 4;         // kept in memory instead
    if (cache.disk_problem().find("writable by group or others") == std::string::npos) return 5;
    return 0;
  });
  EXPECT_EQ(rc, 0);
  EXPECT_NE(slurp(tmp_ / "stderr").find("writable by group or others"), std::string::npos);
  EXPECT_TRUE(fs::exists(entry_path(dir_, key)));  // not deleted: we cannot vouch for it
  EXPECT_FALSE(fs::exists(entry_path(dir_, key_for(2))));
  ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);
  DiskCache cache(dir_, uint64_t(1) << 30);
  EXPECT_TRUE(cache.load(key));  // safe again: the same file is accepted
}

TEST_F(CacheTest, ShardWritableByGroupIsRefused) {
  const std::string key = key_for(1);
  DiskCache cache(dir_, uint64_t(1) << 30);
  ASSERT_TRUE(cache.store(make_entry(key)));
  ASSERT_EQ(::chmod((dir_ / key.substr(0, 2)).c_str(), 0770), 0);
  DiskCache fresh(dir_, uint64_t(1) << 30);
  EXPECT_FALSE(fresh.load(key));
  EXPECT_EQ(fresh.stats().rejected, 1u);
  EXPECT_TRUE(fs::exists(entry_path(dir_, key)));
}

TEST_F(CacheTest, DirectoryOwnedByAnotherUserIsRefused) {
  if (!is_root()) GTEST_SKIP() << "needs root to give a directory to another uid";
  const std::string key = key_for(1);
  {
    DiskCache cache(dir_, uint64_t(1) << 30);
    ASSERT_TRUE(cache.store(make_entry(key)));
  }
  ASSERT_EQ(::chown(dir_.c_str(), 4242, 4242), 0);
  DiskCache cache(dir_, uint64_t(1) << 30);
  EXPECT_FALSE(cache.load(key));
  EXPECT_EQ(cache.stats().rejected, 1u);
  EXPECT_TRUE(fs::exists(entry_path(dir_, key)));
}

// The fallback checks shared by the unwritable-directory tests, run in a child process so
// that "one warning per process" can be counted exactly.
int check_memory_fallback(const fs::path& dir, const fs::path& err) {
  stderr_to(err);
  DiskCache cache(dir, uint64_t(1) << 30);
  for (int i = 0; i < 3; ++i)
    if (cache.store(make_entry(key_for(uint64_t(i)), uint64_t(i), 20000))) return 10 + i;
  for (int i = 0; i < 3; ++i) {
    auto e = cache.load(key_for(uint64_t(i)));
    if (!e || !consistent(*e, key_for(uint64_t(i)))) return 20 + i;
  }
  Stats s = cache.stats();
  if (s.memory_entries != 3 || s.entries != 3 || s.hits != 3) return 30;
  auto infos = cache.list();
  if (infos.size() != 3 || !infos[0].in_memory) return 31;
  if (!cache.find_prefix(key_for(1).substr(0, 10))) return 32;
  DiskCache second(dir, uint64_t(1) << 30);  // another instance in the same process
  if (second.store(make_entry(key_for(9), 9, 20000))) return 33;
  return 0;
}

TEST_F(CacheTest, ReadOnlyDirectoryFallsBackToMemory) {
  // Root writes through mode bits (CAP_DAC_OVERRIDE): the child gives up the capabilities
  // that bypass them, so that the 0500 directory is read-only for it whoever runs the test.
  fs::create_directories(dir_);
  ASSERT_EQ(::chmod(dir_.c_str(), 0500), 0);
  constexpr int kCannot = 77;
  int rc = in_child([&] {
    if (!drop_file_capabilities()) return kCannot;
    int fd = ::open((dir_ / "probe").c_str(), O_CREAT | O_WRONLY, 0600);
    if (fd >= 0) return kCannot;  // still writable: nothing to test here
    return check_memory_fallback(dir_, tmp_ / "stderr");
  });
  if (rc == kCannot) GTEST_SKIP() << "cannot make a directory read-only for this process";
  EXPECT_EQ(rc, 0);
  std::string err = slurp(tmp_ / "stderr");
  EXPECT_EQ(count_of(err, "is not writable"), 1u) << err;
  EXPECT_EQ(names_in(dir_).size(), 0u);
}

TEST_F(CacheTest, UncreatableDirectoryFallsBackToMemory) {
  // A regular file where a parent directory should be: mkdir fails for every uid, root too.
  write_bytes(tmp_ / "blocker", text("not a directory"));
  const fs::path dir = tmp_ / "blocker" / "cache";
  EXPECT_EQ(in_child([&] { return check_memory_fallback(dir, tmp_ / "stderr"); }), 0);
  std::string err = slurp(tmp_ / "stderr");
  EXPECT_EQ(count_of(err, "tl: cache directory"), 1u) << err;
  EXPECT_NE(err.find("is not writable"), std::string::npos) << err;
  EXPECT_NE(err.find("using an in-memory cache"), std::string::npos) << err;
  EXPECT_NE(err.find(dir.string()), std::string::npos) << err;
}

TEST_F(CacheTest, WriteErrorFallsBackToMemoryAndLeavesNoTemporaryFile) {
  // A file size limit makes write(2) fail part-way (EFBIG), like a full disk, for root too.
  fs::create_directories(dir_);
  const std::string key = key_for(0);
  fs::create_directory(dir_ / key.substr(0, 2));
  ::chmod((dir_ / key.substr(0, 2)).c_str(), 0700);
  int rc = in_child([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {8192, 8192};
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) return 50;
    return check_memory_fallback(dir_, tmp_ / "stderr");
  });
  EXPECT_EQ(rc, 0);
  std::string err = slurp(tmp_ / "stderr");
  EXPECT_EQ(count_of(err, "is not writable"), 1u) << err;
  EXPECT_NE(err.find("too large"), std::string::npos) << err;  // strerror(EFBIG)
  for (int i = 0; i < 3; ++i) {
    const std::string k = key_for(uint64_t(i));
    for (const auto& n : names_in(dir_ / k.substr(0, 2))) ADD_FAILURE() << "left behind: " << n;
  }
}

TEST_F(CacheTest, GlobalUsesTheEnvironment) {
  int rc = in_child([&] {
    // TL_CACHE_DIR unset: $HOME/.cache/tl, created 0700 with its parents.
    ::unsetenv("TL_CACHE_DIR");
    ::setenv("HOME", (tmp_ / "home").c_str(), 1);
    ::setenv("TL_CACHE_MAX_BYTES", "64K", 1);
    DiskCache& g = DiskCache::global();
    if (g.dir() != tmp_ / "home" / ".cache" / "tl") return 1;
    if (g.max_bytes() != 65536) return 2;
    if (&g != &DiskCache::global()) return 3;
    for (fs::path p : {tmp_ / "home", tmp_ / "home" / ".cache", tmp_ / "home" / ".cache" / "tl"}) {
      struct stat st;
      if (::stat(p.c_str(), &st) != 0 || (st.st_mode & 0777) != 0700) return 4;
    }
    if (!g.store(make_entry(key_for(1)))) return 5;
    return g.load(key_for(1)) ? 0 : 6;
  });
  EXPECT_EQ(rc, 0);
  rc = in_child([&] {
    ::setenv("TL_CACHE_DIR", (tmp_ / "explicit").c_str(), 1);
    ::unsetenv("TL_CACHE_MAX_BYTES");
    DiskCache& g = DiskCache::global();
    return g.dir() == tmp_ / "explicit" && g.max_bytes() == kDefaultMaxBytes && fs::is_directory(tmp_ / "explicit")
               ? 0 : 1;
  });
  EXPECT_EQ(rc, 0);
}

TEST(CacheIsaProvider, SetAndGet) {
  // libtl registers its own provider while it initializes (runtime/isa_text.cpp): it must
  // be there before main, and it is put back afterwards for the other tests.
  IsaProvider registered = isa_provider();
  EXPECT_TRUE(registered);
  set_isa_provider([](const Entry& e) { return "isa of " + e.key; });
  Entry e;
  e.key = "k";
  ASSERT_TRUE(isa_provider());
  EXPECT_EQ(isa_provider()(e), "isa of k");
  set_isa_provider(nullptr);
  EXPECT_FALSE(isa_provider());
  set_isa_provider(registered);
}

}  // namespace
