// The JIT's use of the on-disk cache, seen from processes: a second process finds the
// first one's code and compiles nothing; 8 processes of 8 threads launching one new
// kernel together all succeed and leave exactly one valid entry; concurrent first
// launches inside one process compile once; a corrupted entry is rebuilt.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "runtime/cache.hpp"
#include "support/reference.hpp"

namespace fs = std::filesystem;

namespace {

// The kernel every process launches. `salt` makes a fresh specialization per test run.
int launch_once(int salt) {
  // One kernel object per process, so its threads share one specialization table.
  static auto k = tl::kernel("cache_probe", [](tl::ptr<tl::i32> out, int SALT) {
    auto i = tl::arange(0, 64);
    tl::store(out + i, i * 3 + SALT);
  });
  auto dev = tl::cpu_device();
  auto O = dev.alloc<tl::i32>(64);
  k[tl::grid(1)].on(dev)(O, salt);
  auto h = O.download();
  for (int i = 0; i < 64; ++i)
    if (h[i] != i * 3 + salt) return 1;
  return 0;
}

fs::path fresh_dir(const char* name) {
  fs::path d = fs::temp_directory_path() / fmt::format("tl-jit-{}-{}-{}", name, getpid(), std::rand());
  fs::create_directories(d);
  fs::permissions(d, fs::perms::owner_all, fs::perm_options::replace);
  return d;
}

std::string self_exe() { return fs::read_symlink("/proc/self/exe").string(); }

// Runs this test binary in child mode: it launches the probe kernel (with `threads`
// threads) and writes "compiles disk_hits failures" to `report`.
pid_t spawn_child(const fs::path& cache, int salt, int threads, const fs::path& report) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv("TL_CACHE_DIR", cache.c_str(), 1);
    std::string s = std::to_string(salt), t = std::to_string(threads);
    execl(self_exe().c_str(), self_exe().c_str(), "--child", s.c_str(), t.c_str(), report.c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

int wait_ok(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::vector<fs::path> entries(const fs::path& dir) {
  std::vector<fs::path> out;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".tlc") out.push_back(e.path());
  return out;
}

}  // namespace

TEST(JitCache, SecondProcessFindsTheEntryAndCompilesNothing) {
  auto dir = fresh_dir("second");
  int salt = 1000 + std::rand() % 100000;
  auto r1 = dir / "r1", r2 = dir / "r2";
  ASSERT_EQ(wait_ok(spawn_child(dir, salt, 1, r1)), 0);
  ASSERT_EQ(wait_ok(spawn_child(dir, salt, 1, r2)), 0);
  int c1, h1, f1, c2, h2, f2;
  std::ifstream(r1) >> c1 >> h1 >> f1;
  std::ifstream(r2) >> c2 >> h2 >> f2;
  EXPECT_EQ(c1, 1) << "the first process compiles the kernel";
  EXPECT_EQ(h1, 0);
  EXPECT_EQ(c2, 0) << "the second process must not compile";
  EXPECT_EQ(h2, 1) << "the second process takes the code from disk";
  EXPECT_EQ(f1 + f2, 0);
  EXPECT_EQ(entries(dir).size(), 1u);
}

TEST(JitCache, EightProcessesOfEightThreadsLeaveOneValidEntry) {
  auto dir = fresh_dir("stampede");
  int salt = 200000 + std::rand() % 100000;
  std::vector<pid_t> kids;
  for (int p = 0; p < 8; ++p) kids.push_back(spawn_child(dir, salt, 8, dir / fmt::format("r{}", p)));
  int total_compiles = 0;
  for (int p = 0; p < 8; ++p) {
    EXPECT_EQ(wait_ok(kids[p]), 0) << "process " << p;
    int c = 0, h = 0, f = 1;
    std::ifstream(dir / fmt::format("r{}", p)) >> c >> h >> f;
    EXPECT_EQ(f, 0) << "process " << p << " had failing launches";
    EXPECT_LE(c, 1) << "process " << p << " compiled more than once";
    total_compiles += c;
  }
  EXPECT_GE(total_compiles, 1);
  auto found = entries(dir);
  ASSERT_EQ(found.size(), 1u);
  tl::cache::DiskCache cache(dir);
  std::string key = found[0].stem().string();
  EXPECT_TRUE(cache.load(key).has_value()) << "the entry left behind must be valid";
  for (auto& e : fs::recursive_directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "temporary file left: " << e.path();
}

TEST(JitCache, CorruptedEntryIsRebuilt) {
  auto dir = fresh_dir("corrupt");
  int salt = 400000 + std::rand() % 100000;
  ASSERT_EQ(wait_ok(spawn_child(dir, salt, 1, dir / "r1")), 0);
  auto found = entries(dir);
  ASSERT_EQ(found.size(), 1u);
  {  // flip a byte in the middle of the payload
    std::fstream f(found[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    auto size = f.tellg();
    f.seekp(size / 2);
    char c;
    f.seekg(size / 2);
    f.get(c);
    f.seekp(size / 2);
    f.put(char(c ^ 0x5a));
  }
  ASSERT_EQ(wait_ok(spawn_child(dir, salt, 1, dir / "r2")), 0);
  int c = 0, h = 0, fl = 1;
  std::ifstream(dir / "r2") >> c >> h >> fl;
  EXPECT_EQ(c, 1) << "a corrupt entry must be compiled again";
  EXPECT_EQ(fl, 0);
  tl::cache::DiskCache cache(dir);
  EXPECT_TRUE(cache.load(found[0].stem().string()).has_value()) << "and rewritten valid";
}

TEST(JitCache, ConcurrentFirstLaunchesInOneProcessCompileOnce) {
  auto before = tl::stats();
  auto k = tl::kernel("threads_probe", [](tl::ptr<tl::f32> out, int SALT) {
    tl::store(out + tl::arange(0, 32), tl::arange(0, 32).to<tl::f32>() + float(SALT));
  });
  int salt = std::rand();
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t)
    ts.emplace_back([&] {
      auto O = tl::cpu_device().alloc<tl::f32>(32);
      k[tl::grid(1)].on(tl::cpu_device())(O, salt);
      auto h = O.download();
      for (int i = 0; i < 32; ++i) bad += h[i] != float(i) + float(salt);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  auto after = tl::stats();
  EXPECT_EQ(after.traces - before.traces, 1u);
  EXPECT_EQ(after.compiles + after.disk_hits - before.compiles - before.disk_hits, 1u);
}

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--child") {
    int salt = std::atoi(argv[2]), threads = std::atoi(argv[3]);
    std::atomic<int> failures{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&] {
        try {
          failures += launch_once(salt);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "child launch failed: %s\n", e.what());
          ++failures;
        }
      });
    for (auto& t : ts) t.join();
    auto s = tl::stats();
    std::ofstream(argv[4]) << s.compiles << " " << s.disk_hits << " " << failures.load() << "\n";
    return 0;
  }
  std::srand(unsigned(getpid()) ^ unsigned(time(nullptr)));
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
