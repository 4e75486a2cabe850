// tl-cache: inspect and manage the JIT cache.
//
//   tl-cache [--dir D] list [--kernel NAME] [--target T] [--json]
//   tl-cache [--dir D] show KEY [--json]
//   tl-cache [--dir D] ir KEY [--llvm]
//   tl-cache [--dir D] isa KEY
//   tl-cache [--dir D] stats [--json]
//   tl-cache [--dir D] tune [--kernel NAME] [--json]
//   tl-cache [--dir D] prune --max-size BYTES      (suffixes K, M, G)
//   tl-cache [--dir D] clear
//
// KEY may be any unique prefix of a key. Exit status: 0 ok, 1 user error (bad arguments,
// unknown or ambiguous key), 2 anything else.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "runtime/cache.hpp"
#include "tl/error.hpp"

namespace {

using nlohmann::json;
using tl::cache::DiskCache;

constexpr const char* kUsage =
    "usage: tl-cache [--dir DIR] COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  list [--kernel NAME] [--target T] [--json]   entries, most recently used first\n"
    "  show KEY [--json]                            all metadata of one entry\n"
    "  ir KEY [--llvm]                              its tile IR (or LLVM IR)\n"
    "  isa KEY                                      its ISA text\n"
    "  stats [--json]                               size, hits, misses, rejected entries\n"
    "  tune [--kernel NAME] [--json]                stored autotuning decisions (tl::autotune)\n"
    "  prune --max-size BYTES                       evict least recently used (K/M/G suffixes)\n"
    "  clear                                        remove every entry\n"
    "\n"
    "KEY is any unique prefix of a cache key. The directory defaults to $TL_CACHE_DIR,\n"
    "else $HOME/.cache/tl.\n";

// A user error: reported on stderr, exit status 1.
struct UsageError {
  std::string message;
  bool show_usage = false;  // for malformed command lines, not for an unknown key
};

// Options of one command: known flags and options with a value; anything else is an error,
// so that a typo never silently means something else.
struct Options {
  std::vector<std::string> positional;
  std::set<std::string> flags;
  std::map<std::string, std::string> values;
};

Options parse_options(const std::vector<std::string>& args, const std::set<std::string>& flags,
                      const std::set<std::string>& valued, size_t max_positional) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() > 1 && a[0] == '-') {
      std::string name = a, value;
      bool inline_value = false;
      if (auto eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
      if (flags.count(name) && !inline_value) {
        o.flags.insert(name);
      } else if (valued.count(name)) {
        if (!inline_value) {
          if (i + 1 >= args.size()) throw UsageError{fmt::format("option {} needs a value", name), true};
          value = args[++i];
        }
        o.values[name] = value;
      } else {
        throw UsageError{fmt::format("unknown option '{}'", a), true};
      }
    } else {
      o.positional.push_back(a);
    }
  }
  if (o.positional.size() > max_positional)
    throw UsageError{fmt::format("unexpected argument '{}'", o.positional[max_positional]), true};
  return o;
}

