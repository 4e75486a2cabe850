// The untyped half of tl::autotune (dsl/include/tl/autotune.hpp): a tuning run (rules
// before compiling, compiles in parallel, rules on the reports, timing of the survivors),
// and its decisions in memory and in the cache directory.
//
// A decision is an ordinary cache entry (runtime/cache.hpp: written by rename, checked by
// its checksum, evicted by LRU like code) whose metadata says `"kind": "autotune"` and
// holds the chosen configuration and the whole table; tl-cache tune lists them. Its key
// hashes the tuner's name, the call's key, the device, the compiler version and the
// configuration list with its rules: change any of them and the next call tunes again.
// Processes tuning the same key at once serialize on the entry's lock file; the ones that
// waited find the first one's decision and time nothing.
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "codegen/gpu/capabilities.hpp"
#include "codegen/target.hpp"
#include "runtime/cache.hpp"
#include "runtime/compiler_identity.hpp"
#include "runtime/cuda_api.hpp"
#include "runtime/device.hpp"
#include "runtime/env.hpp"
#include "runtime/hip_api.hpp"
#include "tl/autotune.hpp"

namespace tl {

namespace {

std::atomic<uint64_t> g_tunings{0}, g_compiled{0}, g_dropped{0}, g_timed{0}, g_disk{0};

struct Identity {
  std::mutex mu;
  std::string compiler, device;
};
Identity& identity_override() {
  static Identity i;
  return i;
}

std::string compiler_version() {
  auto& o = identity_override();
  std::lock_guard lock(o.mu);
  return o.compiler.empty() ? detail::compiler_identity() : o.compiler;
}

// The device a decision belongs to: its exact target, its name and its compute units (an
// MI300X partitioned into CPX mode has a different best configuration).
std::string device_identity(const device& d) {
  auto& o = identity_override();
  {
    std::lock_guard lock(o.mu);
    if (!o.device.empty()) return o.device;
  }
  return fmt::format("{} | {} | {} CUs", d.impl()->target().str(), d.name(), d.compute_units());
}

std::string arch_of(const codegen::TargetDesc& t) { return t.kind == codegen::TargetDesc::cpu ? "cpu" : t.arch; }

std::string hex128(const std::string& s) {
  XXH128_hash_t h = XXH3_128bits(s.data(), s.size());
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

nlohmann::json field_value(const detail::Field& f) {
  switch (f.kind) {
    case detail::Field::boolean: return f.i != 0;
    case detail::Field::real: return f.f;
    case detail::Field::text: return f.s;
    default: return f.i;
  }
}

compile_report report_of(const nlohmann::json& meta) {
  compile_report r;
  if (auto it = meta.find("report"); it != meta.end() && it->is_object())
    for (auto& [k, v] : it->items())
      if (v.is_number_integer()) r[k] = v.get<int64_t>();
  return r;
}

int64_t get(const compile_report& r, const char* k, int64_t def = -1) {
  auto it = r.find(k);
  return it == r.end() ? def : it->second;
}

// Registers spilled: AMD's code object reports VGPRs and SGPRs; NVIDIA's driver, loading
// the code on the device, passes on ptxas's bytes of spill stores (4 a register) where its
// log names them, else the function's local memory (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
// what Triton counts as n_spills; the H200's driver gave no ptxas lines for the attention
// backward). Absent figures count 0 (a cross-compiled NVIDIA kernel has none: ptxas runs in
// the driver).
int64_t nvidia_spill_bytes(const compile_report& r) {
  return std::max<int64_t>(0, r.count("spill_store_bytes") ? get(r, "spill_store_bytes", 0) : get(r, "local_bytes", 0));
}
int64_t spills(const compile_report& r) {
  return std::max<int64_t>(0, get(r, "spill_vgpr", 0)) + std::max<int64_t>(0, get(r, "spill_sgpr", 0)) +
         (nvidia_spill_bytes(r) + 3) / 4;
}

// The short form of a report in the table: what the target reports of the rules' inputs.
std::string report_text(const compile_report& r) {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : " ") + part; };
  if (int64_t v = get(r, "vgpr"); v >= 0) add(fmt::format("vgpr={}", v));
  if (r.count("spill_vgpr") || r.count("spill_sgpr") || r.count("spill_store_bytes") || r.count("local_bytes"))
    add(fmt::format("spills={}", spills(r)));
  if (int64_t v = get(r, "lds_bytes"); v >= 0) add(fmt::format("lds={}", v));
  else if (int64_t v = get(r, "shared_bytes"); v > 0) add(fmt::format("shared={}", v));
  if (int64_t v = get(r, "occupancy"); v >= 0) add(fmt::format("occ={}", v));
  if (int64_t v = get(r, "stack_bytes"); v >= 0) add(fmt::format("stack={}", v));
  return s.empty() ? "-" : s;
}

// Why a report breaks a rule ("" when it breaks none).
std::string violation(const compile_report& r, const tune_rules& rules, const std::vector<report_rule>& user,
                      int64_t shared_budget) {
  if (const int64_t n = spills(r); rules.max_spills >= 0 && n > rules.max_spills)
    return fmt::format("spills {} registers (limit {})", n, rules.max_spills);
  int64_t shared = get(r, "lds_bytes");
  if (shared < 0) shared = get(r, "shared_bytes", 0);
  int64_t budget = rules.max_shared_bytes >= 0 ? rules.max_shared_bytes : shared_budget;
  if (budget >= 0 && shared > budget) return fmt::format("{} bytes of shared memory (budget {})", shared, budget);
  if (int64_t occ = get(r, "occupancy"); rules.min_occupancy > 0 && occ >= 0 && occ < rules.min_occupancy)
    return fmt::format("occupancy {} (floor {})", occ, rules.min_occupancy);
  if (int64_t v = get(r, "vgpr"); rules.max_vgprs > 0 && v > rules.max_vgprs)
    return fmt::format("{} VGPRs (limit {})", v, rules.max_vgprs);
  for (const auto& u : user)
    if (u.keep && !u.keep(r)) return "rule: " + u.name;
  return {};
}

std::string first_line(std::string s) {
  if (auto nl = s.find('\n'); nl != std::string::npos) s = s.substr(0, nl) + " ...";
  return s;
}

nlohmann::json row_json(const tune_row& row) {
  nlohmann::json reports = nlohmann::json::array();
  for (const auto& r : row.reports) reports.push_back(r);
  nlohmann::json j = {{"config", row.config}, {"reports", reports}, {"dropped", row.dropped}};
  j["fields"] = nlohmann::json::parse(row.config_json, nullptr, false);
  if (row.ms >= 0) j["ms"] = row.ms;
  return j;
}

tune_row row_from_json(const nlohmann::json& j) {
  tune_row row;
  row.config = j.value("config", "");
  row.dropped = j.value("dropped", "");
  row.ms = j.value("ms", -1.0);
  if (auto f = j.find("fields"); f != j.end()) row.config_json = f->dump();
  if (auto rs = j.find("reports"); rs != j.end() && rs->is_array())
    for (auto& r : *rs) {
      compile_report cr;
      if (r.is_object())
        for (auto& [k, v] : r.items())
          if (v.is_number_integer()) cr[k] = v.get<int64_t>();
      row.reports.push_back(std::move(cr));
    }
  return row;
}

// Times one launch of a configuration: device events where there are any (the launch
// alone, not the host's way to it), the host clock around a synchronized launch on the
// CPU, where the launch is the work.
class Timer {
 public:
  Timer(const device& d, void* stream) : dev_(d), stream_(stream) {
    if (d.kind() == device_kind::cuda && (cu_ = cuda::Api::get())) {
      cu_->check(cu_->cuEventCreate(&ca_, 0), "cuEventCreate");
      cu_->check(cu_->cuEventCreate(&cb_, 0), "cuEventCreate");
    } else if (d.kind() == device_kind::hip && (hip_ = hip::Api::get())) {
      hip_->check(hip_->hipEventCreate(&ha_), "hipEventCreate");
      hip_->check(hip_->hipEventCreate(&hb_), "hipEventCreate");
    }
  }
  ~Timer() {
    if (cu_) cu_->cuEventDestroy(ca_), cu_->cuEventDestroy(cb_);
    if (hip_) hip_->hipEventDestroy(ha_), hip_->hipEventDestroy(hb_);
  }
  template <class F> double ms(F&& f) {
    dev_.synchronize();
    if (cu_) {
      cu_->check(cu_->cuEventRecord(ca_, cuda::CUstream(stream_)), "cuEventRecord");
      f();
      cu_->check(cu_->cuEventRecord(cb_, cuda::CUstream(stream_)), "cuEventRecord");
      cu_->check(cu_->cuEventSynchronize(cb_), "cuEventSynchronize");
      float t = 0;
      cu_->check(cu_->cuEventElapsedTime(&t, ca_, cb_), "cuEventElapsedTime");
      return t;
    }
    if (hip_) {
      hip_->check(hip_->hipEventRecord(ha_, hip::hipStream_t(stream_)), "hipEventRecord");
      f();
      hip_->check(hip_->hipEventRecord(hb_, hip::hipStream_t(stream_)), "hipEventRecord");
      hip_->check(hip_->hipEventSynchronize(hb_), "hipEventSynchronize");
      float t = 0;
      hip_->check(hip_->hipEventElapsedTime(&t, ha_, hb_), "hipEventElapsedTime");
      return t;
    }
    auto t0 = std::chrono::steady_clock::now();
    f();
    dev_.synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

 private:
  device dev_;
  void* stream_;
  const cuda::Api* cu_ = nullptr;
  const hip::Api* hip_ = nullptr;
  cuda::CUevent ca_ = nullptr, cb_ = nullptr;
  hip::hipEvent_t ha_ = nullptr, hb_ = nullptr;
};

// The buffers a tuning resets between runs: a snapshot of each restored one and a zeroed
// block for the others, on the device.
class Resetter {
 public:
  Resetter(const device& d, const std::vector<detail::TuneBuffer>& bufs) : dev_(d), bufs_(bufs) {
    size_t zero = 0;
    for (const auto& b : bufs_) {
      if (b.zero) {
        zero = std::max(zero, b.bytes);
        saved_.push_back(nullptr);
        continue;
      }
      void* s = dev_.alloc_bytes(std::max<size_t>(b.bytes, 1));
      dev_.impl()->copy_device_to_device(s, b.ptr, b.bytes);
      saved_.push_back(s);
    }
    if (zero) {
      zeros_ = dev_.alloc_bytes(zero);
      std::vector<uint8_t> host(zero, 0);
      dev_.copy_to_device(zeros_, host.data(), zero);
    }
  }
  ~Resetter() {
    for (void* s : saved_)
      if (s) dev_.free_bytes(s);
    if (zeros_) dev_.free_bytes(zeros_);
  }
  void reset() {
    for (size_t i = 0; i < bufs_.size(); ++i)
      dev_.impl()->copy_device_to_device(bufs_[i].ptr, bufs_[i].zero ? zeros_ : saved_[i], bufs_[i].bytes);
  }

