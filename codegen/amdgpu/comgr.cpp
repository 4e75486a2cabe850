// link_hsaco_with_comgr: the HSACO link done by AMD's code-object manager instead of lld.
//
// comgr carries its own LLVM (Debian's 5.2.3 is built on LLVM 15). Linking it next to
// LLVM 22 makes the two LLVMs' symbols collide and the program crash at start-up, so it
// is loaded with dlopen(RTLD_LOCAL) and called through the few C entry points declared
// below; this file includes no LLVM and no comgr header. The library is never unloaded:
// its LLVM has static destructors we do not want to run at an arbitrary time.
#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <string>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/llvm_guard.hpp"

namespace tl::amd {
namespace {

// The subset of amd_comgr.h we use. Handles are structs of one uint64_t passed by value.
// Status and data-kind values are the same in comgr 2.x and 3.x; the action enum was
// renumbered in 3.0 (actions were removed), so the link action depends on the version.
struct Data { uint64_t handle; };
struct DataSet { uint64_t handle; };
struct ActionInfo { uint64_t handle; };
using Status = int;  // 0 is AMD_COMGR_STATUS_SUCCESS
constexpr Status kSuccess = 0;
constexpr int kDataKindLog = 0x5;
constexpr int kDataKindRelocatable = 0x7;
constexpr int kDataKindExecutable = 0x8;
constexpr int kActionLinkRelocatableToExecutableV2 = 0x9;  // comgr 2.x (ROCm <= 6)
constexpr int kActionLinkRelocatableToExecutableV3 = 0x7;  // comgr 3.x (ROCm 7)

struct Comgr {
  void* lib = nullptr;
  std::string load_error;
  std::string version;
  int link_action = kActionLinkRelocatableToExecutableV2;
  void (*get_version)(size_t*, size_t*) = nullptr;
  Status (*status_string)(Status, const char**) = nullptr;
  Status (*get_isa_count)(size_t*) = nullptr;
  Status (*get_isa_name)(size_t, const char**) = nullptr;
  Status (*create_data)(int, Data*) = nullptr;
  Status (*release_data)(Data) = nullptr;
  Status (*set_data)(Data, size_t, const char*) = nullptr;
  Status (*set_data_name)(Data, const char*) = nullptr;
  Status (*get_data)(Data, size_t*, char*) = nullptr;
  Status (*create_data_set)(DataSet*) = nullptr;
  Status (*destroy_data_set)(DataSet) = nullptr;
  Status (*data_set_add)(DataSet, Data) = nullptr;
  Status (*action_data_count)(DataSet, int, size_t*) = nullptr;
  Status (*action_data_get_data)(DataSet, int, size_t, Data*) = nullptr;
  Status (*create_action_info)(ActionInfo*) = nullptr;
  Status (*destroy_action_info)(ActionInfo) = nullptr;
  Status (*action_info_set_isa_name)(ActionInfo, const char*) = nullptr;
  Status (*action_info_set_logging)(ActionInfo, bool) = nullptr;
  Status (*do_action)(int, ActionInfo, DataSet, DataSet) = nullptr;
};

template <typename F>
bool bind(Comgr& c, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(c.lib, name));
  if (!fn) c.load_error = std::string("libamd_comgr lacks ") + name;
  return fn != nullptr;
}

const Comgr& comgr() {
  static Comgr c;
  static std::once_flag once;
  // (comgr's loading, its queries and links: no compile worker forked meanwhile)
  codegen::InProcessLlvmGuard guard;
  std::call_once(once, [] {
    // TL_COMGR_PATH lets a user point at a specific ROCm install's library.
    static const char* names[] = {"libamd_comgr.so.3", "libamd_comgr.so.2", "libamd_comgr.so",
                                  "/opt/rocm/lib/libamd_comgr.so.3",
                                  "/opt/rocm/lib/libamd_comgr.so.2"};
    std::string tried;
    if (const char* env = std::getenv("TL_COMGR_PATH"); env && *env) {
      c.lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
      if (!c.lib) tried += std::string("\n  ") + dlerror();
    }
    for (const char* name : names) {
      if (c.lib) break;
      c.lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (!c.lib) tried += std::string("\n  ") + dlerror();
    }
    if (!c.lib) {
      c.load_error = "libamd_comgr is not installed (dlopen failed:" + tried + ")";
      return;
    }
    bool ok = bind(c, c.get_version, "amd_comgr_get_version") &&
              bind(c, c.status_string, "amd_comgr_status_string") &&
              bind(c, c.get_isa_count, "amd_comgr_get_isa_count") &&
              bind(c, c.get_isa_name, "amd_comgr_get_isa_name") &&
              bind(c, c.create_data, "amd_comgr_create_data") &&
              bind(c, c.release_data, "amd_comgr_release_data") &&
              bind(c, c.set_data, "amd_comgr_set_data") &&
              bind(c, c.set_data_name, "amd_comgr_set_data_name") &&
              bind(c, c.get_data, "amd_comgr_get_data") &&
              bind(c, c.create_data_set, "amd_comgr_create_data_set") &&
              bind(c, c.destroy_data_set, "amd_comgr_destroy_data_set") &&
              bind(c, c.data_set_add, "amd_comgr_data_set_add") &&
              bind(c, c.action_data_count, "amd_comgr_action_data_count") &&
              bind(c, c.action_data_get_data, "amd_comgr_action_data_get_data") &&
              bind(c, c.create_action_info, "amd_comgr_create_action_info") &&
              bind(c, c.destroy_action_info, "amd_comgr_destroy_action_info") &&
              bind(c, c.action_info_set_isa_name, "amd_comgr_action_info_set_isa_name") &&
              bind(c, c.action_info_set_logging, "amd_comgr_action_info_set_logging") &&
              bind(c, c.do_action, "amd_comgr_do_action");
    if (!ok) {
      c.lib = nullptr;  // unusable; keep it loaded rather than dlclose an LLVM
      return;
    }
    size_t major = 0, minor = 0;
    c.get_version(&major, &minor);
    c.version = std::to_string(major) + "." + std::to_string(minor);
    if (major >= 3) c.link_action = kActionLinkRelocatableToExecutableV3;
  });
  return c;
}

// comgr's own LLVM state is not documented as thread-safe on old releases.
std::mutex comgr_mutex;

// Releases every comgr object made during one link, whatever way we leave.
struct Session {
  const Comgr& c;
  Data input{0}, result_data{0}, log_data{0};
  DataSet in_set{0}, out_set{0};
  ActionInfo info{0};
  bool have_input = false, have_result = false, have_log = false, have_in = false,
       have_out = false, have_info = false;
  ~Session() {
    if (have_result) c.release_data(result_data);
    if (have_log) c.release_data(log_data);
    if (have_input) c.release_data(input);
    if (have_in) c.destroy_data_set(in_set);
    if (have_out) c.destroy_data_set(out_set);
    if (have_info) c.destroy_action_info(info);
  }
};

std::string status_text(const Comgr& c, Status s) {
  const char* text = nullptr;
  if (c.status_string(s, &text) == kSuccess && text) return text;
  return "status " + std::to_string(s);
}

bool read_data(const Comgr& c, Data d, std::string& out) {
  size_t size = 0;
  if (c.get_data(d, &size, nullptr) != kSuccess) return false;
  out.resize(size);
  return size == 0 || c.get_data(d, &size, out.data()) == kSuccess;
}

// Whether comgr lists the processor of `isa_name` (old releases print nothing useful when
// asked to link for one they do not know). Compares processors only: feature suffixes
// (":xnack-") are fine to pass on. Caller holds comgr_mutex.
bool knows_isa_locked(const Comgr& c, const std::string& isa_name, std::string& why) {
  auto processor = [](const std::string& name) { return name.substr(0, name.find(':')); };
  size_t count = 0;
  std::string last;
  if (c.get_isa_count(&count) == kSuccess) {
    for (size_t i = 0; i < count; ++i) {
      const char* name = nullptr;
      if (c.get_isa_name(i, &name) != kSuccess || !name) continue;
      if (processor(name) == processor(isa_name)) return true;
      last = name;
    }
  }
  why = "comgr " + c.version + " does not know the ISA " + isa_name +
        (last.empty() ? "" : " (its list ends at " + last + ")");
  return false;
}

}  // namespace