std::string human_size(uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = double(n);
  int u = -1;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

std::string human_time(int64_t t) {
  if (t <= 0) return "-";
  time_t tt = time_t(t);
  struct tm tm;
  localtime_r(&tt, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// A meta field for a table cell: strings as they are, numbers as JSON writes them, "-" when
// absent (entries from other compiler versions may lack fields).
const json* field(const json& meta, std::initializer_list<const char*> path) {
  const json* j = &meta;
  for (const char* p : path) {
    if (!j->is_object()) return nullptr;
    auto it = j->find(p);
    if (it == j->end() || it->is_null()) return nullptr;
    j = &*it;
  }
  return j;
}

std::string cell(const json& meta, std::initializer_list<const char*> path) {
  const json* j = field(meta, path);
  if (!j) return "-";
  if (j->is_string()) return j->get<std::string>();
  return j->dump(-1, ' ', false, json::error_handler_t::replace);
}

// Registers per lane: AMD's VGPRs (AGPRs included), NVIDIA's registers per thread.
std::string registers(const json& meta) {
  return field(meta, {"report", "regs"}) ? cell(meta, {"report", "regs"}) : cell(meta, {"report", "vgpr"});
}

std::string spills(const json& meta) {
  // NVIDIA: 32-bit registers spilled, from ptxas's spill-store bytes (else the local
  // memory, Triton's n_spills = local bytes / 4).
  for (const char* k : {"spill_store_bytes", "local_bytes"})
    if (const json* b = field(meta, {"report", k}); b && b->is_number_integer())
      return std::to_string(b->get<int64_t>() / 4);
  const json* v = field(meta, {"report", "spill_vgpr"});
  const json* s = field(meta, {"report", "spill_sgpr"});
  if ((!v || !v->is_number()) && (!s || !s->is_number())) return "-";
  if ((!v || v->is_number_integer()) && (!s || s->is_number_integer()))
    return std::to_string((v ? v->get<int64_t>() : 0) + (s ? s->get<int64_t>() : 0));
  double total = (v && v->is_number() ? v->get<double>() : 0) + (s && s->is_number() ? s->get<double>() : 0);
  return fmt::format("{}", total);
}

std::string dump(const json& j, int indent = -1) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

tl::cache::Entry find(DiskCache& cache, const std::string& prefix) {
  auto e = cache.find_prefix(prefix);  // throws tl::error for an ambiguous or non-hex prefix
  if (!e) throw UsageError{fmt::format("no cache entry matches '{}' in {}", prefix, cache.dir().string())};
  return std::move(*e);
}

int cmd_list(DiskCache& cache, const std::vector<std::string>& args) {
  Options o = parse_options(args, {"--json"}, {"--kernel", "--target"}, 0);
  std::vector<tl::cache::EntryInfo> infos = cache.list();
  auto keep = [&](const tl::cache::EntryInfo& i) {
    for (auto [opt, name] : {std::pair{"--kernel", "kernel"}, std::pair{"--target", "target"}}) {
      auto it = o.values.find(opt);
      if (it != o.values.end() && cell(i.meta, {name}) != it->second) return false;
    }
    return true;
  };
  infos.erase(std::remove_if(infos.begin(), infos.end(), [&](const auto& i) { return !keep(i); }), infos.end());
  // list() is already most recently used first (finer than the seconds shown).
  if (o.flags.count("--json")) {
    json out = json::array();
    for (const auto& i : infos)
      out.push_back({{"key", i.key},
                     {"kernel", i.meta.value("kernel", json())},
                     {"target", i.meta.value("target", json())},
                     {"size", i.size},
                     {"last_used", i.last_used},
                     {"hits", i.hits},
                     {"in_memory", i.in_memory},
                     {"meta", i.meta}});
    fmt::print("{}\n", dump(out, 2));
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"KEY", "KERNEL", "TARGET", "REGS", "SPILLS", "OCCUPANCY", "SIZE", "LAST USED"});
  for (const auto& i : infos)
    rows.push_back({i.key.substr(0, 12), cell(i.meta, {"kernel"}), cell(i.meta, {"target"}),
                    registers(i.meta), spills(i.meta), cell(i.meta, {"report", "occupancy"}),
                    human_size(i.size), human_time(i.last_used)});
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      // Numbers right-aligned, text left-aligned; no padding after the last column.
      bool right = c >= 3 && c <= 6;
      if (c + 1 == r.size()) line += r[c];
      else line += right ? fmt::format("{:>{}}  ", r[c], width[c]) : fmt::format("{:<{}}  ", r[c], width[c]);
    }
    fmt::print("{}\n", line);
  }
  if (infos.empty()) fmt::print(stderr, "(no entries in {})\n", cache.dir().string());
  return 0;
}

