// A compiled kernel as a cache entry (kernel_entry.hpp says why reading is strict). The
// writer and the checker sit side by side so that a field added to one is seen missing
// from the other: an entry the checker refuses is rebuilt on every launch, which the JIT
// cache tests notice as a compile where a disk hit was expected.
#include "runtime/kernel_entry.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include <fmt/format.h>

namespace tl::runtime {

nlohmann::json kernel_meta(const KernelOrigin& origin, const codegen::CodeObject& code) {
  nlohmann::json m;
  m["kernel"] = origin.kernel;
  m["source"] = {{"file", origin.file}, {"line", origin.line}};
  m["target"] = origin.target;
  m["target_full"] = origin.target_full;
  m["signature"] = origin.signature;
  std::string hex;
  for (unsigned char c : origin.constants) hex += fmt::format("{:02x}", c);
  m["constants_hex"] = hex;
  const codegen::CompileOptions& o = origin.options;
  m["options"] = {{"num_warps", o.num_warps}, {"num_stages", o.num_stages}, {"waves_per_eu", o.waves_per_eu},
                  {"bounds_check", o.bounds_check}, {"matrix_instr_nonkdim", o.matrix_instr_nonkdim}, {"kpack", o.kpack},
                  {"mma_version", o.mma_version}, {"enable_fp_fusion", o.enable_fp_fusion}};
  m["report"] = code.report;
  m["remarks"] = code.remarks;
  m["format"] = code.format;
  m["kernel_symbol"] = code.kernel_symbol;
  m["block_threads"] = code.block_threads;
  m["shared_bytes"] = code.shared_bytes;
  m["compile_ms"] = code.compile_ms;
  // An array of [phase, ms], in pipeline order (a JSON object would sort the phases).
  m["phases_ms"] = nlohmann::json::array();
  for (const auto& [phase, ms] : code.phase_ms) m["phases_ms"].push_back({phase, ms});
  m["code_bytes"] = code.binary.size();
  m["compiler"] = origin.compiler;
  if (!code.linker.empty())
    m["linker"] = {{"name", code.linker}, {"version", code.linker_version}, {"reason", code.linker_reason}};
  return m;
}

cache::Entry kernel_entry(const std::string& key, const nlohmann::json& meta, const codegen::CodeObject& code) {
  cache::Entry e;
  e.key = key;
  e.meta = meta;
  e.artifacts["code"] = code.binary;
  e.artifacts["tile_ir"] = std::vector<uint8_t>(code.tile_ir.begin(), code.tile_ir.end());
  e.artifacts["llvm_ir"] = std::vector<uint8_t>(code.llvm_ir.begin(), code.llvm_ir.end());
  return e;
}

namespace {

// The first problem found, as a message for TL_DEBUG. Each check takes the JSON node and
// only reads it as the type it has just tested, so no nlohmann accessor can throw.
class Checker {
 public:
  explicit Checker(const nlohmann::json& root) : root_(root) {}
  const std::string& problem() const { return problem_; }
  bool ok() const { return problem_.empty(); }