 private:
  device dev_;
  const std::vector<detail::TuneBuffer>& bufs_;
  std::vector<void*> saved_;
  void* zeros_ = nullptr;
};

}  // namespace

tune_stats tuning_stats() {
  return {g_tunings.load(), g_compiled.load(), g_dropped.load(), g_timed.load(), g_disk.load()};
}

std::string tune_table::str() const {
  size_t timed = 0, dropped = 0;
  for (const auto& r : rows) {
    dropped += !r.dropped.empty();
    timed += r.dropped.empty() && r.ms >= 0;
  }
  std::string out = fmt::format("tl autotune '{}' [{}] on {}, compiler {}: {} configurations, {} dropped, {} timed",
                                name, key.empty() ? "no key" : key, device, compiler, rows.size(), dropped, timed);
  if (best >= 0) out += fmt::format(", best #{} ({:.4f} ms)", best, rows[size_t(best)].ms);
  if (from_disk) out += " (stored decision: nothing timed now)";
  out += "\n";
  size_t wc = 13, wr = 6;
  std::vector<std::string> reps;
  for (const auto& r : rows) {
    std::string rep;
    for (const auto& x : r.reports) rep += (rep.empty() ? "" : " | ") + report_text(x);
    reps.push_back(rep.empty() ? "-" : rep);
    wc = std::max(wc, r.config.size());
    wr = std::max(wr, reps.back().size());
  }
  out += fmt::format("  {:>3}  {:<{}}  {:<{}}  {}\n", "#", "configuration", wc, "report", wr, "result");
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    std::string res = !r.dropped.empty() ? "dropped: " + r.dropped
                      : r.ms >= 0         ? fmt::format("{:.4f} ms{}", r.ms, int(i) == best ? "  <- best" : "")
                                          : std::string("kept (not timed)");
    out += fmt::format("  {:>3}  {:<{}}  {:<{}}  {}\n", i, r.config, wc, reps[i], wr, res);
  }
  return out;
}

