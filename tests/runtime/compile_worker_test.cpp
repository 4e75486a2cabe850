// GPU compiles in a worker process (codegen/compile_worker.hpp): LLVM failing fatally
// inside a compile (report_fatal_error, a crash, an abort as an unreachable ends) is a
// tl::compile_error naming the kernel and LLVM's message, and the same process then
// compiles that kernel and launches others. The worker's code is the in-process code, byte
// for byte, and threads compiling at once each get theirs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "codegen/compile_worker.hpp"
#include "support/reference.hpp"
#include "support/traced_kernels.hpp"

namespace fs = std::filesystem;

namespace {

const bool g_env = [] {
  fs::path d = fs::temp_directory_path() / fmt::format("tl-worker-{}-{}", getpid(), std::rand());
  fs::create_directories(d);
  setenv("TL_CACHE_DIR", d.c_str(), 1);
  unsetenv("TL_COMPILE_IN_PROCESS");
  unsetenv("TL_TEST_COMPILE_FAULT");
  return true;
}();

auto& axpy_kernel() {
  static auto k = tl::kernel("worker_axpy", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, tl::f32 a, int n, int SALT) {
    auto i = tl::program_id(0) * 256 + tl::arange(0, 256);
    auto m = i < n;
    tl::store(y + i, tl::load(x + i, m, 0.f) * a + tl::load(y + i, m, 0.f) + float(SALT), m);
  });
  return k;
}

std::string compile_axpy(const std::string& target, int salt) {
  auto* p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  return axpy_kernel().compile(target, {.num_warps = 4}, p, p, 2.0f, 1000, salt);
}

// y = a x + y + salt on the CPU, checked against doubles.
void check_cpu_launch(int salt) {
  const int n = 1000;
  auto hx = tltest::random_floats(n), hy = tltest::random_floats(n);
  auto dev = tl::cpu_device();
  auto X = dev.alloc<tl::f32>(n), Y = dev.alloc<tl::f32>(n);
  X.upload(hx);
  Y.upload(hy);
  axpy_kernel()[tl::grid(tl::cdiv(n, 256))].on(dev)(X, Y, 2.0f, n, salt);
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) want[i] = 2.0 * hx[i] + hy[i] + salt;
  EXPECT_TRUE(tltest::near(Y.download(), want, 1e-6, 1e-6));
}

struct Fault {
  explicit Fault(const char* kind) { setenv("TL_TEST_COMPILE_FAULT", kind, 1); }
  ~Fault() { unsetenv("TL_TEST_COMPILE_FAULT"); }
};

}  // namespace

TEST(CompileWorker, AFatalLlvmFailureIsACompileErrorAndTheProcessGoesOn) {
  struct Case {
    const char* fault;
    std::vector<std::string> said;  // what the error must say
  };
  const Case cases[] = {
      {"fatal", {"LLVM failed fatally compiling it for gfx942", "injected fatal error in a pass"}},
      {"segv", {"crashed (signal 11", "compile worker"}},
      {"abort", {"crashed (signal 6", "injected unreachable executed at pass.cpp:1"}},
  };
  int salt = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.fault);
    ++salt;
    try {
      Fault fault(c.fault);
      compile_axpy("gfx942", salt);
      ADD_FAILURE() << "no error";
    } catch (const tl::compile_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("kernel 'worker_axpy'"), std::string::npos) << what;
      for (const std::string& s : c.said) EXPECT_NE(what.find(s), std::string::npos) << what;
      // At the kernel's definition in this file.
      EXPECT_NE(e.file().find("compile_worker_test.cpp"), std::string::npos) << e.file();
    }
    // The same process: the same kernel compiles, and another launches and computes.
    auto meta = nlohmann::json::parse(compile_axpy("gfx942", salt));
    EXPECT_GT(meta["report"]["vgpr"].get<int>(), 0);
    check_cpu_launch(salt);
  }
}

TEST(CompileWorker, TheWorkersCodeIsTheInProcessCode) {
  for (const char* target : {"gfx942", "sm_90"}) {
    SCOPED_TRACE(target);
    auto f1 = tltest::packed_rmsnorm_kernel(), f2 = tltest::packed_rmsnorm_kernel();
    const auto t = tl::codegen::parse_target(target);
    tl::codegen::CompileOptions o;
    const auto worker = tl::codegen::compile_in_worker(*f1, t, o);
    const auto local = tl::codegen::compile_in_process(*f2, t, o);
    EXPECT_EQ(worker.binary, local.binary);
    EXPECT_EQ(worker.report, local.report);
    EXPECT_EQ(worker.remarks, local.remarks);
    EXPECT_EQ(worker.tile_ir, local.tile_ir);
    EXPECT_EQ(worker.kernel_symbol, local.kernel_symbol);
    EXPECT_EQ(worker.block_threads, local.block_threads);
    EXPECT_EQ(worker.linker, local.linker);
    ASSERT_EQ(worker.phase_ms.size(), local.phase_ms.size());
  }
}

TEST(CompileWorker, ThreadsCompilingAtOnceEachGetTheirCode) {
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      try {
        // GPU compiles through workers, and a CPU compile in-process, side by side.
        if (i == 3) {
          check_cpu_launch(500 + i);
        } else {
          auto meta = nlohmann::json::parse(compile_axpy(i % 2 ? "gfx942" : "sm_90", 500 + i));
          if (!meta["key"].get<std::string>().empty()) ++ok;
          return;
        }
        ++ok;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 4);
}

