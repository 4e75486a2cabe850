// Autotuning: a kernel launch wrapped with a list of configurations and a key.
//
//   struct Cfg {
//     BOOST_HANA_DEFINE_STRUCT(Cfg, (int, block), (int, num_warps));
//   };
//   auto tuned = tl::autotune("scale", std::vector<Cfg>{{256, 1}, {1024, 4}},
//                             {.args = {"x", "n"}, .key = {"n"}},
//                             [](tl::tuning& t, const Cfg& c, auto& x, int n) {
//                               t.launch(k, tl::grid(tl::cdiv(n, c.block)), tl::options_from(c), x, n, c.block);
//                             });
//   tuned(X, n);   // the first call with a new n tunes, later ones look the choice up
//
// The first call with a new key compiles every configuration (in parallel), drops those
// whose compile report breaks a rule (spills, LDS over budget, occupancy under a floor,
// user predicates) without ever running them, times the survivors on the device and
// launches the best. The decision is stored in the cache directory per (name, key,
// device, compiler version, configuration list), so the next process reuses it without
// timing anything; processes tuning the same key at once take turns, and the later ones
// find the first one's decision. TL_PRINT_AUTOTUNING=1 prints the table of every tuning.
//
// Configurations are structs declared with BOOST_HANA_DEFINE_STRUCT: tl reads their
// fields by name to print them, hash them into keys and write them to JSON, with no code
// per struct. Fields named num_warps, num_stages, waves_per_eu, matrix_instr_nonkdim and
// kpack are launch options
// (tl::options_from), the others whatever the launch function makes of them.
#pragma once

#include <boost/hana/accessors.hpp>
#include <boost/hana/concept/struct.hpp>
#include <boost/hana/define_struct.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tl/kernel.hpp"

namespace tl {

// ---------------------------------------------------------------------------------
// Reflection of configuration structs.

namespace detail {

// One field of a configuration: its dotted name (nested structs) and its value.
struct Field {
  enum Kind { integer, boolean, real, text } kind = integer;
  std::string name;
  int64_t i = 0;
  double f = 0;
  std::string s;
};
using Fields = std::vector<Field>;

template <class T> void reflect_into(Fields& out, const std::string& prefix, const T& v);

template <class M> void reflect_member(Fields& out, const std::string& name, const M& m) {
  if constexpr (boost::hana::Struct<M>::value) {
    reflect_into(out, name + ".", m);
  } else if constexpr (std::is_same_v<M, bool>) {
    out.push_back({Field::boolean, name, m ? 1 : 0, 0, {}});
  } else if constexpr (std::is_enum_v<M>) {
    out.push_back({Field::integer, name, int64_t(m), 0, {}});
  } else if constexpr (std::is_integral_v<M>) {
    out.push_back({Field::integer, name, int64_t(m), 0, {}});
  } else if constexpr (std::is_floating_point_v<M>) {
    out.push_back({Field::real, name, 0, double(m), {}});
  } else if constexpr (std::is_convertible_v<const M&, std::string_view>) {
    out.push_back({Field::text, name, 0, 0, std::string(std::string_view(m))});
  } else {
    static_assert(sizeof(M) == 0,
                  "tl::autotune: a configuration field must be a number, bool, enum, string or a nested "
                  "BOOST_HANA_DEFINE_STRUCT struct");
  }
}

template <class T> void reflect_into(Fields& out, const std::string& prefix, const T& v) {
  static_assert(boost::hana::Struct<T>::value,
                "tl::autotune: a configuration is a struct declared with BOOST_HANA_DEFINE_STRUCT");
  boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
    reflect_member(out, prefix + boost::hana::to<const char*>(boost::hana::first(pair)), boost::hana::second(pair)(v));
  });
}

// "{block=1024, num_warps=4}", as every table and error prints a configuration.
std::string fields_text(const Fields& f);
// {"block": 1024, "num_warps": 4} as JSON text (nested structs stay dotted names).
std::string fields_json(const Fields& f);
// A stable 64-bit hash of names and values, as 16 hex digits.
std::string fields_hash(const Fields& f);

}  // namespace detail

