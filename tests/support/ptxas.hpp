// NVIDIA's own assembler on the PTX tl makes, where this machine has it (CI has no CUDA):
// the one way the compile-only tests ask whether ptxas accepts a kernel, and what
// `ptxas -v` reports (registers, spills).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tltest {

struct PtxasRun {
  bool ran = false;    // false: no ptxas here (TL_PTXAS, /usr/local/cuda/bin/ptxas, /usr/bin/ptxas)
  bool ok = true;      // it assembled
  std::string output;  // its messages (with -v: the resource report)
};

// ptxas `flags` on `ptx`, output discarded.
inline PtxasRun run_ptxas(const std::string& ptx, const std::string& flags = "-arch=sm_90a") {
  PtxasRun r;
  std::string ptxas;
  if (const char* e = std::getenv("TL_PTXAS")) ptxas = e;
  for (const char* c : {"/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"})
    if (ptxas.empty() && access(c, X_OK) == 0) ptxas = c;
  if (ptxas.empty() || access(ptxas.c_str(), X_OK) != 0) return r;
  char path[] = "/tmp/tl_ptxas_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return r;
  bool written = write(fd, ptx.data(), ptx.size()) == ssize_t(ptx.size());
  close(fd);
  r.ran = true;
  if (!written) {
    unlink(path);
    return {true, false, "could not write the PTX to a temporary file"};
  }
  if (FILE* p = popen((ptxas + " " + flags + " -o /dev/null " + path + " 2>&1").c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, p)) r.output += buf;
    r.ok = pclose(p) == 0;
  } else {
    r.ok = false;
  }
  unlink(path);
  return r;
}

// "" where ptxas assembles `ptx` for sm_90 (or is not here), else its messages.
inline std::string ptxas_errors(const std::string& ptx) {
  PtxasRun r = run_ptxas(ptx, "-arch=sm_90");
  return r.ok ? "" : "ptxas failed: " + r.output;
}

}  // namespace tltest
