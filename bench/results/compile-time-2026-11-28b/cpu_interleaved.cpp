// The CPU time (this process and its reaped compile workers: both threads of an AMD
// schedule choice) and wall time per compile of the issue-44 kernels, the
// TL_AMDGPU_REUSE_IR_PASSES values given interleaved compile by compile. Built against
// libtl like bench/compile_bench.cpp: see README.md here for the command.
#include <sys/resource.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>
#include "bench/attention_tutorial.hpp"
#include "bench/matmul_tutorial.hpp"
#include "bench/rmsnorm_row_kernel.hpp"
#include "tl/tl.hpp"
auto make_kernel() { return tlbench::rmsnorm_row_kernel(); }
double cpu_s() {
  rusage a, b;
  getrusage(RUSAGE_SELF, &a);
  getrusage(RUSAGE_CHILDREN, &b);
  auto s = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return s(a.ru_utime) + s(a.ru_stime) + s(b.ru_utime) + s(b.ru_stime);
}
int main(int argc, char** argv) {
  int n = atoi(argv[1]);
  std::vector<std::string> modes;
  for (int i = 2; i < argc; ++i) modes.push_back(argv[i]);
  setenv("TL_ALWAYS_COMPILE", "1", 1);
  auto* p = reinterpret_cast<tl::bfloat16*>(uintptr_t(1) << 20);
  std::map<std::string, std::vector<double>> cpu, wall;
  for (const char* k : {"rmsnorm", "matmul", "attention"})
    for (const char* arch : {"gfx942", "gfx950"})
      for (int i = 0; i <= n; ++i)
        for (const auto& mode : modes) {
          setenv("TL_AMDGPU_REUSE_IR_PASSES", mode.c_str(), 1);
          double c0 = cpu_s();
          auto t0 = std::chrono::steady_clock::now();
          std::string k_(k);
          if (k_ == "rmsnorm") make_kernel().compile(arch, {.num_warps = 4}, p, p, p, 4096, 1e-6f, 4096);
          else if (k_ == "matmul") matmul_tutorial::compile<tl::bf16>(arch, matmul_tutorial::Config{}, 4096, 4096, 4096);
          else attn::compile(arch, attn::Config{}, 4096, 128, false);
          double w = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          double c = (cpu_s() - c0) * 1e3;
          if (i == 0) continue;  // warm-up
          std::string key = k_ + " " + arch + " mode " + mode;
          cpu[key].push_back(c), wall[key].push_back(w);
        }
  auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  for (auto& [key, v] : cpu) printf("%-28s cpu %7.1f ms (min %7.1f)  wall %7.1f ms (min %7.1f)  n=%zu\n", key.c_str(), med(v),
                                     *std::min_element(v.begin(), v.end()), med(wall[key]),
                                     *std::min_element(wall[key].begin(), wall[key].end()), v.size());
}
