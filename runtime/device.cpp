// The public device handle and device detection: TL_DEVICE or set_default_device,
// else an AMD GPU, else an NVIDIA GPU, else the CPU.
#include <fmt/format.h>

#include <atomic>
#include <mutex>

#include "runtime/device.hpp"
#include "runtime/env.hpp"
#include "tl/kernel.hpp"

namespace tl {

namespace {
std::mutex g_mu;
device g_default;

runtime::Device& need(const std::shared_ptr<runtime::Device>& d) {
  if (!d) throw device_error("tl::device: this handle holds no device");
  return *d;
}

device detect() {
  std::string choice = env::get("TL_DEVICE");
  if (choice == "cpu") return cpu_device();
  if (choice == "hip" || choice == "amd") return hip_device(0);
  if (choice == "cuda" || choice == "nvidia") return cuda_device(0);
  if (!choice.empty()) throw device_error(fmt::format("TL_DEVICE='{}': expected cpu, hip or cuda", choice));
  try {
    return hip_device(0);
  } catch (const device_error& e) {
    env::debug("no AMD GPU: {}", e.what());
  }
  try {
    return cuda_device(0);
  } catch (const device_error& e) {
    env::debug("no NVIDIA GPU: {}", e.what());
  }
  return cpu_device();
}
}  // namespace

// Bumped by set_default_device: a thread's copy of the default device is good while the
// generation it was taken at is current, so a launch without a named device takes no lock.
static std::atomic<uint64_t> g_default_generation{1};

device default_device() {
  thread_local device t_cached;
  thread_local uint64_t t_generation = 0;
  if (t_generation == g_default_generation.load(std::memory_order_acquire)) return t_cached;
  std::lock_guard lock(g_mu);
  if (!g_default) {
    g_default = detect();
    env::debug("default device: {} ({})", g_default.name(), g_default.target());
  }
  t_cached = g_default;
  t_generation = g_default_generation.load(std::memory_order_relaxed);
  return g_default;
}

void set_default_device(device d) {
  std::lock_guard lock(g_mu);
  g_default = std::move(d);
  g_default_generation.fetch_add(1, std::memory_order_release);
}

device cpu_device() {
  static device d(runtime::make_cpu_device());
  return d;
}

device hip_device(int ordinal) {
  static std::mutex mu;
  static std::vector<device> devices;
  std::lock_guard lock(mu);
  if (ordinal < 0) throw device_error("tl::hip_device: negative ordinal");
  if (size_t(ordinal) >= devices.size()) devices.resize(ordinal + 1);
  if (!devices[ordinal]) devices[ordinal] = device(runtime::make_hip_device(ordinal));
  return devices[ordinal];
}

device cuda_device(int ordinal) {
  static std::mutex mu;
  static std::vector<device> devices;
  std::lock_guard lock(mu);
  if (ordinal < 0) throw device_error("tl::cuda_device: negative ordinal");
  if (size_t(ordinal) >= devices.size()) devices.resize(ordinal + 1);
  if (!devices[ordinal]) devices[ordinal] = device(runtime::make_cuda_device(ordinal));
  return devices[ordinal];
}

device_kind device::kind() const {
  switch (need(impl_).kind()) {
    case runtime::DeviceKind::cpu: return device_kind::cpu;
    case runtime::DeviceKind::hip: return device_kind::hip;
    case runtime::DeviceKind::cuda: return device_kind::cuda;
  }
  return device_kind::cpu;
}
std::string device::name() const { return need(impl_).name(); }
std::string device::target() const {
  auto t = need(impl_).target();
  if (t.kind == codegen::TargetDesc::cpu) return "cpu-" + t.arch;
  return t.kind == codegen::TargetDesc::amdgpu && !t.features.empty() ? t.arch + ":" + t.features : t.arch;
}
int device::compute_units() const {
  // Queried once per device: the query can cost a driver call (seed 004 caches it too).
  auto* d = impl_.get();
  static std::mutex mu;
  static std::vector<std::pair<runtime::Device*, int>> known;
  std::lock_guard lock(mu);
  for (auto& [p, n] : known)
    if (p == d) return n;
  int n = need(impl_).compute_units();
  known.emplace_back(d, n);
  return n;
}
void device::synchronize() const { need(impl_).synchronize(); }
void* device::alloc_bytes(size_t bytes) const { return need(impl_).alloc(bytes); }
void device::free_bytes(void* p) const { need(impl_).free(p); }
void device::copy_to_device(void* dst, const void* src, size_t bytes) const { need(impl_).copy_to_device(dst, src, bytes); }
void device::copy_to_host(void* dst, const void* src, size_t bytes) const { need(impl_).copy_to_host(dst, src, bytes); }

}  // namespace tl