// The fields of a BOOST_HANA_DEFINE_STRUCT struct, by name.
template <class T> detail::Fields reflect(const T& v) {
  detail::Fields out;
  detail::reflect_into(out, "", v);
  return out;
}
template <class T> std::string to_string(const T& v) requires boost::hana::Struct<T>::value {
  return detail::fields_text(reflect(v));
}
template <class T> std::string to_json(const T& v) requires boost::hana::Struct<T>::value {
  return detail::fields_json(reflect(v));
}
template <class T> std::string hash_of(const T& v) requires boost::hana::Struct<T>::value {
  return detail::fields_hash(reflect(v));
}

// The launch options a configuration names: its fields num_warps, num_stages,
// waves_per_eu, matrix_instr_nonkdim, kpack and mma_version (where it has them) over `base`.
template <class T> launch_options options_from(const T& c, launch_options base = {}) {
  static_assert(boost::hana::Struct<T>::value, "tl::options_from: a struct declared with BOOST_HANA_DEFINE_STRUCT");
  boost::hana::for_each(boost::hana::accessors<T>(), [&](auto pair) {
    std::string_view name = boost::hana::to<const char*>(boost::hana::first(pair));
    const auto& m = boost::hana::second(pair)(c);
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(m)>>) {
      if (name == "num_warps") base.num_warps = int(m);
      else if (name == "num_stages") base.num_stages = int(m);
      else if (name == "waves_per_eu") base.waves_per_eu = int(m);
      else if (name == "matrix_instr_nonkdim") base.matrix_instr_nonkdim = int(m);
      else if (name == "kpack") base.kpack = int(m);
      else if (name == "mma_version") base.mma_version = int(m);
    }
  });
  return base;
}

// ---------------------------------------------------------------------------------
// Rules: what a configuration's compile report must satisfy to be timed at all.

// A compile report: vgpr, sgpr, spill_vgpr, spill_sgpr, lds_bytes, occupancy (AMD);
// shared_bytes (all); stack_bytes (CPU). What the target does not report is absent.
using compile_report = std::map<std::string, int64_t>;

struct tune_rules {
  int64_t max_spills = 0;        // spilled VGPRs + SGPRs (AMD reports them); -1: any
  int64_t max_shared_bytes = -1;  // LDS / shared memory per program; -1: the target's own budget only
  int64_t min_occupancy = 0;     // AMD waves per SIMD; 0: no floor
  int64_t max_vgprs = 0;         // AMD VGPRs (AGPRs included); 0: no limit
};

// A rule of the user's on the report of each kernel a configuration launches.
struct report_rule {
  std::string name;  // why a configuration breaking it was dropped: "vgpr < 150"
  std::function<bool(const compile_report&)> keep;
};

// A rule of the user's on the configuration itself, checked before anything is compiled
// (seed 002: `tiles <= 64x64 and warps <= 4 on AMD`). `target` is "gfx942", "sm_90",
// "cpu", ... (without features).
template <class Cfg> struct tune_predicate {
  std::string name;
  std::function<bool(const Cfg&, const std::string& target)> keep;
};

template <class Cfg> struct autotune_options {
  std::vector<std::string> args;  // the tuned call's argument names, in order (default arg0, arg1, ...)
  std::vector<std::string> key;   // the arguments (numbers) whose values select a decision
  // Buffers (tl::buffer arguments) that configurations accumulate into: zeroed, or restored
  // to what they held at the call, before every run while tuning and before the launch.
  std::vector<std::string> reset_to_zero;
  std::vector<std::string> restore;
  tune_rules rules;
  std::vector<report_rule> report_rules;
  std::vector<tune_predicate<Cfg>> predicates;
  int warmup = 1;           // untimed runs per configuration
  int repeats = 5;          // timed runs; the median counts
  int compile_threads = 0;  // 0: one per hardware thread
};

// ---------------------------------------------------------------------------------
// The result of a tuning: every configuration with its reports, why it was dropped or
// how long it took.

struct tune_row {
  std::string config;                // "{block=1024, num_warps=4}"
  std::string config_json;           // {"block":1024,"num_warps":4}
  std::vector<compile_report> reports;  // one per kernel the configuration launches
  std::string dropped;               // empty: timed
  double ms = -1;                    // median time of the timed ones
};

