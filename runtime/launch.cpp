// From a launch to running code: check the launch, find the specialization (trace and
// compile it once, even when many threads launch it first at the same moment), go
// through the on-disk cache, load the code object on the device, and launch it.
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <regex>
#include <shared_mutex>
#include <string_view>
#include <unordered_map>

#include "codegen/compile_profile.hpp"
#include "codegen/compile_worker.hpp"
#include "codegen/cpu/limits.hpp"
#include "codegen/gpu/capabilities.hpp"
#include "codegen/ir/ir.hpp"
#include "codegen/target.hpp"
#include "dsl/src/trace.hpp"
#include "runtime/cache.hpp"
#include "runtime/compiler_identity.hpp"
#include "runtime/cuda_api.hpp"
#include "runtime/device.hpp"
#include "runtime/env.hpp"
#include "runtime/kernel_entry.hpp"
#include "runtime/tensor_map.hpp"
#include "tl/kernel.hpp"
#include "tl/numeric.hpp"

namespace tl {

namespace {
std::atomic<uint64_t> g_traces{0}, g_compiles{0}, g_disk_hits{0}, g_launches{0};

// The launch being traced on this thread: declare_argument reads its arguments to
// specialize on pointer alignment and on integers equal to 1, as Triton does.
thread_local std::span<const detail::ArgValue> t_args;

// The specializations this thread is tracing and compiling, innermost last: a kernel whose
// body launches (or compiles) the very specialization being traced would wait for its own
// trace (a launch: the specialization's lock, held by this thread) or trace itself forever
// (a compile). Kernels launched at trace time for other specializations nest normally.
thread_local std::vector<std::string> t_building;

struct Building {
  explicit Building(std::string key) { t_building.push_back(std::move(key)); }
  ~Building() { t_building.pop_back(); }
  static bool active(const std::string& key) {
    return std::find(t_building.begin(), t_building.end(), key) != t_building.end();
  }
};
}  // namespace

jit_stats stats() { return {g_traces.load(), g_compiles.load(), g_disk_hits.load(), g_launches.load()}; }

namespace detail {

void scalar_bits(DType d, double f, int64_t i, uint64_t& bits) {
  bits = 0;
  auto put = [&](auto v) { std::memcpy(&bits, &v, sizeof(v)); };
  switch (d) {
    case DType::i1: put(uint8_t(i != 0)); break;
    case DType::i8: case DType::u8: put(uint8_t(i)); break;
    case DType::i16: case DType::u16: put(uint16_t(i)); break;
    case DType::i32: case DType::u32: put(uint32_t(i)); break;
    case DType::i64: case DType::u64: put(uint64_t(i)); break;
    case DType::f16: put(to_f16(f).bits); break;
    case DType::bf16: put(to_bf16(f).bits); break;
    case DType::f32: put(float(f)); break;
    case DType::f64: put(f); break;
    default:
      if (is_fp8(d)) put(to_fp8(d, f));
      break;
  }
}

namespace {
// Triton's AMD `tt.pointer_range = 32` specialization: a pointer whose allocation, from it
// on, is known to hold fewer than 2 GiB (codegen/gpu/capabilities.hpp: kBufferNumRecords).
bool small_range(const ArgValue& a) { return a.range_bytes > 0 && a.range_bytes <= 0x7FFFFFFEull; }
}  // namespace

ir::Value* declare_argument(int index, DType dtype, bool is_pointer, const pointer_desc& pointee) {
  Trace& t = Trace::current(std::source_location::current());
  const ArgValue* a = index < int(t_args.size()) ? &t_args[index] : nullptr;
  bool div16 = false;
  if (a && is_pointer) div16 = a->bits % 16 == 0;
  if (a && !is_pointer && is_int(dtype) && dtype != DType::i1) div16 = int64_t(a->bits) % 16 == 0;
  ir::Type type{is_pointer ? DType::ptr : dtype, dtype, {}};
  if (is_pointer && pointee.pointee_levels > 0) type.pointee_levels = pointee.pointee_levels, type.element = pointee.element;
  ir::Value* v = t.add_argument(type, fmt::format("arg{}", index), div16, a && is_pointer && small_range(*a));
  // An integer argument equal to 1 becomes the constant 1 (strides of contiguous rows).
  if (a && !is_pointer && is_int(dtype) && dtype != DType::i1 && a->bits == 1)
    return constant(dtype, 1.0, 1, std::source_location::current());
  return v;
}

ir::Value* declare_tensor_map_argument(int index) {
  Trace& t = Trace::current(std::source_location::current());
  if (index >= int(t_args.size()) || t_args[size_t(index)].trace_time) return nullptr;
  // (the value is the map's address: a generic pointer to its 128 bytes)
  ir::Value* v = t.add_argument(ir::Type{DType::ptr, DType::u8, {}}, fmt::format("arg{}", index), false);
  t.mark_tensor_map(v);
  return v;
}

namespace {

// A compiled and loaded specialization.
struct Specialization {
  std::mutex once;  // held while tracing and compiling: later launchers wait, then reuse
  std::atomic<bool> ready{false};
  codegen::CodeObject code;
  std::unique_ptr<runtime::LoadedKernel> loaded;
};

// What declare_argument reads from a run-time argument, as one letter of the key: a
// pointer's 16-byte alignment and small range, an integer's divisibility by 16 or value 1.
char specialized_as(const ArgValue& a) {
  if (a.tensor_map) return 'M';
  if (a.is_pointer) return a.bits % 16 == 0 ? (small_range(a) ? 'B' : 'A') : (small_range(a) ? 'b' : 'a');
  if (is_int(a.dtype) && a.dtype != DType::i1) return a.bits == 1 ? '1' : int64_t(a.bits) % 16 == 0 ? 'D' : 'd';
  return 's';
}

std::string spec_key(const LaunchRequest& r, const codegen::TargetDesc& target, const codegen::CompileOptions& o) {
  std::string k = target.str();
  k += '|';
  k += o.key();
  k += '|';
  for (const ArgValue& a : r.args)
    if (!a.trace_time) k += specialized_as(a);  // (a trace-time constant's value is in r.constants)
  k += '|';
  k += r.constants;
  return k;
}

codegen::CompileOptions compile_options(const launch_options& o, const codegen::TargetDesc& target) {
  codegen::CompileOptions c;
  c.num_warps = o.num_warps;
  c.num_stages = o.num_stages;
  c.waves_per_eu = target.kind == codegen::TargetDesc::amdgpu ? o.waves_per_eu : 0;
  c.bounds_check = target.kind == codegen::TargetDesc::cpu && (o.bounds_check || env::flag("TL_BOUNDS_CHECK"));
  if (target.kind == codegen::TargetDesc::amdgpu) c.matrix_instr_nonkdim = o.matrix_instr_nonkdim, c.kpack = o.kpack;
  if (target.kind == codegen::TargetDesc::nvptx) c.mma_version = o.mma_version;
  c.enable_fp_fusion = o.enable_fp_fusion;
  return c;
}

void check_options(const launch_options& o, const std::string& kernel, const std::source_location& at,
                   const codegen::TargetDesc& target) {
  auto fail = [&](std::string what) { throw launch_error(std::move(what), at.file_name(), at.line()); };
  // A program is at most 1024 threads on every GPU: 16 waves of 64 on CDNA, 32 warps of
  // 32 on NVIDIA (and RDNA). The CPU runs a program as one thread, so any count is shaped
  // like a GPU's; it takes NVIDIA's limit.
  const int lanes = target.kind == codegen::TargetDesc::cpu ? 32 : target.wave_size;
  const int max_warps = 1024 / lanes;
  if (o.num_warps < 1 || o.num_warps > max_warps || (o.num_warps & (o.num_warps - 1)))
    fail(fmt::format("kernel '{}': num_warps must be a power of two from 1 to {} ({} lanes each, at most 1024 "
                     "threads) on {}, got {}",
                     kernel, max_warps, lanes, target.kind == codegen::TargetDesc::cpu ? "cpu" : target.arch,
                     o.num_warps));
  if (o.num_stages < 1 || o.num_stages > 8)
    fail(fmt::format("kernel '{}': num_stages must be 1 to 8, got {}", kernel, o.num_stages));
  if (o.waves_per_eu < 0 || o.waves_per_eu > 16)
    fail(fmt::format("kernel '{}': waves_per_eu must be 0 to 16, got {}", kernel, o.waves_per_eu));
  if (o.matrix_instr_nonkdim != 0 && o.matrix_instr_nonkdim != 16 && o.matrix_instr_nonkdim != 32)
    fail(fmt::format("kernel '{}': matrix_instr_nonkdim must be 0 (tl chooses), 16 or 32, got {}", kernel,
                     o.matrix_instr_nonkdim));
  if (o.kpack != 1 && o.kpack != 2) fail(fmt::format("kernel '{}': kpack must be 1 or 2, got {}", kernel, o.kpack));
  if (o.mma_version != 0 && o.mma_version != 2 && o.mma_version != 3)
    fail(fmt::format("kernel '{}': mma_version must be 0 (tl chooses), 2 (mma.sync) or 3 (wgmma), got {}", kernel,
                     o.mma_version));
}

// Remarks name source lines (`pipelined: loop at f.cpp:721`), but the cache key leaves
// locations out, so that one entry serves every trace of the same program wherever its
// lines now are. The entry keeps, beside each remark, the ops its locations are those of
// (`remark_ops`: for each `file:line` in it, in order, the index of the first op of the
// traced function, pre-order, at that location; -1 for none), and a hit renders them
// again with the lines of the trace that hit.
const std::regex& remark_location() {
  static const std::regex re(R"(([A-Za-z0-9_+\-]+(\.[A-Za-z0-9_+\-]+)+):(\d+))");
  return re;
}

std::vector<ir::SrcLoc> op_locations(ir::Function& f) {
  std::vector<ir::SrcLoc> locs;
  ir::walk(f.body, [&](ir::Operation& op) { locs.push_back(op.loc); });
  return locs;
}

nlohmann::json remark_ops(const std::vector<std::string>& remarks, const std::vector<ir::SrcLoc>& locs) {
  std::unordered_map<std::string, int> first;
  for (size_t i = 0; i < locs.size(); ++i) first.emplace(ir::short_location(locs[i]), int(i));
  nlohmann::json all = nlohmann::json::array();
  for (const std::string& r : remarks) {
    nlohmann::json ops = nlohmann::json::array();
    for (auto it = std::sregex_iterator(r.begin(), r.end(), remark_location()); it != std::sregex_iterator(); ++it) {
      auto f = first.find(it->str());
      ops.push_back(f == first.end() ? -1 : f->second);
    }
    all.push_back(std::move(ops));
  }
  return all;
}

// The remarks of a cache entry with the locations of this trace (`locs`) where the entry
// says which op each names; a remark without that record is left as it was.
std::vector<std::string> remarks_for_trace(const std::vector<std::string>& remarks, const nlohmann::json& ops,
                                           const std::vector<ir::SrcLoc>& locs) {
  if (!ops.is_array() || ops.size() != remarks.size()) return remarks;
  std::vector<std::string> out;
  for (size_t i = 0; i < remarks.size(); ++i) {
    const std::string& r = remarks[i];
    const nlohmann::json& o = ops[i];
    std::string s;
    size_t from = 0, k = 0;
    for (auto it = std::sregex_iterator(r.begin(), r.end(), remark_location()); it != std::sregex_iterator();
         ++it, ++k) {
      s += r.substr(from, size_t(it->position()) - from);
      from = size_t(it->position() + it->length());
      const nlohmann::json* idx = k < o.size() ? &o[k] : nullptr;
      if (idx && idx->is_number_integer() && idx->get<int64_t>() >= 0 && idx->get<int64_t>() < int64_t(locs.size()))
        s += ir::short_location(locs[size_t(idx->get<int64_t>())]);
      else
        s += it->str();
    }
    out.push_back(s + r.substr(from));
  }
  return out;
}

// Trace, then find the code object in the disk cache or compile it (and store it).
// Returns the cache key and the metadata with the code object.
struct Built {
  codegen::CodeObject code;
  nlohmann::json meta;
  std::string key;
  bool hit = false;  // from the disk cache; else compiled and not yet stored (store())
  std::shared_ptr<void> key_hold;  // hold_key's, until the entry is stored
};

// Builds of one cache key in this process, one at a time: the first compiles, loads and
// stores the entry, and the others, waiting, then find it on disk. Specializations are per
// kernel object and per device, so the same program's first launches on several GPUs of
// one target at once (a thread per device), or from two kernel objects of one body, would
// otherwise each compile it. Held from the disk lookup until the entry is stored (the
// caller drops Built::key_hold); traces, and so a launch nested in one, come before it.
std::shared_ptr<void> hold_key(const std::string& key) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::weak_ptr<std::mutex>> held;
  std::shared_ptr<std::mutex> m;
  {
    std::lock_guard lock(mu);
    if (held.size() > 4096) std::erase_if(held, [](const auto& kv) { return kv.second.expired(); });
    std::weak_ptr<std::mutex>& w = held[key];
    m = w.lock();
    if (!m) w = m = std::make_shared<std::mutex>();
  }
  m->lock();
  return std::shared_ptr<void>(m.get(), [m](void*) { m->unlock(); });
}

// Stores a compiled (or amended) specialization in the disk cache.
void store(const Built& b) { cache::DiskCache::global().store(runtime::kernel_entry(b.key, b.meta, b.code)); }

// Adds what the device says about the loaded code (NVIDIA: registers, spills, local and
// shared memory, from the driver) to the report, then stores the entry: a fresh compile
// once with everything, a cache hit only when loading told it something new (an entry
// compiled where no such GPU was).
void add_resources_and_store(Built& b, const runtime::LoadedKernel* k) {
  bool changed = false;
  if (k)
    for (const auto& [name, value] : k->resources) {
      auto it = b.code.report.find(name);
      if (it != b.code.report.end() && it->second == value) continue;
      b.code.report[name] = value;
      b.meta["report"][name] = value;
      changed = true;
    }
  if (!b.hit || changed) store(b);
}

Built build(const std::string& name, const std::source_location& loc, std::span<const ArgValue> args,
            const std::string& constants, const std::function<void()>& trace, const codegen::TargetDesc& target,
            const codegen::CompileOptions& opts) {
  std::unique_ptr<ir::Function> f;
  const auto trace_start = std::chrono::steady_clock::now();
  {
    Trace t(name, {loc.file_name(), loc.line()});
    // The target is known before tracing, so tl::shared is checked against its budget
    // where the user wrote it. The CPU's buffers are arrays on the program's stack: their
    // budget is what a program may take of it (the compiler checks the whole frame).
    t.set_cpu_target(target.kind == codegen::TargetDesc::cpu);
    if (target.kind == codegen::TargetDesc::cpu)
      t.set_shared_budget(codegen::cpu::kProgramStackBytes, "the CPU (shared buffers live on the program's stack)");
    if (target.kind != codegen::TargetDesc::cpu) {
      const gpu::TargetCapabilities caps = codegen::capabilities_for(target);
      t.set_shared_budget(caps.shared_bytes_per_program, target.arch);
      // Likewise a tile too large for the registers of num_warps warps.
      t.set_register_budget(opts.num_warps * target.wave_size, caps.registers_per_lane, opts.num_warps, target.arch);
      // And a tl::dot of an FP8 format the matrix instructions do not take.
      std::vector<DType> fp8;
      for (const auto& mi : caps.matrix_instructions)
        for (DType d : {mi.a, mi.b})
          if (is_fp8(d) && std::find(fp8.begin(), fp8.end(), d) == fp8.end()) fp8.push_back(d);
      t.set_dot_fp8_formats(std::move(fp8), target.arch);
    }
    auto saved = t_args;
    t_args = args;
    try {
      trace();
    } catch (const trace_error& e) {
      t_args = saved;
      // An operation given a tile that was never given a value (TileBase::get) may refuse
      // the placeholder's type before it reports the use: said as what it is, at its line.
      if (t.unassigned_read && e.line() != 0 && std::string_view(e.what()).find("never given a value") == std::string_view::npos)
        throw trace_error(unassigned_message("tl"), e.file(), e.line());
      throw;
    } catch (...) {
      t_args = saved;
      throw;
    }
    t_args = saved;
    f = t.finish();
  }
  const double trace_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - trace_start).count();
  ++g_traces;
  std::string key = ir::hash(*f);
  {
    // The key: the canonical program, the exact target, the options and this compiler.
    // (build_identity: what the environment chooses, such as AMD's linker and code object
    // version: another choice is another entry, never a hit on code built the other way.)
    // (compiler_identity: the revision and a hash of libtl's sources, so that any change of
    // the compiler, committed or not, is another entry.)
    std::string full = key + "|" + target.str() + "|" + opts.key() + "|" + compiler_identity() + "|" +
                       codegen::build_identity(target);
    // The canonical program leaves source locations out, so that an edit elsewhere in the
    // file reuses the code. But code that reports a line (a device_assert; every access
    // under bounds checking) has the lines compiled in: key it with them, or a cached
    // entry would name the lines of an older version of the source.
    bool reports_lines = opts.bounds_check;
    ir::walk(f->body, [&](ir::Operation& op) { reports_lines |= op.op == Op::assert_; });
    if (reports_lines) full += "|" + f->str(/*with_locations=*/true);
    XXH128_hash_t h = XXH3_128bits(full.data(), full.size());
    key = fmt::format("{:016x}{:016x}", h.high64, h.low64);
  }
  std::shared_ptr<void> key_hold = hold_key(key);
  auto& disk = cache::DiskCache::global();
  if (!env::flag("TL_ALWAYS_COMPILE")) {
    // Every field is checked as the entry is read: one the checker refuses is removed and
    // counted as rejected by the cache, and compiled again here.
    std::optional<codegen::CodeObject> code;
    auto e = disk.load(key, [&](const cache::Entry& entry) {
      std::string why;
      code = runtime::read_kernel_entry(entry, &why);
      if (!code) env::debug("cache entry {} for kernel '{}' refused: {}", key.substr(0, 12), name, why);
      return code.has_value();
    });
    if (e && code) {
      ++g_disk_hits;
      env::debug("cache hit {} for kernel '{}' ({})", key.substr(0, 12), name, target.str());
      nlohmann::json meta = e->meta;
      code->remarks = remarks_for_trace(code->remarks, meta.value("remark_ops", nlohmann::json()), op_locations(*f));
      meta["remarks"] = code->remarks;
      return {std::move(*code), std::move(meta), key, true, std::move(key_hold)};
    }
  }
  ir::Function& fn = *f;
  const std::vector<ir::SrcLoc> traced_locations = op_locations(fn);  // (compile() rewrites fn)
  // GPU compiles in a worker process: LLVM failing fatally there is a compile_error, not
  // the end of this process (codegen/compile_worker.hpp).
  codegen::CodeObject code = codegen::compile_guarded(fn, target, opts);
  ++g_compiles;
  code.phase_ms.insert(code.phase_ms.begin(), {codegen::kPhaseTrace, trace_ms});
  {
    std::string phases;  // (a compile's cost dwarfs this string's)
    for (const auto& [phase, ms] : code.phase_ms) phases += fmt::format("{}{} {:.1f}", phases.empty() ? "" : ", ", phase, ms);
    env::debug("compiled kernel '{}' for {} in {:.1f} ms ({}; ms)", name, target.str(), trace_ms + code.compile_ms,
               phases);
  }
  runtime::KernelOrigin origin{name, loc.file_name(), unsigned(loc.line()),
                               target.kind == codegen::TargetDesc::cpu ? "cpu" : target.arch, target.str()};
  for (size_t i = 0; i < fn.body.args.size(); ++i)
    origin.signature.push_back(fn.body.args[i]->type.str() + (fn.arg_info[i].divisible_by_16 ? " div16" : "") +
                               (fn.arg_info[i].pointer_range_32 ? " range32" : "") +
                               (fn.arg_info[i].tensor_map ? " tensor_map" : ""));
  origin.constants = constants;
  origin.options = opts;
  origin.compiler = compiler_identity();
  nlohmann::json meta = runtime::kernel_meta(origin, code);
  meta["remark_ops"] = remark_ops(code.remarks, traced_locations);
  return {std::move(code), std::move(meta), key, false, std::move(key_hold)};
}


// A launch's key for the cached path: the device, the launch options that shape the code
// (TL_BOUNDS_CHECK's effect included), what each run-time argument specializes to and the
// constants' bytes. Everything spec_key holds follows from these, so one launch key names
// one specialization; it is made without the target's strings or fmt.
// The key is made on the stack (a heap string past 256 bytes of constants and arguments).
class KeyBytes {
 public:
  void append(const void* p, size_t len) {
    if (len == 0) return;  // (a kernel without constants: p may be null, which memcpy may not take)
    if (!heap_ && n_ + len <= sizeof(inline_)) {
      std::memcpy(inline_ + n_, p, len);
      n_ += len;
      return;
    }
    if (!heap_) heap_.emplace(inline_, n_);
    heap_->append(static_cast<const char*>(p), len);
  }
  void push_back(char c) { append(&c, 1); }
  std::string_view view() const { return heap_ ? std::string_view(*heap_) : std::string_view(inline_, n_); }