namespace detail {

std::string fields_text(const Fields& f) {
  std::string s = "{";
  for (size_t i = 0; i < f.size(); ++i) {
    s += (i ? ", " : "") + f[i].name + "=";
    switch (f[i].kind) {
      case Field::boolean: s += f[i].i ? "true" : "false"; break;
      case Field::real: s += fmt::format("{}", f[i].f); break;
      case Field::text: s += f[i].s; break;
      default: s += std::to_string(f[i].i);
    }
  }
  return s + "}";
}

std::string fields_json(const Fields& f) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& x : f) j[x.name] = field_value(x);
  return j.dump();
}

std::string fields_hash(const Fields& f) {
  // Names and kinds enter the hash too: {a=1} and {b=1} are different configurations.
  std::string s;
  for (const auto& x : f) s += fmt::format("{}:{}:{}|", x.name, int(x.kind), field_value(x).dump());
  return fmt::format("{:016x}", XXH3_64bits(s.data(), s.size()));
}

void set_tune_identity_for_testing(std::string compiler, std::string device) {
  auto& o = identity_override();
  std::lock_guard lock(o.mu);
  o.compiler = std::move(compiler);
  o.device = std::move(device);
}

struct TuneCore::Impl {
  std::vector<Fields> configs;
  TuneSettings settings;
  std::string space_hash;  // the configurations and the rules: a new list tunes again
  std::shared_mutex mu;    // guards decisions
  std::unordered_map<std::string, std::shared_ptr<const tune_table>> decisions;  // "<device>|<key>"
  std::mutex tuning;       // one tuning at a time in this process (they share the device)
};

