#include "codegen/amdgpu/code_object.hpp"
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <algorithm>
#include <unistd.h>
#include <sys/wait.h>
int main(int argc, char** argv) {
  std::ifstream f(argv[1], std::ios::binary);
  std::vector<uint8_t> obj((std::istreambuf_iterator<char>(f)), {});
  tl::amd::link_hsaco(obj);  // warm in the parent, as the worker's parent has linked before
  int n = atoi(argv[2]);
  int p[2]; pipe(p);
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      auto a = std::chrono::steady_clock::now();
      tl::amd::link_hsaco(obj);
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
      write(p[1], &ms, sizeof ms); _exit(0);
    }
    double ms; read(p[0], &ms, sizeof ms); waitpid(pid, nullptr, 0); t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  printf("in a fork child: median %.2f ms min %.2f\n", t[n/2], t[0]);
}