 private:
  char inline_[256];
  size_t n_ = 0;
  std::optional<std::string> heap_;
};

void launch_key(KeyBytes& k, const LaunchRequest& r, const runtime::Device* dev) {
  auto put = [&](const auto& v) { k.append(&v, sizeof v); };
  const launch_options& o = *r.opts;
  put(dev);
  const int32_t fields[] = {o.num_warps, o.num_stages, o.waves_per_eu, o.matrix_instr_nonkdim, o.kpack, o.mma_version};
  put(fields);
  bool bounds = o.bounds_check;
  if (!bounds && dev->kind() == runtime::DeviceKind::cpu) {
    // (env::flag's rule, without its string: read at every launch, as compile_options does)
    const char* v = std::getenv("TL_BOUNDS_CHECK");
    bounds = v && *v && std::strcmp(v, "0") != 0 && std::strcmp(v, "false") != 0 && std::strcmp(v, "off") != 0;
  }
  k.push_back(bounds ? 'b' : '-');
  k.push_back(o.enable_fp_fusion ? 'f' : '-');
  for (const ArgValue& a : r.args)
    if (!a.trace_time) k.push_back(specialized_as(a));
  k.push_back('|');
  k.append(r.constants.data(), r.constants.size());
}

}  // namespace

// A launch key with its ready specialization and the launch shape it takes.
struct KernelBase::Hot {
  std::string key;
  Specialization* spec = nullptr;  // owned by Impl::specs, which never drops a ready one
  uint32_t block_threads = 0;
  uint32_t shared_bytes = 0;
};