int cmd_show(DiskCache& cache, const std::vector<std::string>& args) {
  Options o = parse_options(args, {"--json"}, {}, 1);
  if (o.positional.empty()) throw UsageError{"show needs a KEY", true};
  tl::cache::Entry e = find(cache, o.positional[0]);
  json artifacts = json::object();
  for (const auto& [name, data] : e.artifacts) artifacts[name] = data.size();
  if (o.flags.count("--json")) {
    json out = {{"key", e.key}, {"size", tl::cache::serialize_entry(e).size()}, {"meta", e.meta},
                {"artifacts", artifacts}};
    fmt::print("{}\n", dump(out, 2));
    return 0;
  }
  fmt::print("key        {}\n", e.key);
  fmt::print("kernel     {}\n", cell(e.meta, {"kernel"}));
  fmt::print("target     {}\n", cell(e.meta, {"target"}));
  // The source location as {"source": {"file", "line"}} (what the JIT writes) or flat.
  if (field(e.meta, {"source", "file"}))
    fmt::print("source     {}:{}\n", cell(e.meta, {"source", "file"}), cell(e.meta, {"source", "line"}));
  else if (field(e.meta, {"file"}))
    fmt::print("source     {}:{}\n", cell(e.meta, {"file"}), cell(e.meta, {"line"}));
  auto when = [&](const char* k) {
    const json* j = field(e.meta, {k});
    return j && j->is_number_integer() ? human_time(j->get<int64_t>()) : std::string("-");
  };
  fmt::print("created    {}\n", when("created"));
  fmt::print("last used  {}\n", when("last_used"));
  fmt::print("hits       {}\n", cell(e.meta, {"hits"}));
  std::string list;
  for (const auto& [name, data] : e.artifacts)
    list += fmt::format("{}{} ({})", list.empty() ? "" : ", ", name, human_size(data.size()));
  fmt::print("artifacts  {}\n", list.empty() ? "-" : list);
  // AMD: comgr or lld, comgr's version, and why (runtime/launch.cpp writes it).
  if (field(e.meta, {"linker", "name"})) {
    std::string version = cell(e.meta, {"linker", "version"});
    fmt::print("linker     {}{} ({})\n", cell(e.meta, {"linker", "name"}),
               version == "-" || version.empty() ? "" : " " + version, cell(e.meta, {"linker", "reason"}));
  }
  // Where the compile's time went (runtime/launch.cpp: the trace, then compile()'s phases).
  if (const json* p = field(e.meta, {"phases_ms"}); p && p->is_array() && !p->empty()) {
    std::string line;
    for (const json& ph : *p)
      if (ph.is_array() && ph.size() == 2 && ph[0].is_string() && ph[1].is_number())
        line += fmt::format("{}{} {:.1f}", line.empty() ? "" : ", ", ph[0].get<std::string>(), ph[1].get<double>());
    const json* total = field(e.meta, {"compile_ms"});
    fmt::print("phases     {} (ms; compile after the trace {})\n", line,
               total && total->is_number() ? fmt::format("{:.1f} ms", total->get<double>()) : std::string("-"));
  }
  fmt::print("meta       {}\n", dump(e.meta, 2));
  return 0;
}

int print_artifact(const tl::cache::Entry& e, const std::string& name, const std::string& missing) {
  auto it = e.artifacts.find(name);
  if (it == e.artifacts.end()) throw UsageError{missing};
  const auto& data = it->second;
  std::fwrite(data.data(), 1, data.size(), stdout);
  if (!data.empty() && data.back() != '\n') std::fputc('\n', stdout);
  return 0;
}

int cmd_ir(DiskCache& cache, const std::vector<std::string>& args) {
  Options o = parse_options(args, {"--llvm"}, {}, 1);
  if (o.positional.empty()) throw UsageError{"ir needs a KEY", true};
  tl::cache::Entry e = find(cache, o.positional[0]);
  const std::string name = o.flags.count("--llvm") ? "llvm_ir" : "tile_ir";
  return print_artifact(e, name, fmt::format("no {} stored for entry {}", name, e.key.substr(0, 12)));
}

