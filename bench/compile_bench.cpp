// Time from first launch to runnable code (trace, compile, load; disk cache off), per
// target, and steady-state host time per launch of a cached kernel on the CPU beside a
// plain function call doing the same work.
//
//   build/bench/tl-bench-compile --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   build/bench/tl-bench-compile --benchmark_filter=phases_ --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "bench/attention_tutorial.hpp"
#include "bench/matmul_tutorial.hpp"
#include "bench/rmsnorm_row_kernel.hpp"
#include "samples/rmsnorm/rmsnorm.hpp"

namespace {

// The RMSNorm-size kernel of the issues: one bf16 row of 4096 per program, 4 warps.
auto make_kernel() { return tlbench::rmsnorm_row_kernel(); }

void first_launch_cpu(benchmark::State& state) {
  setenv("TL_ALWAYS_COMPILE", "1", 1);
  auto dev = tl::cpu_device();
  auto X = dev.alloc<tl::bf16>(4096 * 4), Y = dev.alloc<tl::bf16>(4096 * 4), W = dev.alloc<tl::bf16>(4096);
  for (auto _ : state) {
    auto k = make_kernel();  // a new kernel object: nothing is cached in memory
    k[tl::grid(4)].on(dev)(X, Y, W, 4096, 1e-6f, 4096);
  }
  unsetenv("TL_ALWAYS_COMPILE");
}
BENCHMARK(first_launch_cpu)->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();

// CPU seconds of the child processes still running (the persistent compile workers,
// codegen/compile_worker.hpp), from /proc/PID/stat: utime and stime, every thread's, in
// clock ticks (10 ms here; the counters below are averages over many compiles).
double live_children_cpu_s() {
  double s = 0;
  const std::string self = std::to_string(getpid());
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    std::string state, ppid, skip;
    fields >> state >> ppid;
    if (ppid != self) continue;
    for (int i = 0; i < 9; ++i) fields >> skip;  // pgrp ... cmajflt (fields 5-13)
    double utime = 0, stime = 0;
    fields >> utime >> stime;
    s += (utime + stime) / double(sysconf(_SC_CLK_TCK));
  }
  return s;
}