TuneCore::TuneCore(std::string name, std::vector<Fields> configs, TuneSettings s, std::source_location loc)
    : name_(std::move(name)), loc_(loc), impl_(std::make_unique<Impl>()) {
  impl_->configs = std::move(configs);
  impl_->settings = std::move(s);
  const auto& r = impl_->settings.rules;
  std::string space = fmt::format("rules {} {} {} {}|", r.max_spills, r.max_shared_bytes, r.min_occupancy, r.max_vgprs);
  for (const auto& u : impl_->settings.report_rules) space += "report rule " + u.name + "|";
  for (const auto& p : impl_->settings.predicate_names) space += "predicate " + p + "|";
  for (const auto& c : impl_->configs) space += fields_hash(c) + "|";
  impl_->space_hash = hex128(space);
}

TuneCore::~TuneCore() = default;

void TuneCore::fail(const std::string& what) const {
  throw launch_error(fmt::format("autotune '{}': {}", name_, what), loc_.file_name(), loc_.line());
}

namespace {

// Rules before compiling, then compiles (in parallel) and the rules on the reports.
// Fills rows; survivors have an empty `dropped`.
void compile_and_prune(const std::vector<Fields>& configs, const TuneSettings& s, const TuneHooks& h,
                       const device& dev, const std::string& target_name, const codegen::TargetDesc& target,
                       std::vector<tune_row>& rows) {
  const std::string arch = arch_of(target);
  const int64_t budget =
      target.kind == codegen::TargetDesc::cpu ? -1 : codegen::capabilities_for(target).shared_bytes_per_program;
  rows.assign(configs.size(), {});
  std::vector<size_t> todo;
  for (size_t i = 0; i < configs.size(); ++i) {
    rows[i].config = fields_text(configs[i]);
    rows[i].config_json = fields_json(configs[i]);
    std::string why = h.predicate ? h.predicate(i, arch) : std::string();
    if (why.empty()) todo.push_back(i);
    else rows[i].dropped = "rule: " + why;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t n; (n = next.fetch_add(1)) < todo.size();) {
      const size_t i = todo[n];
      tune_row& row = rows[i];
      try {
        tuning t(dev, nullptr, true, target_name, arch);
        std::vector<std::string> metas = h.compile(i, t);
        ++g_compiled;
        for (const auto& m : metas) row.reports.push_back(report_of(nlohmann::json::parse(m)));
        for (const auto& r : row.reports)
          if (std::string why = violation(r, s.rules, s.report_rules, budget); !why.empty()) {
            row.dropped = why;
            break;
          }
      } catch (const TuneSkip& e) {
        row.dropped = "skipped: " + std::string(e.what());
      } catch (const std::exception& e) {
        row.dropped = "failed to compile: " + first_line(e.what());
      }
    }
  };
  unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  size_t threads = std::min<size_t>(todo.size(), s.compile_threads > 0 ? size_t(s.compile_threads) : hw);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (const auto& r : rows)
    if (!r.dropped.empty()) ++g_dropped;
}