struct tune_table {
  std::string name, key, device, compiler;
  std::string arch;  // "gfx942", "sm_90", "cpu"
  std::vector<tune_row> rows;
  int best = -1;         // index into rows (and the configuration list); -1 in a prune-only table
  bool from_disk = false;  // a decision an earlier tuning stored (no timing now)
  std::string str() const;  // the table TL_PRINT_AUTOTUNING prints
};

// Counters of this process's tuning, for tests and tools.
struct tune_stats {
  uint64_t tunings = 0;         // keys tuned (configurations compiled and timed)
  uint64_t compiled = 0;        // configurations compiled for tuning or pruning
  uint64_t dropped = 0;         // configurations refused by a rule or a failed compile
  uint64_t timed_runs = 0;      // launches made to time configurations (warm-up included)
  uint64_t disk_decisions = 0;  // decisions found in the cache directory
};
tune_stats tuning_stats();

namespace detail {
// Thrown by tuning::skip; the tuner drops the configuration with the reason.
struct TuneSkip : launch_error {
  explicit TuneSkip(const std::string& why) : launch_error(why) {}
};
}  // namespace detail

// ---------------------------------------------------------------------------------
// What the launch function is handed: t.launch(kernel, grid, options, args...) launches
// on the tuner's device, or compiles only (while pruning), so one function serves both.

class tuning {
 public:
  template <class F, class... A> void launch(kernel_t<F>& k, const grid& g, const launch_options& o, A&&... a) {
    if (!compile_only_) {
      k[g].with(o).on(dev_).on(stream{stream_})(std::forward<A>(a)...);
      return;
    }
    reports_.push_back(target_.empty() ? k.compile(dev_, o, std::forward<A>(a)...)
                                        : k.compile(target_, o, std::forward<A>(a)...));
  }
  // Refuses this configuration for this call ("rows_per_pid must divide the rows"): a
  // rule that depends on the call's sizes. The tuner drops it with the reason.
  [[noreturn]] void skip(const std::string& why) const { throw detail::TuneSkip(why); }
  // True while the tuner only compiles (to read the reports): nothing runs.
  bool compiling() const { return compile_only_; }
  // The device a run goes to (the tuner's), also while compiling for it.
  const device& dev() const { return dev_; }
  // What is compiled for: "gfx942", "sm_90", "cpu" (without features).
  const std::string& target() const { return target_arch_; }

  // Internal: made by the tuner.
  tuning(device d, void* s, bool compile_only, std::string target, std::string target_arch)
      : dev_(std::move(d)), stream_(s), compile_only_(compile_only), target_(std::move(target)),
        target_arch_(std::move(target_arch)) {}
  std::vector<std::string>& metas() { return reports_; }

 private:
  device dev_;
  void* stream_;
  bool compile_only_;
  std::string target_;  // empty: the device's own target
  std::string target_arch_;
  std::vector<std::string> reports_;  // metadata JSON of each compile
};

namespace detail {

// A buffer the tuner resets before every run: its device memory and size.
struct TuneBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  bool zero = false;  // else restore to its contents at the call
};

// What the typed front end hands the tuning core (runtime/autotune.cpp) for one call.
struct TuneHooks {
  std::function<std::string(size_t i, const std::string& arch)> predicate;  // "" keep, else the rule's name
  std::function<std::vector<std::string>(size_t i, tuning& t)> compile;     // metadata JSON per launch
  std::function<void(size_t i, tuning& t)> run;
  std::vector<TuneBuffer> buffers;
};

struct TuneSettings {
  tune_rules rules;
  std::vector<report_rule> report_rules;
  std::vector<std::string> predicate_names;
  int warmup = 1, repeats = 5, compile_threads = 0;
};

