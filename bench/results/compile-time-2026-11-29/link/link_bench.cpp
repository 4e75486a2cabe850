#include "codegen/amdgpu/code_object.hpp"
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <algorithm>
#include <sys/resource.h>
int main(int argc, char** argv) {
  std::ifstream f(argv[1], std::ios::binary);
  std::vector<uint8_t> obj((std::istreambuf_iterator<char>(f)), {});
  int n = argc > 2 ? atoi(argv[2]) : 50;
  std::vector<double> t;
  std::vector<uint8_t> out;
  for (int i = 0; i < n; ++i) {
    auto a = std::chrono::steady_clock::now();
    out = tl::amd::link_hsaco(obj);
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  rusage u; getrusage(RUSAGE_SELF, &u);
  printf("median %.2f ms min %.2f  cpu total %.1f ms  out %zu bytes\n", t[n/2], t[0], (u.ru_utime.tv_sec+u.ru_stime.tv_sec)*1e3+(u.ru_utime.tv_usec+u.ru_stime.tv_usec)*1e-3, out.size());
  if (argc > 3) { std::ofstream o(argv[3], std::ios::binary); o.write((const char*)out.data(), out.size()); }
}