std::string no_survivor(const std::vector<tune_row>& rows) {
  std::string why;
  for (size_t i = 0; i < rows.size(); ++i) why += fmt::format("\n  #{} {}: {}", i, rows[i].config, rows[i].dropped);
  return fmt::format("no configuration can run ({} given, every one dropped):{}", rows.size(), why);
}

bool print_tables() { return env::flag("TL_PRINT_AUTOTUNING"); }

}  // namespace

tune_table TuneCore::prune(const std::string& target_name, const device& dev, const TuneHooks& h) {
  codegen::TargetDesc target = codegen::parse_target(target_name);
  tune_table t;
  t.name = name_;
  t.device = target_name + " (compile only)";
  t.compiler = compiler_version();
  t.arch = arch_of(target);
  compile_and_prune(impl_->configs, impl_->settings, h, dev, target_name, target, t.rows);
  if (print_tables()) fmt::print(stderr, "{}", t.str());
  return t;
}

tune_table TuneCore::table(const device& dev, void* stream, const std::string& key, const TuneHooks& h) {
  decide(dev, stream, key, [&] { return h; });
  std::shared_lock lock(impl_->mu);
  return *impl_->decisions.at(fmt::format("{}|{}", static_cast<const void*>(dev.impl()), key));
}

TuneCore::Choice TuneCore::decide(const device& dev, void* stream, const std::string& key,
                                  const std::function<TuneHooks()>& make_hooks) {
  const std::string mem_key = fmt::format("{}|{}", static_cast<const void*>(dev.impl()), key);
  {
    std::shared_lock lock(impl_->mu);
    if (auto it = impl_->decisions.find(mem_key); it != impl_->decisions.end())
      return {size_t(it->second->best), it->second->arch};
  }
  std::lock_guard tuning_lock(impl_->tuning);
  {
    std::shared_lock lock(impl_->mu);
    if (auto it = impl_->decisions.find(mem_key); it != impl_->decisions.end())
      return {size_t(it->second->best), it->second->arch};
  }
  const std::string dev_id = device_identity(dev), compiler = compiler_version();
  const std::string disk_key =
      hex128(fmt::format("tl-autotune 1|{}|{}|{}|{}|{}", name_, key, dev_id, compiler, impl_->space_hash));
  auto& disk = cache::DiskCache::global();
  auto remember = [&](std::shared_ptr<const tune_table> t) {
    std::unique_lock lock(impl_->mu);
    impl_->decisions[mem_key] = t;
    return Choice{size_t(t->best), t->arch};
  };
  // A stored decision, if it is one for exactly this tuner, key, device and compiler.
  auto decode = [&](const cache::Entry& e) -> std::shared_ptr<const tune_table> {
    const auto& m = e.meta;
    if (m.value("kind", "") != "autotune" || m.value("kernel", "") != name_ || m.value("key", "") != key ||
        m.value("device_id", "") != dev_id || m.value("compiler", "") != compiler || !m.contains("table") ||
        !m["table"].is_array() || m["table"].size() != impl_->configs.size())
      return nullptr;
    auto t = std::make_shared<tune_table>();
    t->name = name_;
    t->key = key;
    t->device = m.value("device", "");
    t->compiler = compiler;
    t->best = m.value("best", -1);
    t->arch = arch_of(dev.impl()->target());
    t->from_disk = true;
    for (auto& r : m["table"]) t->rows.push_back(row_from_json(r));
    if (t->best < 0 || size_t(t->best) >= t->rows.size() ||
        t->rows[size_t(t->best)].config != fields_text(impl_->configs[size_t(t->best)]))
      return nullptr;
    return t;
  };
  auto stored = [&]() -> std::shared_ptr<const tune_table> {
    // The key names the tuner, key, device and compiler, so an entry that decodes to
    // anything else is malformed; and reading a field as a type it does not have throws
    // (nlohmann's type_error) inside the cache's check, which refuses the entry for it.
    // Either way the entry is removed, counted as rejected, and the kernel tuned again.
    std::shared_ptr<const tune_table> t;
    if (!disk.load(disk_key, [&](const cache::Entry& e) { return (t = decode(e)) != nullptr; }) || !t)
      return nullptr;
    ++g_disk;
    if (print_tables()) fmt::print(stderr, "{}", t->str());
    return t;
  };
  if (auto t = stored()) return remember(t);
  // Another process may be tuning this key right now: wait for it, then take its decision.
  cache::KeyLock held = disk.lock(disk_key);
  if (held.held())
    if (auto t = stored()) return remember(t);

  const TuneHooks h = make_hooks();
  auto t0 = std::chrono::steady_clock::now();
  auto table = std::make_shared<tune_table>();
  table->name = name_;
  table->key = key;
  table->device = fmt::format("{} ({})", dev.target(), dev.name());
  table->compiler = compiler;
  codegen::TargetDesc target = dev.impl()->target();
  table->arch = arch_of(target);
  compile_and_prune(impl_->configs, impl_->settings, h, dev, "", target, table->rows);
  ++g_tunings;

  const TuneSettings& s = impl_->settings;
  {
    Resetter resetter(dev, h.buffers);
    Timer timer(dev, stream);
    for (size_t i = 0; i < table->rows.size(); ++i) {
      tune_row& row = table->rows[i];
      if (!row.dropped.empty()) continue;
      try {
        tuning t(dev, stream, false, "", arch_of(target));
        for (int w = 0; w < std::max(1, s.warmup); ++w) {
          resetter.reset();
          h.run(i, t);
          ++g_timed;
        }
        // Several launches between two events where nothing needs resetting between them,
        // so that a short kernel's time is not the events' resolution and jitter.
        const int inner = h.buffers.empty() ? 5 : 1;
        std::vector<double> ms;
        for (int r = 0; r < std::max(1, s.repeats); ++r) {
          resetter.reset();
          ms.push_back(timer.ms([&] {
                         for (int k = 0; k < inner; ++k) h.run(i, t);
                       }) /
                       inner);
          g_timed += uint64_t(inner);
        }
        std::sort(ms.begin(), ms.end());
        row.ms = ms[ms.size() / 2];
      } catch (const std::exception& e) {
        row.dropped = "failed to run: " + first_line(e.what());
        ++g_dropped;
      }
    }
    // The launch that follows sees the buffers as the call handed them over.
    resetter.reset();
    dev.synchronize();
  }
  for (size_t i = 0; i < table->rows.size(); ++i) {
    const tune_row& row = table->rows[i];
    if (row.dropped.empty() && row.ms >= 0 && (table->best < 0 || row.ms < table->rows[size_t(table->best)].ms))
      table->best = int(i);
  }
  if (print_tables()) fmt::print(stderr, "{}", table->str());
  if (table->best < 0) fail(no_survivor(table->rows));

  const double tune_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  cache::Entry e;
  e.key = disk_key;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : table->rows) rows.push_back(row_json(r));
  const tune_row& best = table->rows[size_t(table->best)];
  size_t dropped = 0;
  for (const auto& r : table->rows) dropped += !r.dropped.empty();
  e.meta = {{"kind", "autotune"},
            {"kernel", name_},
            {"target", arch_of(target)},
            {"key", key},
            {"device", table->device},
            {"device_id", dev_id},
            {"compiler", compiler},
            {"best", table->best},
            {"best_config", nlohmann::json::parse(best.config_json, nullptr, false)},
            {"best_text", best.config},
            {"best_ms", best.ms},
            {"configs", table->rows.size()},
            {"dropped", dropped},
            {"tune_ms", tune_ms},
            {"table", rows}};
  disk.store(e);
  env::debug("autotune '{}' [{}]: {} of {} configurations timed in {:.0f} ms, best {}", name_, key,
             table->rows.size() - dropped, table->rows.size(), tune_ms, best.config);
  return remember(table);
}

}  // namespace detail
}  // namespace tl
