// Compiling traced kernels for a named target in the lowering tests, and counting what
// the disassembly or PTX holds.
#pragma once

#include <regex>
#include <string>
#include <utility>
#include <vector>
#include <algorithm>

#include <nlohmann/json.hpp>

#include "codegen/target.hpp"
#include "runtime/cache.hpp"

namespace tltest {

// A launch's compile options: num_warps and num_stages, the rest the defaults.
inline tl::codegen::CompileOptions launch_options(int num_warps, int num_stages) {
  tl::codegen::CompileOptions o;
  o.num_warps = num_warps;
  o.num_stages = num_stages;
  return o;
}

inline tl::codegen::CodeObject compile_for(const std::string& arch, tl::ir::Function& f, int num_warps = 4) {
  tl::codegen::CompileOptions o;
  o.num_warps = num_warps;
  return tl::codegen::compile(f, tl::codegen::parse_target(arch), o);
}

inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// The PTX of a kernel's (first) loop: from its label to the branch back to it.
inline std::string ptx_loop(const std::string& ptx) {
  std::regex back(R"(bra(\.uni)?\s+(\$L__BB\d+_\d+);)");
  for (auto it = std::sregex_iterator(ptx.begin(), ptx.end(), back); it != std::sregex_iterator(); ++it) {
    size_t label = ptx.find((*it)[2].str() + ":");
    if (label != std::string::npos && label < size_t(it->position())) return ptx.substr(label, size_t(it->position()) - label);
  }
  return "";
}

// The ISA text (PTX, or AMD disassembly) of what a kernel's compile() made, from the
// cache entry its metadata names.
inline std::string isa_of_compiled(const std::string& meta) {
  auto entry = tl::cache::DiskCache::global().load(nlohmann::json::parse(meta).at("key").get<std::string>());
  if (!entry) throw std::runtime_error("no cache entry for " + meta);
  return tl::cache::isa_provider()(*entry);
}

// An AMD disassembly split at its loop: what precedes the loop's first instruction (the
// prologue), and the loop (from the target of its longest backward branch to that
// branch). Each line of amd::disassemble ends in "// <address>: <encoding>"; a branch's
// operand is a signed 16-bit count of dwords from the next instruction.
struct AmdLoopSplit {
  std::string before, loop;
};
inline AmdLoopSplit amd_split_at_loop(const std::string& dis) {
  std::vector<std::pair<uint64_t, std::string>> lines;
  std::regex addr_re(R"(// ([0-9A-F]+):)");
  size_t start = 0;
  while (start < dis.size()) {
    size_t end = dis.find('\n', start);
    if (end == std::string::npos) end = dis.size();
    std::string line = dis.substr(start, end - start);
    std::smatch m;
    if (std::regex_search(line, m, addr_re)) lines.push_back({std::stoull(m[1].str(), nullptr, 16), line});
    start = end + 1;
  }
  std::regex branch_re(R"(s_(?:c?branch\w*)\s+(\d+))");
  uint64_t lo = 0, hi = 0;
  for (auto& [addr, line] : lines) {
    std::smatch m;
    if (!std::regex_search(line, m, branch_re)) continue;
    int simm = std::stoi(m[1].str());
    if (simm < 32768) continue;  // forward
    uint64_t target = addr + 4 + uint64_t(int64_t(simm - 65536) * 4);
    if (hi - lo < addr - target) lo = target, hi = addr;
  }
  AmdLoopSplit s;
  for (auto& [addr, line] : lines) {
    if (addr < lo) s.before += line + "\n";
    else if (addr <= hi) s.loop += line + "\n";
  }
  return s;
}
inline std::string amd_loop(const std::string& dis) { return amd_split_at_loop(dis).loop; }

// The largest n of the text's `s_waitcnt vmcnt(n)` (-1: none).
inline int largest_vmcnt(const std::string& text) {
  int n = -1;
  std::regex re(R"(vmcnt\((\d+)\))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    n = std::max(n, std::stoi((*it)[1].str()));
  return n;
}

}  // namespace tltest