// The worker is persistent: the compiles of one thread one after another are jobs of one
// worker process (which pays its copy-on-write faults once), idle between them.
TEST(CompileWorker, OneWorkerServesCompilesOneAfterAnother) {
  compile_axpy("gfx942", 700);
  const std::vector<int> before = tl::codegen::idle_compile_workers();
  ASSERT_FALSE(before.empty());
  for (int pid : before) EXPECT_NE(pid, getpid());
  compile_axpy("sm_90", 701);
  compile_axpy("gfx942", 702);
  EXPECT_EQ(tl::codegen::idle_compile_workers(), before);
}

// A worker killed between jobs (by the OOM killer, say) is not the next compile's error.
TEST(CompileWorker, AWorkerKilledBetweenJobsIsReplaced) {
  compile_axpy("gfx942", 710);
  const std::vector<int> killed = tl::codegen::idle_compile_workers();
  ASSERT_FALSE(killed.empty());
  for (int pid : killed) ASSERT_EQ(kill(pid, SIGKILL), 0);
  auto meta = nlohmann::json::parse(compile_axpy("gfx942", 711));
  EXPECT_GT(meta["report"]["vgpr"].get<int>(), 0);
  for (int pid : tl::codegen::idle_compile_workers())
    EXPECT_EQ(std::find(killed.begin(), killed.end(), pid), killed.end()) << pid;
  check_cpu_launch(711);
}

// A worker idle for TL_COMPILE_WORKER_IDLE_S leaves (it holds this process's pages as
// they were at its fork); the next compile gets another, whether it finds the old one
// gone or sends it the job as it leaves.
TEST(CompileWorker, AnIdleWorkerLeavesAndTheNextCompileGetsAnother) {
  setenv("TL_COMPILE_WORKER_IDLE_S", "0.2", 1);
  compile_axpy("gfx942", 720);
  unsetenv("TL_COMPILE_WORKER_IDLE_S");
  // The worker of that compile, the one idle last (the others were told 60 s).
  const std::vector<int> idle = tl::codegen::idle_compile_workers();
  ASSERT_FALSE(idle.empty());
  const int pid = idle.back();
  // Ended: a zombie until this process reaps it at its next compile.
  std::string state;
  for (int i = 0; i < 100 && state != "Z"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream stat(fmt::format("/proc/{}/stat", pid));
    std::string id, name;
    stat >> id >> name >> state;
  }
  EXPECT_EQ(state, "Z") << pid;
  auto meta = nlohmann::json::parse(compile_axpy("gfx942", 721));
  EXPECT_GT(meta["report"]["vgpr"].get<int>(), 0);
  const std::vector<int> now = tl::codegen::idle_compile_workers();
  EXPECT_EQ(std::find(now.begin(), now.end(), pid), now.end());
}

// TL_COMPILE_TIMEOUT_S kills a compile that hangs; the worker is replaced.
TEST(CompileWorker, AHungCompileIsKilledAtTheTimeout) {
  setenv("TL_COMPILE_TIMEOUT_S", "1", 1);
  const auto start = std::chrono::steady_clock::now();
  try {
    Fault fault("hang");
    compile_axpy("gfx942", 730);
    ADD_FAILURE() << "no error";
  } catch (const tl::compile_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("did not finish in 1 s (TL_COMPILE_TIMEOUT_S)"), std::string::npos) << what;
    EXPECT_NE(what.find("kernel 'worker_axpy'"), std::string::npos) << what;
  }
  unsetenv("TL_COMPILE_TIMEOUT_S");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  auto meta = nlohmann::json::parse(compile_axpy("gfx942", 730));
  EXPECT_GT(meta["report"]["vgpr"].get<int>(), 0);
}

// Threads compiling at once for AMD take a worker each, and their code is the in-process
// code, byte for byte.
TEST(CompileWorker, ThreadsAtOnceGetTheInProcessCode) {
  const auto t = tl::codegen::parse_target("gfx942");
  tl::codegen::CompileOptions o;
  auto reference = tltest::packed_rmsnorm_kernel();
  const auto local = tl::codegen::compile_in_process(*reference, t, o);
  std::vector<std::vector<uint8_t>> binaries(3);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < binaries.size(); ++i)
    threads.emplace_back([&, i] {
      try {
        auto f = tltest::packed_rmsnorm_kernel();
        binaries[i] = tl::codegen::compile_in_worker(*f, t, o).binary;
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (const auto& b : binaries) EXPECT_EQ(b, local.binary);
}

// A child the application forks compiles with workers of its own: the parent's, whose
// sockets it inherited, are not its to use.
TEST(CompileWorker, AForkedChildCompilesWithItsOwnWorkers) {
  compile_axpy("gfx942", 740);
  ASSERT_FALSE(tl::codegen::idle_compile_workers().empty());
  const std::vector<int> parents = tl::codegen::idle_compile_workers();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 0;
    try {
      if (!tl::codegen::idle_compile_workers().empty()) code = 2;  // the parent's are let go
      auto meta = nlohmann::json::parse(compile_axpy("gfx942", 741));
      if (meta["report"]["vgpr"].get<int>() <= 0) code = 3;
      for (int w : tl::codegen::idle_compile_workers())
        if (std::find(parents.begin(), parents.end(), w) != parents.end()) code = 4;
    } catch (...) {
      code = 1;
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // The parent's workers still serve it.
  EXPECT_EQ(tl::codegen::idle_compile_workers(), parents);
  compile_axpy("gfx942", 742);
}