  // The member `k` of `obj` (the root when obj is null); records a missing key.
  const nlohmann::json* member(const char* k, const nlohmann::json* obj = nullptr) {
    const nlohmann::json& o = obj ? *obj : root_;
    auto it = o.find(k);
    if (it == o.end()) return fail(fmt::format("'{}' is missing", k)), nullptr;
    return &*it;
  }
  std::string text(const char* k, bool non_empty, const nlohmann::json* obj = nullptr) {
    const nlohmann::json* j = member(k, obj);
    if (!j) return {};
    if (!j->is_string()) return fail(fmt::format("'{}' is not a string", k)), std::string();
    const std::string& s = j->get_ref<const std::string&>();
    if (non_empty && s.empty()) fail(fmt::format("'{}' is empty", k));
    return s;
  }
  // An integer in [lo, hi], from a JSON integer (signed or unsigned) only: 4.0 or "4" is a
  // sign of a writer that is not kernel_meta.
  int64_t integer(const nlohmann::json& j, const std::string& k, int64_t lo, int64_t hi) {
    int64_t v = 0;
    if (j.is_number_unsigned()) {
      uint64_t u = j.get<uint64_t>();
      if (u > uint64_t(std::numeric_limits<int64_t>::max())) return fail(fmt::format("'{}' is out of range", k)), 0;
      v = int64_t(u);
    } else if (j.is_number_integer()) {
      v = j.get<int64_t>();
    } else {
      return fail(fmt::format("'{}' is not an integer", k)), 0;
    }
    if (v < lo || v > hi) return fail(fmt::format("'{}' is {}, outside [{}, {}]", k, v, lo, hi)), 0;
    return v;
  }
  int64_t integer(const char* k, int64_t lo, int64_t hi, const nlohmann::json* obj = nullptr) {
    const nlohmann::json* j = member(k, obj);
    return j ? integer(*j, k, lo, hi) : 0;
  }
  const nlohmann::json* object(const char* k, const nlohmann::json* obj = nullptr) {
    const nlohmann::json* j = member(k, obj);
    if (j && !j->is_object()) return fail(fmt::format("'{}' is not an object", k)), nullptr;
    return j;
  }
  std::vector<std::string> strings(const char* k) {
    std::vector<std::string> out;
    const nlohmann::json* j = member(k);
    if (!j) return out;
    if (!j->is_array()) return fail(fmt::format("'{}' is not an array", k)), out;
    for (const auto& s : *j) {
      if (!s.is_string()) return fail(fmt::format("'{}' holds a non-string", k)), out;
      out.push_back(s.get<std::string>());
    }
    return out;
  }
  // Members of `obj` other than `known`: a writer that is not kernel_meta.
  void only(const nlohmann::json& obj, const std::set<std::string>& known, const char* where) {
    for (auto it = obj.begin(); it != obj.end(); ++it)
      if (!known.count(it.key())) return fail(fmt::format("unknown field '{}' in {}", it.key(), where));
  }
  void fail(std::string why) {
    if (problem_.empty()) problem_ = std::move(why);
  }