std::string comgr_version(std::string* why) {
  const Comgr& c = comgr();
  if (!c.lib && why) *why = c.load_error;
  return c.lib ? c.version : std::string();
}

bool comgr_knows_isa(const std::string& isa_name, std::string* why) {
  std::string scratch;
  std::string& msg = why ? *why : scratch;
  const Comgr& c = comgr();
  if (!c.lib) {
    msg = c.load_error;
    return false;
  }
  codegen::InProcessLlvmGuard guard;
  std::lock_guard<std::mutex> lock(comgr_mutex);
  return knows_isa_locked(c, isa_name, msg);
}

std::optional<std::vector<uint8_t>> link_hsaco_with_comgr(const std::vector<uint8_t>& relocatable,
                                                          const std::string& isa_name,
                                                          std::string* log) {
  std::string scratch;
  std::string& msg = log ? *log : scratch;
  msg.clear();
  const Comgr& c = comgr();
  if (!c.lib) {
    msg = c.load_error;
    return std::nullopt;
  }
  codegen::InProcessLlvmGuard guard;
  std::lock_guard<std::mutex> lock(comgr_mutex);

  // Ask first whether comgr knows the ISA: old releases print nothing useful when it
  // does not.
  if (!knows_isa_locked(c, isa_name, msg)) return std::nullopt;

  Session s{c};
  auto fail = [&](const char* step, Status st) {
    std::string detail = msg;  // whatever log we already have
    msg = std::string("comgr ") + c.version + ": " + step + " failed: " + status_text(c, st);
    if (!detail.empty()) msg += "\n" + detail;
    return std::nullopt;
  };
  Status st;
  if ((st = c.create_data(kDataKindRelocatable, &s.input)) != kSuccess) return fail("create_data", st);
  s.have_input = true;
  if ((st = c.set_data(s.input, relocatable.size(),
                       reinterpret_cast<const char*>(relocatable.data()))) != kSuccess)
    return fail("set_data", st);
  if ((st = c.set_data_name(s.input, "kernel.o")) != kSuccess) return fail("set_data_name", st);
  if ((st = c.create_data_set(&s.in_set)) != kSuccess) return fail("create_data_set", st);
  s.have_in = true;
  if ((st = c.data_set_add(s.in_set, s.input)) != kSuccess) return fail("data_set_add", st);
  if ((st = c.create_data_set(&s.out_set)) != kSuccess) return fail("create_data_set", st);
  s.have_out = true;
  if ((st = c.create_action_info(&s.info)) != kSuccess) return fail("create_action_info", st);
  s.have_info = true;
  if ((st = c.action_info_set_isa_name(s.info, isa_name.c_str())) != kSuccess)
    return fail("action_info_set_isa_name", st);
  c.action_info_set_logging(s.info, true);

  Status link = c.do_action(c.link_action, s.info, s.in_set, s.out_set);

  // The log comes back in the result set whether or not the link worked.
  size_t n = 0;
  if (c.action_data_count(s.out_set, kDataKindLog, &n) == kSuccess && n > 0 &&
      c.action_data_get_data(s.out_set, kDataKindLog, 0, &s.log_data) == kSuccess) {
    s.have_log = true;
    read_data(c, s.log_data, msg);
  }
  if (link != kSuccess) return fail("link (AMD_COMGR_ACTION_LINK_RELOCATABLE_TO_EXECUTABLE)", link);

  n = 0;
  if ((st = c.action_data_count(s.out_set, kDataKindExecutable, &n)) != kSuccess)
    return fail("action_data_count", st);
  if (n == 0) {
    msg = "comgr " + c.version + ": the link reported success but produced no executable\n" + msg;
    return std::nullopt;
  }
  if ((st = c.action_data_get_data(s.out_set, kDataKindExecutable, 0, &s.result_data)) != kSuccess)
    return fail("action_data_get_data", st);
  s.have_result = true;
  std::string bytes;
  if (!read_data(c, s.result_data, bytes)) return fail("get_data", 1);
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

}  // namespace tl::amd