int cmd_isa(DiskCache& cache, const std::vector<std::string>& args) {
  Options o = parse_options(args, {}, {}, 1);
  if (o.positional.empty()) throw UsageError{"isa needs a KEY", true};
  tl::cache::Entry e = find(cache, o.positional[0]);
  if (e.artifacts.count("isa")) return print_artifact(e, "isa", "");
  // AMD code objects are disassembled on demand and PTX is shown as it is, through the
  // provider libtl registers (runtime/isa_text.cpp).
  if (auto provider = tl::cache::isa_provider()) {
    std::string text = provider(e);
    if (!text.empty()) {
      fmt::print("{}{}", text, text.back() == '\n' ? "" : "\n");
      return 0;
    }
  }
  throw UsageError{"no ISA text stored for this entry"};
}

int cmd_stats(DiskCache& cache, const std::vector<std::string>& args) {
  Options o = parse_options(args, {"--json"}, {}, 0);
  tl::cache::Stats s = cache.stats();
  std::string problem = cache.disk_problem();
  if (o.flags.count("--json")) {
    json out = {{"dir", cache.dir().string()}, {"entries", s.entries},   {"bytes", s.bytes},
                {"max_bytes", cache.max_bytes()}, {"hits", s.hits},      {"misses", s.misses},
                {"rejected", s.rejected},          {"evicted", s.evicted}, {"usable", problem.empty()}};
    if (!problem.empty()) out["problem"] = problem;
    fmt::print("{}\n", dump(out, 2));
    return 0;
  }
  uint64_t lookups = s.hits + s.misses;
  fmt::print("directory  {}{}\n", cache.dir().string(), problem.empty() ? "" : " (not usable: " + problem + ")");
  fmt::print("entries    {}\n", s.entries);
  fmt::print("size       {} of {} ({} bytes)\n", human_size(s.bytes), human_size(cache.max_bytes()), s.bytes);
  fmt::print("hits       {}{}\n", s.hits,
             lookups ? fmt::format(" ({:.1f}% of {} lookups)", 100.0 * double(s.hits) / double(lookups), lookups)
                     : std::string());
  fmt::print("misses     {}\n", s.misses);
  fmt::print("rejected   {}\n", s.rejected);
  fmt::print("evicted    {}\n", s.evicted);
  return 0;
}

// The decisions tl::autotune stored (runtime/autotune.cpp): entries whose metadata says
// "kind": "autotune". Their tables are in --json (and `show KEY`).
int cmd_tune(DiskCache& cache, const std::vector<std::string>& args) {
  Options o = parse_options(args, {"--json"}, {"--kernel"}, 0);
  std::vector<tl::cache::EntryInfo> infos = cache.list();
  auto kernel = o.values.find("--kernel");
  std::erase_if(infos, [&](const tl::cache::EntryInfo& i) {
    return cell(i.meta, {"kind"}) != "autotune" || (kernel != o.values.end() && cell(i.meta, {"kernel"}) != kernel->second);
  });
  if (o.flags.count("--json")) {
    json out = json::array();
    for (const auto& i : infos) {
      json d = {{"key", i.key}, {"last_used", i.last_used}, {"hits", i.hits}};
      for (const char* f : {"kernel", "key", "device", "compiler", "best", "best_config", "best_ms", "configs",
                            "dropped", "tune_ms", "table"})
        d[f == std::string("key") ? "tune_key" : f] = i.meta.value(f, json());
      out.push_back(std::move(d));
    }
    fmt::print("{}\n", dump(out, 2));
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"KEY", "KERNEL", "TUNED FOR", "DEVICE", "BEST", "MS", "DROPPED", "COMPILER", "LAST USED"});
  for (const auto& i : infos)
    rows.push_back({i.key.substr(0, 12), cell(i.meta, {"kernel"}), cell(i.meta, {"key"}), cell(i.meta, {"device"}),
                    cell(i.meta, {"best_text"}),
                    field(i.meta, {"best_ms"}) && field(i.meta, {"best_ms"})->is_number()
                        ? fmt::format("{:.4f}", field(i.meta, {"best_ms"})->get<double>())
                        : "-",
                    cell(i.meta, {"dropped"}) + "/" + cell(i.meta, {"configs"}), cell(i.meta, {"compiler"}),
                    human_time(i.last_used)});
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) line += c + 1 == r.size() ? r[c] : fmt::format("{:<{}}  ", r[c], width[c]);
    fmt::print("{}\n", line);
  }
  if (infos.empty()) fmt::print(stderr, "(no autotuning decisions in {})\n", cache.dir().string());
  return 0;
}