struct KernelBase::Impl {
  std::shared_mutex mu;
  std::unordered_map<std::string, std::shared_ptr<Specialization>> specs;
  // Every launch key seen with a ready specialization (under mu; the views are of the
  // entries' own keys, which never move), and the last few launched, read without a lock:
  // the cached path compares the launch's key with these and launches.
  std::unordered_map<std::string_view, std::unique_ptr<Hot>> hot;
  static constexpr int kRecent = 4;
  std::array<std::atomic<const Hot*>, kRecent> recent{};
  std::atomic<unsigned> next_recent{0};

  const Hot* find_recent(std::string_view key) const {
    for (const auto& slot : recent) {
      const Hot* e = slot.load(std::memory_order_acquire);
      if (e && e->key == key) return e;
    }
    return nullptr;
  }
  void make_recent(const Hot* e) {
    recent[next_recent.fetch_add(1, std::memory_order_relaxed) % kRecent].store(e, std::memory_order_release);
  }
};

KernelBase::KernelBase(std::string name, std::source_location loc)
    : name_(std::move(name)), loc_(loc), impl_(std::make_unique<Impl>()) {
  if (name_.empty()) throw error("tl::kernel: a kernel needs a name", loc.file_name(), loc.line());
}
KernelBase::~KernelBase() = default;

