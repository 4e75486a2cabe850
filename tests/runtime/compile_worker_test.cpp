// GPU compiles in a worker process (codegen/compile_worker.hpp): LLVM failing fatally
// inside a compile (report_fatal_error, a crash, an abort as an unreachable ends) is a
// tl::compile_error naming the kernel and LLVM's message, and the same process then
// compiles that kernel and launches others. The worker's code is the in-process code, byte
// for byte, and threads compiling at once each get theirs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
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