int cmd_prune(DiskCache& cache, const std::vector<std::string>& args) {
  Options o = parse_options(args, {}, {"--max-size"}, 0);
  auto it = o.values.find("--max-size");
  if (it == o.values.end()) throw UsageError{"prune needs --max-size BYTES", true};
  auto max = tl::cache::parse_size(it->second);
  if (!max) throw UsageError{fmt::format("bad size '{}' (expected e.g. 1000000, 512K, 100M, 2G)", it->second)};
  uint64_t freed = cache.prune(*max);
  tl::cache::Stats s = cache.stats();
  fmt::print("freed {} ({} bytes); {} in {} entries remain\n", human_size(freed), freed, human_size(s.bytes),
             s.entries);
  return 0;
}

int cmd_clear(DiskCache& cache, const std::vector<std::string>& args) {
  parse_options(args, {}, {}, 0);
  cache.clear();
  fmt::print("cleared {}\n", cache.dir().string());
  return 0;
}

int run(int argc, char** argv) {
  std::optional<std::string> dir;
  std::string command;
  std::vector<std::string> rest;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      fmt::print("{}", kUsage);
      return 0;
    }
    if (a == "--dir") {
      if (i + 1 >= argc) throw UsageError{"--dir needs a directory", true};
      dir = argv[++i];
    } else if (a.starts_with("--dir=")) {
      dir = a.substr(6);
    } else if (command.empty() && !a.starts_with("-")) {
      command = a;
    } else if (command.empty()) {
      throw UsageError{fmt::format("unknown option '{}'", a), true};
    } else {
      rest.push_back(a);
    }
  }
  if (command.empty()) throw UsageError{"no command given", true};
  if (dir && dir->empty()) throw UsageError{"--dir needs a directory", true};
  static const std::set<std::string> commands = {"list", "show", "ir", "isa", "stats", "tune", "prune", "clear"};
  if (command == "help") {
    fmt::print("{}", kUsage);
    return 0;
  }
  if (!commands.count(command)) throw UsageError{fmt::format("unknown command '{}'", command), true};

  DiskCache cache(dir ? std::filesystem::path(*dir) : DiskCache::default_dir());
  if (std::string p = cache.disk_problem(); !p.empty() && command != "stats")
    fmt::print(stderr, "tl-cache: warning: cache directory {} is not usable ({})\n", cache.dir().string(), p);
  if (command == "list") return cmd_list(cache, rest);
  if (command == "show") return cmd_show(cache, rest);
  if (command == "ir") return cmd_ir(cache, rest);
  if (command == "isa") return cmd_isa(cache, rest);
  if (command == "stats") return cmd_stats(cache, rest);
  if (command == "tune") return cmd_tune(cache, rest);
  if (command == "prune") return cmd_prune(cache, rest);
  return cmd_clear(cache, rest);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    int rc = run(argc, argv);
    if (std::fflush(stdout) != 0) {
      std::perror("tl-cache: writing output");
      return 2;
    }
    return rc;
  } catch (const UsageError& e) {
    fmt::print(stderr, "tl-cache: {}\n", e.message);
    if (e.show_usage) fmt::print(stderr, "{}", kUsage);
    return 1;
  } catch (const tl::error& e) {
    fmt::print(stderr, "tl-cache: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tl-cache: error: {}\n", e.what());
    return 2;
  }
}