void KernelBase::launch(const LaunchRequest& r, trace_ref trace) {
  const grid& g = *r.g;
  auto fail = [&](std::string what) { throw launch_error(std::move(what), g.loc.file_name(), g.loc.line()); };
  for (int i = 0; i < 3; ++i) {
    int64_t v = g.requested[i];
    if (v <= 0)
      fail(fmt::format("kernel '{}': the grid must be positive in every dimension, got ({}, {}, {})", name_,
                       g.requested[0], g.requested[1], g.requested[2]));
    int64_t limit = i == 0 ? 0x7fffffffLL : 65535;
    if (v > limit) fail(fmt::format("kernel '{}': grid dimension {} is {}, above the limit {}", name_, "xyz"[i], v, limit));
  }
  runtime::Device& dev = *r.dev->impl();
  for (size_t i = 0; i < r.args.size(); ++i) {
    if (!r.args[i].is_pointer) continue;
    if (r.args[i].bits == 0) fail(fmt::format("kernel '{}': pointer argument {} is null", name_, i));
    // A freed buffer's pointer would have the kernel write memory that is no longer the
    // buffer's: refused, checked or not, while the device can tell (runtime/cpu_device.cpp).
    if (dev.freed(reinterpret_cast<const void*>(r.args[i].bits)))
      fail(fmt::format("kernel '{}': pointer argument {} points into a buffer that was freed", name_, i));
  }

  // The cached path: the launch's key among the last few launched, without a lock; then
  // among all this kernel's, under a shared lock; else the specialization is built.
  KeyBytes key;
  launch_key(key, r, &dev);
  const Hot* hot = impl_->find_recent(key.view());
  if (!hot) hot = specialize(r, trace, std::string(key.view()));

  runtime::LaunchDims dims;
  dims.grid[0] = g.x;
  dims.grid[1] = g.y;
  dims.grid[2] = g.z;
  dims.block_threads = hot->block_threads;
  dims.shared_bytes = hot->shared_bytes;
  dims.programmatic_dependent = r.opts->launch_pdl;
  // (Reused: packing the arguments allocates nothing once the thread has launched.)
  thread_local runtime::ArgSlots t_slots;
  t_slots.clear();
  // The tensor maps the kernel takes (launch_options::tma), encoded here (cached: a
  // descriptor seen before is not encoded again) and passed by value where their slot is.
  thread_local std::vector<cuda::TensorMap> t_maps;
  thread_local std::vector<runtime::TensorMapArg> t_map_args;
  t_maps.clear();
  t_map_args.clear();
  for (const ArgValue& a : r.args) {
    if (a.trace_time) continue;
    if (a.tensor_map) {
      const cuda::Api* api = cuda::Api::get();
      const std::optional<cuda::TensorMapRequest> req = cuda::tma_request(*a.tensor_map);
      if (!api || !req) fail(fmt::format("kernel '{}': a tensor map argument without the CUDA driver (a tl bug)", name_));
      t_map_args.push_back({t_slots.size(), nullptr});
      t_maps.push_back(cuda::encode_tensor_map(*api, *req));
    }
    t_slots.push_back(a.bits);
  }
  for (size_t i = 0; i < t_map_args.size(); ++i) t_map_args[i].map = &t_maps[i];
  dims.tensor_maps = t_map_args;
  g_launches.fetch_add(1, std::memory_order_relaxed);
  dev.launch(*hot->spec->loaded, dims, t_slots, r.stream);
}