// CPU seconds of the child processes (the compile workers) so far: the finished ones'
// and the running ones'.
double children_cpu_s() {
  rusage r{};
  getrusage(RUSAGE_CHILDREN, &r);
  return double(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + 1e-6 * double(r.ru_utime.tv_usec + r.ru_stime.tv_usec) +
         live_children_cpu_s();
}

void compile_for(benchmark::State& state, const char* target) {
  setenv("TL_ALWAYS_COMPILE", "1", 1);
  auto* p = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  const double children0 = children_cpu_s();
  for (auto _ : state) {
    auto k = make_kernel();
    benchmark::DoNotOptimize(k.compile(target, {.num_warps = 4}, p, p, p, 4096, 1e-6f, 4096));
  }
  // The workers' CPU time, per compile (the "CPU" column is this process's alone).
  state.counters["worker_cpu_ms"] =
      benchmark::Counter(1e3 * (children_cpu_s() - children0), benchmark::Counter::kAvgIterations);
  unsetenv("TL_ALWAYS_COMPILE");
}
BENCHMARK_CAPTURE(compile_for, gfx942, "gfx942")->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
// The same compiles without the worker process GPU compiles run in (TL_COMPILE_IN_PROCESS=1,
// codegen/compile_worker.hpp): the difference is what the isolation costs a compile.
void compile_in_process(benchmark::State& state, const char* target) {
  setenv("TL_COMPILE_IN_PROCESS", "1", 1);
  compile_for(state, target);
  unsetenv("TL_COMPILE_IN_PROCESS");
}
BENCHMARK_CAPTURE(compile_in_process, gfx942, "gfx942")->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK_CAPTURE(compile_in_process, sm_90, "sm_90")->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK_CAPTURE(compile_for, gfx950, "gfx950")->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK_CAPTURE(compile_for, sm_90, "sm_90")->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();

// (Compiles are timed by the wall clock: GPU compiles run in a worker process, whose CPU
// time the benchmark's own clock does not see.)
//
// Where the compile time goes, by phase (codegen/compile_profile.hpp): each phase of the
// compile as a counter (ms per compile), beside the whole. The RMSNorm-size kernel above,
// and Triton's tutorial 03 matmul (bf16, 128x128x64, 3 stages) and tutorial 06 attention
// forward (128x64, D=128, 2 stages), at 4 warps, as the issues measure them.
// "cpu": the CPU time of a compile, ms: this process's threads and its reaped compile
// workers' and its running ones' (both threads of an AMD schedule choice), the figure that holds on a loaded
// machine, where the wall clock is the other processes' too.
double cpu_ms_with_workers() {
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  auto ms = [](const timeval& t) { return double(t.tv_sec) * 1e3 + double(t.tv_usec) * 1e-3; };
  return ms(self.ru_utime) + ms(self.ru_stime) + 1e3 * children_cpu_s();
}
template <class Compile> void compile_phases(benchmark::State& state, Compile compile) {
  setenv("TL_ALWAYS_COMPILE", "1", 1);
  std::map<std::string, double> total;
  const double cpu0 = cpu_ms_with_workers();
  for (auto _ : state) {
    const nlohmann::json meta = nlohmann::json::parse(std::string(compile()));
    for (const auto& ph : meta.at("phases_ms")) total[ph.at(0).get<std::string>()] += ph.at(1).get<double>();
  }
  total["cpu"] = cpu_ms_with_workers() - cpu0;
  for (const auto& [phase, ms] : total) state.counters[phase] = benchmark::Counter(ms, benchmark::Counter::kAvgIterations);
  unsetenv("TL_ALWAYS_COMPILE");
}
void phases_rmsnorm(benchmark::State& state, const char* target) {
  auto* p = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  compile_phases(state, [&] { return make_kernel().compile(target, {.num_warps = 4}, p, p, p, 4096, 1e-6f, 4096); });
}
void phases_matmul(benchmark::State& state, const char* target) {
  compile_phases(state, [&] { return matmul_tutorial::compile<tl::bf16>(target, matmul_tutorial::Config{}, 4096, 4096, 4096); });
}
void phases_attention(benchmark::State& state, const char* target) {
  compile_phases(state, [&] { return attn::compile(target, attn::Config{}, 4096, 128, false); });
}
BENCHMARK_CAPTURE(phases_rmsnorm, gfx942, "gfx942")->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK_CAPTURE(phases_matmul, gfx942, "gfx942")->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK_CAPTURE(phases_attention, gfx942, "gfx942")->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK_CAPTURE(phases_rmsnorm, gfx950, "gfx950")->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK_CAPTURE(phases_matmul, gfx950, "gfx950")->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();
BENCHMARK_CAPTURE(phases_attention, gfx950, "gfx950")->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();

// The coldest in-process case: each compile on a new thread, so it also builds that
// thread's TargetMachine and LLVM's per-target register tables (codegen::thread_machine).
void compile_on_new_thread(benchmark::State& state, const char* target) {
  setenv("TL_ALWAYS_COMPILE", "1", 1);
  auto* p = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  for (auto _ : state) {
    std::thread t([&] {
      auto k = make_kernel();
      benchmark::DoNotOptimize(k.compile(target, {.num_warps = 4}, p, p, p, 4096, 1e-6f, 4096));
    });
    t.join();
  }
  unsetenv("TL_ALWAYS_COMPILE");
}
BENCHMARK_CAPTURE(compile_on_new_thread, gfx942, "gfx942")->Unit(benchmark::kMillisecond)->MinTime(2.0)->UseRealTime();

void cached_launch_cpu(benchmark::State& state) {
  auto dev = tl::cpu_device();
  auto k = tl::kernel("tiny", [](tl::ptr<tl::f32> x) { tl::store(x + tl::arange(0, 16), tl::zeros<tl::f32>({16})); });
  auto X = dev.alloc<tl::f32>(16);
  k[tl::grid(1)].on(dev)(X);
  for (auto _ : state) k[tl::grid(1)].on(dev)(X);
}
BENCHMARK(cached_launch_cpu)->Unit(benchmark::kMicrosecond);

// The CPU's "bare launch": the kernel's work as a plain call of a C++ function, what no
// launcher can go under (the CPU has no driver to compare with).
__attribute__((noinline)) void store_zeros(float* x) {
  for (int i = 0; i < 16; ++i) x[i] = 0;
}
void direct_call_cpu(benchmark::State& state) {
  alignas(64) float x[16];
  for (auto _ : state) {
    store_zeros(x);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(direct_call_cpu)->Unit(benchmark::kMicrosecond);

// A grid of 64 programs: the pool's workers take part (the hand-off cost shows here).
void cached_launch_cpu_grid64(benchmark::State& state) {
  auto dev = tl::cpu_device();
  auto k = tl::kernel("tiny64", [](tl::ptr<tl::f32> x) {
    tl::store(x + tl::program_id(0) * 16 + tl::arange(0, 16), tl::zeros<tl::f32>({16}));
  });
  auto X = dev.alloc<tl::f32>(64 * 16);
  k[tl::grid(64)].on(dev)(X);
  for (auto _ : state) k[tl::grid(64)].on(dev)(X);
}
BENCHMARK(cached_launch_cpu_grid64)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