 private:
  const nlohmann::json& root_;
  std::string problem_;
};

constexpr int64_t kIntMax = std::numeric_limits<int>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

std::optional<codegen::CodeObject> check(const cache::Entry& e, Checker& c) {
  const nlohmann::json& m = e.meta;
  if (!m.is_object()) return c.fail("the metadata is not an object"), std::nullopt;
  // What kernel_meta writes, then what DiskCache::store and load add.
  c.only(m,
         {"kernel", "source", "target", "target_full", "signature", "constants_hex", "options", "report", "remarks",
          "remark_ops", "format", "kernel_symbol", "block_threads", "shared_bytes", "compile_ms", "phases_ms", "code_bytes", "compiler", "linker",
          "created", "last_used", "hits"},
         "the metadata");
  codegen::CodeObject code;
  c.text("kernel", true);
  if (const nlohmann::json* s = c.object("source")) {
    c.only(*s, {"file", "line"}, "'source'");
    c.text("file", false, s);
    c.integer("line", 0, std::numeric_limits<unsigned>::max(), s);
  }
  c.text("target", true);
  c.text("target_full", true);
  c.strings("signature");
  std::string hex = c.text("constants_hex", false);
  if (hex.size() % 2 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    c.fail("'constants_hex' is not lowercase hex bytes");
  if (const nlohmann::json* o = c.object("options")) {
    // The ranges check_options (runtime/launch.cpp) enforces on a launch.
    c.only(*o, {"num_warps", "num_stages", "waves_per_eu", "bounds_check", "matrix_instr_nonkdim", "kpack", "mma_version",
                "enable_fp_fusion"},
           "'options'");
    int64_t warps = c.integer("num_warps", 1, 32, o);
    if (warps & (warps - 1)) c.fail("'num_warps' is not a power of two");
    c.integer("num_stages", 1, 8, o);
    c.integer("waves_per_eu", 0, 16, o);
    if (const nlohmann::json* b = c.member("bounds_check", o); b && !b->is_boolean())
      c.fail("'bounds_check' is not a boolean");
    if (const nlohmann::json* b = c.member("enable_fp_fusion", o); b && !b->is_boolean())
      c.fail("'enable_fp_fusion' is not a boolean");
    int64_t nonkdim = c.integer("matrix_instr_nonkdim", 0, 32, o);
    if (nonkdim != 0 && nonkdim != 16 && nonkdim != 32) c.fail("'matrix_instr_nonkdim' is not 0, 16 or 32");
    c.integer("kpack", 1, 2, o);
    if (c.member("mma_version", o)) {
      int64_t v = c.integer("mma_version", 0, 3, o);
      if (v == 1) c.fail("'mma_version' is not 0, 2 or 3");
    }
  }
  if (const nlohmann::json* r = c.object("report"))
    for (auto it = r->begin(); it != r->end(); ++it) {
      // Resource counts; the one a launch passes to the driver must fit its u32.
      const int64_t hi = it.key() == "dynamic_shared_bytes" ? int64_t(UINT32_MAX) : kInt64Max;
      code.report[it.key()] = c.integer(it.value(), "report." + it.key(), 0, hi);
    }
  code.remarks = c.strings("remarks");
  // (runtime/launch.cpp: for each remark, the op index of each location it names, or -1)
  if (auto it = m.find("remark_ops"); it != m.end()) {
    const nlohmann::json* ops = &*it;
    bool ok = ops->is_array() && ops->size() == code.remarks.size();
    for (size_t i = 0; ok && i < ops->size(); ++i) {
      ok = (*ops)[i].is_array();
      for (size_t j = 0; ok && j < (*ops)[i].size(); ++j)
        ok = (*ops)[i][j].is_number_integer() && (*ops)[i][j].get<int64_t>() >= -1 &&
             (*ops)[i][j].get<int64_t>() <= kIntMax;
    }
    if (!ok) c.fail("'remark_ops' is not, for each remark, a list of op indices");
  }
  code.format = c.text("format", false);
  if (c.ok() && code.format != "elf" && code.format != "hsaco" && code.format != "ptx")
    c.fail(fmt::format("'format' is '{}', not elf, hsaco or ptx", code.format));
  code.kernel_symbol = c.text("kernel_symbol", true);
  code.block_threads = int(c.integer("block_threads", 1, 1024));
  code.shared_bytes = int(c.integer("shared_bytes", 0, kIntMax));
  if (const nlohmann::json* ms = c.member("compile_ms")) {
    if (!ms->is_number() || !std::isfinite(ms->get<double>()) || ms->get<double>() < 0)
      c.fail("'compile_ms' is not a finite number >= 0");
    else
      code.compile_ms = ms->get<double>();
  }
  if (auto it = m.find("phases_ms"); it != m.end()) {
    bool ok = it->is_array();
    for (size_t i = 0; ok && i < it->size(); ++i) {
      const nlohmann::json& p = (*it)[i];
      ok = p.is_array() && p.size() == 2 && p[0].is_string() && p[1].is_number() && std::isfinite(p[1].get<double>()) &&
           p[1].get<double>() >= 0;
      if (ok) code.phase_ms.emplace_back(p[0].get<std::string>(), p[1].get<double>());
    }
    if (!ok) c.fail("'phases_ms' is not a list of [phase, milliseconds >= 0]");
  }
  const int64_t code_bytes = c.integer("code_bytes", 1, kInt64Max);
  c.text("compiler", true);
  if (m.contains("linker")) {
    if (const nlohmann::json* l = c.object("linker")) {
      c.only(*l, {"name", "version", "reason"}, "'linker'");
      code.linker = c.text("name", true, l);
      code.linker_version = c.text("version", false, l);
      code.linker_reason = c.text("reason", false, l);
    }
  }
  c.integer("created", 0, kInt64Max);
  for (const char* k : {"last_used", "hits"})
    if (m.contains(k)) c.integer(k, 0, kInt64Max);
  if (!c.ok()) return std::nullopt;

  for (const auto& [name, data] : e.artifacts)
    if (name != "code" && name != "tile_ir" && name != "llvm_ir" && name != "isa")
      return c.fail(fmt::format("unknown artifact '{}'", name)), std::nullopt;
  auto art = [&](const char* n) -> const std::vector<uint8_t>* {
    auto it = e.artifacts.find(n);
    if (it == e.artifacts.end()) return c.fail(fmt::format("artifact '{}' is missing", n)), nullptr;
    return &it->second;
  };
  const auto* bin = art("code");
  const auto* tir = art("tile_ir");
  const auto* lir = art("llvm_ir");
  if (!c.ok()) return std::nullopt;
  if (int64_t(bin->size()) != code_bytes)
    return c.fail(fmt::format("'code_bytes' is {}, the code is {} bytes", code_bytes, bin->size())), std::nullopt;
  code.binary = *bin;
  code.tile_ir.assign(tir->begin(), tir->end());
  code.llvm_ir.assign(lir->begin(), lir->end());
  return code;
}

}  // namespace

std::optional<codegen::CodeObject> read_kernel_entry(const cache::Entry& e, std::string* why) {
  Checker c(e.meta);
  std::optional<codegen::CodeObject> code;
  try {
    code = check(e, c);
  } catch (const std::exception& x) {  // bad_alloc copying the code: not an entry to use
    c.fail(x.what());
    code.reset();
  }
  if (why) *why = c.problem();
  return code;
}

}  // namespace tl::runtime