// The launch's specialization where the lock-free look-up missed: this kernel's launch
// keys under a shared lock, else trace and compile it (once, whoever launches it first) and
// record its launch key.
const KernelBase::Hot* KernelBase::specialize(const LaunchRequest& r, trace_ref trace, const std::string& lkey) {
  {
    std::shared_lock lock(impl_->mu);
    auto it = impl_->hot.find(lkey);
    if (it != impl_->hot.end()) {
      impl_->make_recent(it->second.get());
      return it->second.get();
    }
  }
  const grid& g = *r.g;
  auto fail = [&](std::string what) { throw launch_error(std::move(what), g.loc.file_name(), g.loc.line()); };
  runtime::Device& dev = *r.dev->impl();
  codegen::TargetDesc target = dev.target();
  check_options(*r.opts, name_, g.loc, target);
  codegen::CompileOptions opts = compile_options(*r.opts, target);
  std::string key = spec_key(r, target, opts);
  key += fmt::format("|dev{}", static_cast<const void*>(&dev));

  std::shared_ptr<Specialization> spec;
  {
    std::shared_lock lock(impl_->mu);
    auto it = impl_->specs.find(key);
    if (it != impl_->specs.end()) spec = it->second;
  }
  if (!spec) {
    std::unique_lock lock(impl_->mu);
    auto& slot = impl_->specs[key];
    if (!slot) slot = std::make_shared<Specialization>();
    spec = slot;
  }
  if (!spec->ready) {
    const std::string building = fmt::format("{}|{}", static_cast<const void*>(this), key);
    if (Building::active(building))
      fail(fmt::format("kernel '{}' is launched from inside its own trace, with the specialization being traced: a "
                       "kernel cannot launch itself (its body is traced once, into one program); use tl::range or "
                       "tl::static_range to repeat work, or launch it again after this launch",
                       name_));
    std::lock_guard once(spec->once);
    if (!spec->ready) {
      try {
        Building guard(building);
        Built b = build(name_, loc_, r.args, std::string(r.constants), std::function<void()>(trace), target, opts);
        spec->loaded = dev.load(b.code);
        add_resources_and_store(b, spec->loaded.get());
        spec->code = std::move(b.code);
        spec->ready = true;
      } catch (...) {
        std::unique_lock lock(impl_->mu);
        impl_->specs.erase(key);  // a later launch traces again (and reports the error again)
        throw;
      }
    }
  }
  std::unique_lock lock(impl_->mu);
  auto it = impl_->hot.find(lkey);
  if (it == impl_->hot.end()) {
    auto e = std::make_unique<Hot>();
    e->key = lkey;
    e->spec = spec.get();
    e->block_threads = spec->code.block_threads;
    // Shared memory the kernel declares statically is in its code object; only a
    // kernel asking for dynamic shared memory gets some at launch.
    auto dyn = spec->code.report.find("dynamic_shared_bytes");
    e->shared_bytes = dyn == spec->code.report.end() ? 0 : uint32_t(dyn->second);
    std::string_view view = e->key;
    it = impl_->hot.emplace(view, std::move(e)).first;
  }
  impl_->make_recent(it->second.get());
  return it->second.get();
}

