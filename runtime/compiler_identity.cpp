// See compiler_identity.hpp. kCompilerSourceHash is generated at build time
// (build/generated/compiler_identity_hash.cpp, from cmake/compiler_identity.cmake).
#include "runtime/compiler_identity.hpp"

#include <mutex>

#ifndef TL_VERSION
#define TL_VERSION "unknown"
#endif

namespace tl::detail {

extern const char kCompilerSourceHash[];

namespace {
std::mutex g_mu;
std::string& override_identity() {
  static std::string s;
  return s;
}
}  // namespace

std::string compiler_source_hash() { return kCompilerSourceHash; }

std::string compiler_identity() {
  {
    std::lock_guard lock(g_mu);
    if (!override_identity().empty()) return override_identity();
  }
  return std::string(TL_VERSION) + "+src." + kCompilerSourceHash;
}

void set_compiler_identity_for_testing(std::string identity) {
  std::lock_guard lock(g_mu);
  override_identity() = std::move(identity);
}

}  // namespace tl::detail
