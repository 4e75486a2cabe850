// A compiled kernel as a cache entry, both ways, in one place: the schema of the metadata
// the launch path writes is the schema it checks when it reads an entry back.
//
// Reading is strict because an entry on disk is outside tl's control: the checksum only
// proves the bytes are the ones some writer wrote, and a hostile or buggy writer can put
// any JSON under a valid checksum. A field of the wrong type, out of its range, missing or
// unknown makes the whole entry unreadable (the caller then rebuilds it), never a JSON
// exception in the user's launch nor a wrong launch shape.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/target.hpp"
#include "runtime/cache.hpp"

namespace tl::runtime {

// What a kernel was compiled from, for the entry's metadata (tl-cache shows it).
struct KernelOrigin {
  std::string kernel;
  std::string file;
  unsigned line = 0;
  std::string target;       // "cpu", "gfx942", "sm_90"
  std::string target_full;  // TargetDesc::str()
  std::vector<std::string> signature;
  std::string constants;    // the trace-time constants' bytes (hex in the entry)
  codegen::CompileOptions options;
  std::string compiler;     // TL_VERSION
};

// The metadata of a fresh compile.
nlohmann::json kernel_meta(const KernelOrigin& origin, const codegen::CodeObject& code);
// The entry to store: `meta` (kernel_meta's, maybe amended) and the code's artifacts.
cache::Entry kernel_entry(const std::string& key, const nlohmann::json& meta, const codegen::CodeObject& code);
// The code object in an entry, or nullopt, with the reason in `why`, if any field is
// missing, of the wrong type or out of range, or any is there that kernel_meta never
// writes. Never throws for a bad entry.
std::optional<codegen::CodeObject> read_kernel_entry(const cache::Entry& e, std::string* why = nullptr);

}  // namespace tl::runtime
