// The environment knobs (README.md lists them all) and debug logging.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tl::env {

inline std::string get(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

inline bool flag(const char* name) {
  std::string v = get(name);
  return !v.empty() && v != "0" && v != "false" && v != "off";
}

// TL_DEBUG=1: one line per compile, cache decision and device choice on stderr.
template <class... A> void debug(fmt::format_string<A...> f, A&&... args) {
  static const bool on = flag("TL_DEBUG");
  if (on) std::fprintf(stderr, "tl: %s\n", fmt::format(f, std::forward<A>(args)...).c_str());
}

}  // namespace tl::env