// The untyped part of an autotuner: decisions in memory and on disk, the tuning itself.
class TuneCore {
 public:
  TuneCore(std::string name, std::vector<Fields> configs, TuneSettings s, std::source_location loc);
  ~TuneCore();
  // The configuration to launch for `key` on `dev`: from memory (a map lookup: the hooks
  // are not even made), else from the cache directory, else tuned now and stored; a
  // tuning leaves the reset buffers as the call handed them over. Throws
  // tl::launch_error when no configuration survives.
  struct Choice {
    size_t index;
    std::string arch;  // what tuning::target() says: "gfx942", "sm_90", "cpu"
  };
  Choice decide(const device& dev, void* stream, const std::string& key, const std::function<TuneHooks()>& hooks);
  // The decision's table (tuned now, stored earlier or in memory), for tools and tests.
  tune_table table(const device& dev, void* stream, const std::string& key, const TuneHooks& h);
  // Compiles every configuration for `target` and applies the rules; runs nothing.
  tune_table prune(const std::string& target, const device& dev, const TuneHooks& h);
  [[noreturn]] void fail(const std::string& what) const;
  const std::string& name() const { return name_; }

 private:
  struct Impl;
  std::string name_;
  std::source_location loc_;
  std::unique_ptr<Impl> impl_;
};

// Tests: pretend to be another compiler or device (empty: the real one), to show that a
// new compiler version or a new device tunes again.
void set_tune_identity_for_testing(std::string compiler, std::string device);

template <class T> constexpr bool is_buffer = false;
template <class E> constexpr bool is_buffer<buffer<E>> = true;

}  // namespace detail

// ---------------------------------------------------------------------------------

