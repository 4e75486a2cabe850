// The compiler's identity, which enters every cache key and every stored tuning decision:
// the version and git revision (for people reading `tl-cache show`) and a hash of every
// source libtl was built from, taken at build time (cmake/compiler_identity.cmake). The
// revision alone is the one at configure time: a rebuild of uncommitted compiler changes
// would reuse the entries the previous code compiled. With the hash, any change of the
// compiler's code, committed or not, misses the cache.
#pragma once

#include <string>

namespace tl::detail {

// "0.1.0-<git revision>+src.<16 hex digits>", or the override below.
std::string compiler_identity();
// The source hash alone (16 hex digits).
std::string compiler_source_hash();
// Tests: act as another build of the compiler ("" restores this build's identity).
void set_compiler_identity_for_testing(std::string identity);

}  // namespace tl::detail