namespace {
std::string compile_for(const std::string& name, const std::source_location& loc, const codegen::TargetDesc& target,
                        const launch_options& o, std::span<const ArgValue> args, const std::string& constants,
                        const std::function<void()>& trace) {
  check_options(o, name, loc, target);
  codegen::CompileOptions opts = compile_options(o, target);
  std::string building = fmt::format("compile|{}|{}:{}|{}|{}|", name, loc.file_name(), loc.line(), target.str(), opts.key());
  for (const ArgValue& a : args)  // what the trace specializes on (as spec_key)
    building += a.trace_time ? 'c' : specialized_as(a);
  building += constants;
  if (Building::active(building))
    throw launch_error(fmt::format("kernel '{}' is compiled from inside its own trace, for the specialization being "
                                   "traced: it would trace itself forever",
                                   name),
                       loc.file_name(), loc.line());
  Building guard(building);
  Built b = build(name, loc, args, constants, trace, target, opts);
  // NVIDIA's registers and spills come from the driver after loading (ptxas runs there):
  // where this machine's first NVIDIA GPU is of the very target, load the code on it for
  // them. Elsewhere (cross-compiling) the report has what the compiler knows.
  std::unique_ptr<runtime::LoadedKernel> loaded;
  if (target.kind == codegen::TargetDesc::nvptx && cuda::Api::get()) {
    runtime::Device& dev = *cuda_device(0).impl();
    if (dev.target().str() == target.str()) loaded = dev.load(b.code);
  }
  add_resources_and_store(b, loaded.get());
  b.meta["key"] = b.key;
  return b.meta.dump();
}
}  // namespace

std::string KernelBase::compile_only(const device& dev, const launch_options& o, std::span<const ArgValue> args,
                                     const std::string& constants, const std::function<void()>& trace) {
  return compile_for(name_, loc_, (dev ? dev : default_device()).impl()->target(), o, args, constants, trace);
}

std::string KernelBase::compile_only(const std::string& target_name, const launch_options& o,
                                     std::span<const ArgValue> args, const std::string& constants,
                                     const std::function<void()>& trace) {
  std::string name = target_name.empty() ? env::get("TL_TARGET") : target_name;
  codegen::TargetDesc target;
  try {
    target = name.empty() ? default_device().impl()->target() : codegen::parse_target(name);
  } catch (const compile_error& e) {
    // An unknown target name: said at the kernel's line (the call's own is not known here).
    if (e.line() != 0) throw;
    throw compile_error(fmt::format("kernel '{}': {}", name_, e.what()), loc_.file_name(), loc_.line());
  }
  return compile_for(name_, loc_, target, o, args, constants, trace);
}

}  // namespace detail
}  // namespace tl