template <class Cfg, class Fn> class autotuner {
 public:
  autotuner(std::string name, std::vector<Cfg> configs, autotune_options<Cfg> o, Fn fn, std::source_location loc)
      : configs_(std::move(configs)), opts_(std::move(o)), fn_(std::move(fn)), loc_(loc) {
    auto fail = [&](const std::string& what) { throw launch_error("autotune '" + name + "': " + what, loc.file_name(), loc.line()); };
    if (name.empty()) fail("an autotuned kernel needs a name");
    if (configs_.empty()) fail("the configuration list is empty: give at least one configuration");
    auto check_names = [&](const std::vector<std::string>& names, const char* what) {
      for (const auto& n : names) {
        if (index_of(n) >= 0) continue;
        std::string known;
        for (size_t i = 0; i < std::max<size_t>(opts_.args.size(), 1); ++i)
          known += (i ? ", " : "") + (opts_.args.empty() ? std::string("arg0, arg1, ...") : opts_.args[i]);
        fail(std::string(what) + " names '" + n + "', which is not one of its arguments (" + known + ")");
      }
    };
    check_names(opts_.key, "the key");
    check_names(opts_.reset_to_zero, "reset_to_zero");
    check_names(opts_.restore, "restore");
    std::vector<detail::Fields> fields;
    for (const Cfg& c : configs_) fields.push_back(reflect(c));
    detail::TuneSettings s{opts_.rules, opts_.report_rules, {}, opts_.warmup, opts_.repeats, opts_.compile_threads};
    for (const auto& p : opts_.predicates) s.predicate_names.push_back(p.name);
    core_ = std::make_shared<detail::TuneCore>(std::move(name), std::move(fields), std::move(s), loc);
  }

  // Tunes for this call's key if it is new, then launches the chosen configuration.
  template <class... A> void operator()(A&&... a) { run_on(default_device(), nullptr, a...); }
  template <class... A> void run_on(const device& d, void* s, A&&... a) {
    auto choice = core_->decide(d, s, key_of(a...), [&] { return hooks(d, a...); });
    tuning t(d, s, false, "", std::move(choice.arch));
    fn_(t, configs_[choice.index], a...);
  }
  // `tuned.on(dev)(args...)`, `tuned.on(dev, stream)(args...)`.
  auto on(const device& d, stream s = {}) {
    return [this, d, s](auto&&... a) { run_on(d, s.handle, a...); };
  }

  // The configuration a call with these arguments launches (tuning first if needed).
  template <class... A> const Cfg& best(A&&... a) { return best_on(default_device(), a...); }
  template <class... A> const Cfg& best_on(const device& d, A&&... a) {
    return configs_[core_->decide(d, nullptr, key_of(a...), [&] { return hooks(d, a...); }).index];
  }
  // The table behind that choice.
  template <class... A> tune_table table(A&&... a) { return table_on(default_device(), a...); }
  template <class... A> tune_table table_on(const device& d, A&&... a) {
    return core_->table(d, nullptr, key_of(a...), hooks(d, a...));
  }
  // Compiles every configuration for `target` ("gfx942", "sm_90", "cpu") and applies the
  // rules, without a device run: the pruning half, on any machine.
  template <class... A> tune_table prune(const std::string& target, A&&... a) {
    return core_->prune(target, default_device(), hooks(default_device(), a...));
  }

  const std::vector<Cfg>& configs() const { return configs_; }
  const std::string& name() const { return core_->name(); }

 private:
  int index_of(const std::string& n) const {
    if (opts_.args.empty()) {
      if (n.rfind("arg", 0) != 0 || n.size() < 4 || n.size() > 7 || n.find_first_not_of("0123456789", 3) != std::string::npos)
        return -1;
      return std::stoi(n.substr(3));
    }
    for (size_t i = 0; i < opts_.args.size(); ++i)
      if (opts_.args[i] == n) return int(i);
    return -1;
  }

  template <class... A> void check_arity() const {
    if (!opts_.args.empty() && opts_.args.size() != sizeof...(A))
      core_->fail("called with " + std::to_string(sizeof...(A)) + " arguments, but its argument names list " +
                  std::to_string(opts_.args.size()));
  }

  template <class... A> std::string key_of(const A&... a) const {
    check_arity<A...>();
    std::string key;
    for (const auto& n : opts_.key) {
      int want = index_of(n), i = 0;
      bool found = false;
      auto one = [&](const auto& v) {
        if (i++ != want) return;
        found = true;
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_arithmetic_v<V>) {
          key += (key.empty() ? "" : ", ") + n + "=" + std::to_string(v);
        } else {
          core_->fail("the key names '" + n + "', which is not a number (key on sizes, not on buffers or pointers)");
        }
      };
      (one(a), ...);
      if (!found)
        core_->fail("the key names '" + n + "', argument " + std::to_string(want) + ", but the call has " +
                    std::to_string(sizeof...(A)) + " arguments");
    }
    return key;
  }

  template <class... A> detail::TuneHooks hooks(const device& d, A&... a) {
    check_arity<A...>();
    detail::TuneHooks h;
    h.predicate = [this](size_t i, const std::string& arch) -> std::string {
      for (const auto& p : opts_.predicates)
        if (p.keep && !p.keep(configs_[i], arch)) return p.name;
      return {};
    };
    h.compile = [this, &a...](size_t i, tuning& t) {
      fn_(t, configs_[i], a...);
      return t.metas();
    };
    h.run = [this, &a...](size_t i, tuning& t) { fn_(t, configs_[i], a...); };
    auto add = [&](const std::vector<std::string>& names, bool zero) {
      for (const auto& n : names) {
        int want = index_of(n), i = 0;
        auto one = [&](const auto& v) {
          if (i++ != want) return;
          using V = std::decay_t<decltype(v)>;
          if constexpr (detail::is_buffer<V>) h.buffers.push_back({v.data(), v.bytes(), zero});
          else core_->fail("'" + n + "' is to be reset between runs, but it is not a tl::buffer (its size is unknown)");
        };
        (one(a), ...);
      }
    };
    add(opts_.reset_to_zero, true);
    add(opts_.restore, false);
    return h;
  }

  std::vector<Cfg> configs_;
  autotune_options<Cfg> opts_;
  Fn fn_;
  std::source_location loc_;
  std::shared_ptr<detail::TuneCore> core_;
};

// Wraps a launch function with its configurations. `name` names the decisions in the
// cache (tl-cache tune) and the tables; fn(tuning&, const Cfg&, args...) launches one
// configuration through tuning::launch.
template <class Cfg, class Fn>
autotuner<Cfg, Fn> autotune(std::string name, std::vector<Cfg> configs, autotune_options<Cfg> o, Fn fn,
                            std::source_location loc = std::source_location::current()) {
  return autotuner<Cfg, Fn>(std::move(name), std::move(configs), std::move(o), std::move(fn), loc);
}

}  // namespace tl
