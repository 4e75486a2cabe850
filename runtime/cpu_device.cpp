// The host CPU as a tl device: host memory, kernels linked in-process by LLVM's ORC JIT,
// and a persistent thread pool that runs a launch's grid of programs.
//
// Kernels follow the CPU kernel ABI of codegen/cpu/target.cpp. Every launch hands its
// programs a LaunchContext (the ABI's %ctx); the generated code calls back into
// tl_cpu_fault, tl_cpu_print and tl_cpu_check below.
//
// Bounds checking (CompileOptions::bounds_check). Every allocation this device makes is
// recorded as [base, base + size). An access is in bounds when it lies entirely inside
// one live allocation. An access that straddles an allocation's edge is always out of
// bounds. An access that touches no allocation at all is out of bounds, unless one of
// the launch's pointer arguments points outside every allocation (a raw host pointer
// the user passed): the extent of such memory is unknown, so accesses outside all
// device allocations are then let through. Device buffers are thus checked exactly
// in every launch that only uses device buffers.
//
// Freed buffers. A freed allocation is not handed back to the C library at once: it is
// kept in a quarantine (the last kQuarantineBlocks frees, at most kQuarantineBytes; the
// pages of large ones released to the system), so that no other object can take its
// address while it is there. A launch with a pointer argument into a quarantined buffer is
// refused whether or not bounds checking is on (Device::freed), and with bounds checking
// an access that lands in one faults. Past the quarantine a freed buffer's memory may be
// anyone's again, and a pointer into it is a raw host pointer like any other.
#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/AbsoluteSymbols.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cfenv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "codegen/llvm_guard.hpp"
#include "codegen/cpu/limits.hpp"
#include "runtime/device.hpp"
#include "tl/error.hpp"

namespace tl::runtime {
namespace {

// ------------------------------------------------------------------ allocations

class Registry {
 public:
  enum class Where { inside, straddles, outside, freed };

  // How many freed blocks, and how many of their bytes, the quarantine keeps.
  static constexpr size_t kQuarantineBlocks = 256;
  static constexpr uint64_t kQuarantineBytes = uint64_t(4) << 30;
  // Blocks this large give their whole pages back to the system while quarantined
  // (madvise: their address range stays ours, their memory does not stay resident).
  static constexpr size_t kReleasePagesFrom = 64 << 10;

  // At exit the quarantine gives its blocks back: they were freed by their owners (and a
  // leak checker would report them).
  ~Registry() {
    for (auto& [q, n] : order_) std::free(q);
  }

  void add(const void* p, size_t bytes) {
    std::unique_lock lock(m_);
    allocs_[reinterpret_cast<uintptr_t>(p)] = bytes;
  }
  // Moves a live block into the quarantine; returns the blocks the quarantine lets go of,
  // for the caller to free (outside the lock).
  std::vector<void*> remove(void* p) {
    std::vector<void*> evicted;
    std::unique_lock lock(m_);
    auto it = allocs_.find(reinterpret_cast<uintptr_t>(p));
    if (it == allocs_.end()) {
      evicted.push_back(p);  // not ours (cannot happen through tl::buffer): just free it
      return evicted;
    }
    const size_t bytes = it->second;
    const size_t rounded = rounded_size(bytes);
    allocs_.erase(it);
    if (rounded >= kReleasePagesFrom) release_pages(p, rounded);
    freed_[reinterpret_cast<uintptr_t>(p)] = bytes;
    order_.push_back({p, rounded});
    quarantined_bytes_ += rounded;
    while (!order_.empty() && (order_.size() > kQuarantineBlocks || quarantined_bytes_ > kQuarantineBytes)) {
      auto [q, n] = order_.front();
      order_.pop_front();
      freed_.erase(reinterpret_cast<uintptr_t>(q));
      quarantined_bytes_ -= n;
      evicted.push_back(q);
    }
    return evicted;
  }
  // Whether addr points into (or just past) a quarantined freed block, and not into a live
  // one: a block allocated right after a quarantined one starts where that one ends (under
  // ThreadSanitizer's allocator, eight threads allocating and freeing made it happen).
  bool freed(uint64_t addr) const {
    std::shared_lock lock(m_);
    if (auto live = allocs_.upper_bound(addr); live != allocs_.begin()) {
      auto below = std::prev(live);
      if (addr <= below->first + below->second) return false;
    }
    auto above = freed_.upper_bound(addr);
    if (above == freed_.begin()) return false;
    auto below = std::prev(above);
    return addr <= below->first + below->second;
  }
  Where classify(uint64_t addr, uint64_t bytes) const {
    std::shared_lock lock(m_);
    const uint64_t end = addr + bytes;
    // Touching a quarantined block at all: a use after free.
    if (auto above = freed_.upper_bound(end > addr ? end - 1 : addr); above != freed_.begin()) {
      auto below = std::prev(above);
      if (below->first + below->second > addr) return Where::freed;
    }
    // The last allocation starting at or below addr, and the first one above it.
    auto above = allocs_.upper_bound(addr);
    if (above != allocs_.begin()) {
      auto below = std::prev(above);
      const uint64_t b_end = below->first + below->second;
      if (end <= b_end && end >= addr) return Where::inside;
      if (addr < b_end) return Where::straddles;
    }
    if (above != allocs_.end() && above->first < end) return Where::straddles;
    return Where::outside;
  }
  // Whether a pointer points into an allocation or just past its end.
  bool known(uint64_t addr) const { return classify(addr, 0) == Where::inside; }

  // The block CpuDevice::alloc makes for `bytes`: 64-byte aligned (a cache line, the
  // widest vector), and aligned_alloc wants a multiple of the alignment.
  static size_t rounded_size(size_t bytes) { return std::max<size_t>(64, (bytes + 63) / 64 * 64); }

 private:
  static void release_pages(void* p, size_t bytes) {
    const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t first = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
    const uintptr_t last = (reinterpret_cast<uintptr_t>(p) + bytes) / page * page;
    // Whole pages inside the block only: the allocator's own bytes around it stay.
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  }

  mutable std::shared_mutex m_;
  std::map<uintptr_t, size_t> allocs_;
  std::map<uintptr_t, size_t> freed_;           // the quarantine, by address
  std::deque<std::pair<void*, size_t>> order_;  // the quarantine, oldest first
  uint64_t quarantined_bytes_ = 0;
};

Registry& registry() {
  static Registry r;
  return r;
}

// ------------------------------------------------------------------ the kernel's ctx

struct LaunchContext {
  std::atomic<bool> faulted{false};
  bool foreign_pointers = false;  // see the bounds-checking rule at the top
  // The first fault, written once by the program that set `faulted`.
  int kind = 0;
  std::string file, msg;
  int line = 0;
  int pid[3] = {0, 0, 0};
  uint64_t bad_addr = 0, bad_bytes = 0;
  bool bad_freed = false;  // the access touched a freed (quarantined) buffer
};

// tl_cpu_check records the access it refused here; the kernel calls tl_cpu_fault next,
// on the same thread.
thread_local uint64_t t_bad_addr = 0, t_bad_bytes = 0;
thread_local bool t_bad_freed = false;

void tl_cpu_fault(void* ctx, int32_t kind, const char* file, int32_t line, const char* msg, int32_t x, int32_t y,
                  int32_t z) {
  auto* c = static_cast<LaunchContext*>(ctx);
  bool expected = false;
  if (!c->faulted.compare_exchange_strong(expected, true)) return;  // keep the first
  c->kind = kind;
  c->file = file ? file : "";
  c->line = line;
  c->msg = msg ? msg : "";
  c->pid[0] = x;
  c->pid[1] = y;
  c->pid[2] = z;
  c->bad_addr = t_bad_addr;
  c->bad_bytes = t_bad_bytes;
  c->bad_freed = t_bad_freed;
}

std::mutex g_print_mutex;

void tl_cpu_print(void*, const char* prefix, int32_t x, int32_t y, int32_t z, int64_t index, double value,
                  int32_t is_int) {
  std::string v = is_int ? fmt::format("{}", int64_t(value)) : fmt::format("{:.9g}", value);
  std::string line = index < 0 ? fmt::format("pid ({}, {}, {}) {}: {}\n", x, y, z, prefix, v)
                               : fmt::format("pid ({}, {}, {}) {} [{}]: {}\n", x, y, z, prefix, index, v);
  std::lock_guard lock(g_print_mutex);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

int32_t tl_cpu_check(void* ctx, int64_t addr, int64_t bytes) {
  auto* c = static_cast<LaunchContext*>(ctx);
  auto where = registry().classify(uint64_t(addr), uint64_t(bytes));
  if (where == Registry::Where::inside) return 1;
  if (where == Registry::Where::outside && c->foreign_pointers) return 1;
  t_bad_addr = uint64_t(addr);
  t_bad_bytes = uint64_t(bytes);
  t_bad_freed = where == Registry::Where::freed;
  return 0;
}

// ------------------------------------------------------------------ thread pool

// Runs launches on hardware_concurrency() threads. Each launch is a job split into
// chunks of consecutive programs; the threads take chunks from the oldest job first,
// so any number of user threads may launch at once.
//
// The launching thread works too, when its stack can hold the kernel's frame (see
// caller_can_run): it takes chunks of its own job beside the workers, and a job of one
// chunk (a small grid) runs on it alone, with no hand-off at all. Waking a sleeping
// worker and being woken back costs tens of microseconds, far more than a small
// kernel takes.
class ThreadPool {
 public:
  struct Job {
    std::function<void(uint64_t, uint64_t)> run;  // programs [begin, end)
    uint64_t total = 0, chunk = 1, chunks = 0;
    std::atomic<uint64_t> next{0};
    std::atomic<uint64_t> finished{0};
    std::mutex m;
    std::condition_variable cv;
    bool complete = false;

    // Takes and runs one chunk; false when none is left to take.
    bool run_one() {
      uint64_t c = next.fetch_add(1);
      if (c >= chunks) return false;
      uint64_t begin = c * chunk;
      run(begin, std::min(total, begin + chunk));
      if (finished.fetch_add(1) + 1 == chunks) {
        std::lock_guard lock(m);
        complete = true;
        cv.notify_all();
      }
      return true;
    }
  };

  static ThreadPool& get() {
    static ThreadPool* pool = new ThreadPool();  // never destroyed: threads may outlive static destructors
    return *pool;
  }

  int size() const { return int(threads_.size()); }

  void run(uint64_t total, std::function<void(uint64_t, uint64_t)> fn, bool caller_runs) {
    auto job = std::make_shared<Job>();
    job->run = std::move(fn);
    job->total = total;
    // A few chunks per thread balance uneven programs without much queue traffic.
    uint64_t target = uint64_t(threads_.size()) * 4;
    job->chunk = std::max<uint64_t>(1, (total + target - 1) / target);
    job->chunks = (total + job->chunk - 1) / job->chunk;
    if (caller_runs && job->chunks == 1) {
      DefaultFloatingPoint ieee;
      job->run(0, total);
      return;
    }
    {
      std::lock_guard lock(m_);
      queue_.push_back(job);
    }
    cv_.notify_all();
    if (caller_runs) {
      DefaultFloatingPoint ieee;
      while (job->run_one()) {
      }
    }
    {
      std::unique_lock lock(job->m);
      job->cv.wait(lock, [&] { return job->complete; });
    }
    // Every chunk is taken: drop the job now rather than when a worker next looks.
    std::lock_guard lock(m_);
    if (auto it = std::find(queue_.begin(), queue_.end(), job); it != queue_.end()) queue_.erase(it);
  }

  // Kernels run in the IEEE default environment (no flush-to-zero, round to nearest)
  // whatever the thread's own, so they compute the same on every thread.
  struct DefaultFloatingPoint {
    std::fenv_t saved;
    DefaultFloatingPoint() {
      std::fegetenv(&saved);
      std::fesetenv(FE_DFL_ENV);
    }
    ~DefaultFloatingPoint() { std::fesetenv(&saved); }
  };

 private:
  ThreadPool() {
    unsigned n = std::max(1u, std::thread::hardware_concurrency());
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    // Tiles live on the kernel's stack frame; large tiles need more than the default. The
    // compiler refuses a kernel whose frame would not fit (codegen/cpu/limits.hpp).
    pthread_attr_setstacksize(&attr, size_t(codegen::cpu::kWorkerStackBytes));
    for (unsigned i = 0; i < n; ++i) {
      pthread_t t;
      if (pthread_create(&t, &attr, &ThreadPool::entry, this) == 0) threads_.push_back(t);
    }
    pthread_attr_destroy(&attr);
    if (threads_.empty()) throw device_error("tl cpu: cannot start worker threads");
  }

  static void* entry(void* self) {
    // IEEE default environment whatever the launching thread set (no flush-to-zero):
    // kernels compute the same on every thread.
    std::fesetenv(FE_DFL_ENV);
    static_cast<ThreadPool*>(self)->work();
    return nullptr;
  }

  void work() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        job = queue_.front();
      }
      if (!job->run_one()) {
        std::lock_guard lock(m_);
        if (!queue_.empty() && queue_.front() == job) queue_.pop_front();
      }
    }
  }

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<pthread_t> threads_;
};

// ------------------------------------------------------------------ loading

using KernelFn = void (*)(const uint64_t*, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, void*);

// One JIT for the process, one JITDylib per loaded code object (removed with the kernel).
class Jit {
 public:
  static Jit& get() {
    static Jit* jit = new Jit();  // kernels may be released during static destruction
    return *jit;
  }

  struct Loaded {
    llvm::orc::JITDylib* dylib = nullptr;
    KernelFn fn = nullptr;
    std::string ptr_args;  // 'p' per pointer argument, '-' otherwise
  };

  Loaded load(const codegen::CodeObject& code) {
    codegen::InProcessLlvmGuard llvm_guard;  // (no compile worker forked meanwhile)
    std::lock_guard lock(m_);
    auto& es = jit_->getExecutionSession();
    std::string name = fmt::format("{}#{}", code.kernel_symbol, counter_++);
    auto jd = jit_->createJITDylib(name);
    if (!jd) fail("cannot create a JIT dylib", jd.takeError());
    llvm::orc::JITDylib& dylib = *jd;
    auto gen = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix());
    if (!gen) fail("cannot search the process for symbols", gen.takeError());
    dylib.addGenerator(std::move(*gen));
    llvm::orc::SymbolMap runtime;
    auto flags = llvm::JITSymbolFlags::Exported;
    runtime[jit_->mangleAndIntern("tl_cpu_fault")] = llvm::orc::ExecutorSymbolDef::fromPtr(&tl_cpu_fault, flags);
    runtime[jit_->mangleAndIntern("tl_cpu_print")] = llvm::orc::ExecutorSymbolDef::fromPtr(&tl_cpu_print, flags);
    runtime[jit_->mangleAndIntern("tl_cpu_check")] = llvm::orc::ExecutorSymbolDef::fromPtr(&tl_cpu_check, flags);
    if (auto err = dylib.define(llvm::orc::absoluteSymbols(std::move(runtime)))) fail("cannot define runtime symbols", std::move(err));

    Loaded out;
    out.dylib = &dylib;
    auto drop = [&] { llvm::consumeError(es.removeJITDylib(dylib)); };
    llvm::StringRef bytes(reinterpret_cast<const char*>(code.binary.data()), code.binary.size());
    if (auto err = jit_->addObjectFile(dylib, llvm::MemoryBuffer::getMemBufferCopy(bytes, name))) {
      drop();
      fail("cannot add the kernel object", std::move(err));
    }
    auto sym = jit_->lookup(dylib, code.kernel_symbol);
    if (!sym) {
      drop();
      fail("cannot link kernel " + code.kernel_symbol, sym.takeError());
    }
    out.fn = sym->toPtr<KernelFn>();
    if (auto args = jit_->lookup(dylib, code.kernel_symbol + ".ptrargs")) out.ptr_args = args->toPtr<const char*>();
    else llvm::consumeError(args.takeError());
    return out;
  }

  void unload(llvm::orc::JITDylib* dylib) {
    codegen::InProcessLlvmGuard llvm_guard;
    std::lock_guard lock(m_);
    llvm::consumeError(jit_->getExecutionSession().removeJITDylib(*dylib));
  }

 private:
  Jit() {
    codegen::InProcessLlvmGuard llvm_guard;
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto j = llvm::orc::LLJITBuilder().create();
    if (!j) fail("cannot start the JIT", j.takeError());
    jit_ = std::move(*j);
  }

  [[noreturn]] static void fail(const std::string& what, llvm::Error err) {
    throw device_error("tl cpu: " + what + ": " + llvm::toString(std::move(err)));
  }

  std::mutex m_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  uint64_t counter_ = 0;
};

class CpuKernel final : public LoadedKernel {
 public:
  // stack_bytes: the kernel's frame (the code object's report), or -1 when unknown.
  CpuKernel(Jit::Loaded l, std::string name, int64_t stack_bytes)
      : loaded_(std::move(l)), name_(std::move(name)), stack_bytes_(stack_bytes) {}
  ~CpuKernel() override { Jit::get().unload(loaded_.dylib); }
  const Jit::Loaded& loaded() const { return loaded_; }
  const std::string& name() const { return name_; }
  int64_t stack_bytes() const { return stack_bytes_; }

 private:
  Jit::Loaded loaded_;
  std::string name_;
  int64_t stack_bytes_;
};

// Bytes of stack left below the caller on this thread; 0 when the thread cannot say.
size_t stack_left() {
  thread_local const uintptr_t lowest = [] {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return uintptr_t(0);
    void* base = nullptr;
    size_t size = 0, guard = 0;
    pthread_attr_getstack(&attr, &base, &size);
    pthread_attr_getguardsize(&attr, &guard);
    pthread_attr_destroy(&attr);
    return base ? uintptr_t(base) + guard : uintptr_t(0);
  }();
  auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
  return lowest && here > lowest ? here - lowest : 0;
}

// Whether a kernel may run on the launching thread: its frame known, and small enough
// to leave room for what it calls (printing, the bounds checker) and for the user.
bool caller_can_run(const CpuKernel& k) {
  constexpr int64_t kHeadroom = 512 << 10;
  return k.stack_bytes() >= 0 && size_t(k.stack_bytes() + kHeadroom) <= stack_left();
}

// ------------------------------------------------------------------ the device

class CpuDevice final : public Device {
  static constexpr size_t kAddressSpaceBytes = size_t(1) << 47;

 public:
  DeviceKind kind() const override { return DeviceKind::cpu; }
  std::string name() const override { return "host CPU (" + llvm::sys::getHostCPUName().str() + ")"; }
  codegen::TargetDesc target() const override { return codegen::host_target(); }
  int compute_units() const override { return int(std::max(1u, std::thread::hardware_concurrency())); }

  void* alloc(size_t bytes) override {
    // (A size near SIZE_MAX would round up past it, to a tiny block.) No block of 2^47 bytes
    // or more fits a process's address space (x86-64 and AArch64 user space): refused here,
    // rather than asked of an allocator that may abort on it (the sanitizers' do).
    if (bytes >= kAddressSpaceBytes)
      throw device_error(fmt::format("tl cpu: cannot allocate {} bytes: more than the address space", bytes));
    void* p = std::aligned_alloc(64, Registry::rounded_size(bytes));
    if (!p) throw device_error(fmt::format("tl cpu: out of memory allocating {} bytes", bytes));
    registry().add(p, bytes);
    return p;
  }
  void free(void* p) override {
    if (!p) return;
    // Into the quarantine (see the top of this file); what it lets go of is freed.
    for (void* q : registry().remove(p)) std::free(q);
  }
  bool freed(const void* p) const override { return registry().freed(reinterpret_cast<uint64_t>(p)); }
  // (An empty copy may come with null pointers, an empty vector's data(): memcpy may not
  // be given them even for 0 bytes.)
  void copy_to_device(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy_device_to_device(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memmove(dst, src, bytes);
  }
  void synchronize() override {}  // launches are synchronous

  std::unique_ptr<LoadedKernel> load(const codegen::CodeObject& code) override {
    if (code.format != "elf")
      throw device_error(fmt::format("tl cpu: cannot load a '{}' code object on the CPU", code.format));
    std::string name = code.kernel_symbol.rfind("tl_", 0) == 0 ? code.kernel_symbol.substr(3) : code.kernel_symbol;
    auto frame = code.report.find("stack_bytes");
    int64_t stack_bytes = frame == code.report.end() ? -1 : frame->second;
    return std::make_unique<CpuKernel>(Jit::get().load(code), std::move(name), stack_bytes);
  }

  void launch(LoadedKernel& k, const LaunchDims& dims, const ArgSlots& args, void*) override {
    auto& kernel = static_cast<CpuKernel&>(k);
    const Jit::Loaded& l = kernel.loaded();
    if (args.size() < l.ptr_args.size())
      throw launch_error(fmt::format("tl cpu: kernel {} takes {} arguments, got {}", kernel.name(), l.ptr_args.size(),
                                     args.size()));
    const uint64_t gx = dims.grid[0], gy = dims.grid[1], gz = dims.grid[2];
    const uint64_t total = gx * gy * gz;
    if (total == 0) return;
    if (gx > INT32_MAX || gy > INT32_MAX || gz > INT32_MAX)
      throw launch_error(fmt::format("tl cpu: grid ({}, {}, {}) exceeds the i32 program ids", gx, gy, gz));

    LaunchContext ctx;
    for (size_t i = 0; i < l.ptr_args.size(); ++i)
      if (l.ptr_args[i] == 'p' && args[i] != 0 && !registry().known(args[i]) && !registry().freed(args[i]))
        ctx.foreign_pointers = true;

    KernelFn fn = l.fn;
    const uint64_t* slots = args.data();
    ThreadPool::get().run(total, [&](uint64_t begin, uint64_t end) {
      for (uint64_t p = begin; p < end; ++p) {
        if (ctx.faulted.load(std::memory_order_relaxed)) return;  // one fault stops the rest
        uint64_t x = p % gx, y = (p / gx) % gy, z = p / (gx * gy);
        fn(slots, int32_t(x), int32_t(y), int32_t(z), int32_t(gx), int32_t(gy), int32_t(gz), &ctx);
      }
    }, caller_can_run(kernel));
    if (ctx.faulted.load()) throw fault_error(kernel, ctx);
  }

 private:
  static kernel_fault fault_error(const CpuKernel& k, const LaunchContext& c) {
    std::string where = fmt::format("in kernel {}, program ({}, {}, {})", k.name(), c.pid[0], c.pid[1], c.pid[2]);
    if (c.kind == 0) return kernel_fault(fmt::format("device_assert failed: \"{}\" {}", c.msg, where), c.file, unsigned(c.line));
    if (c.kind == 2) return kernel_fault(fmt::format("{} {}", c.msg, where), c.file, unsigned(c.line));  // a run-time error
    return kernel_fault(fmt::format("out-of-bounds {} {}: {} bytes at {:#x} are {}", c.msg, where, c.bad_bytes,
                                    c.bad_addr,
                                    c.bad_freed ? "inside a buffer that was freed" : "not inside a device allocation"),
                        c.file, unsigned(c.line));
  }
};

}  // namespace

std::shared_ptr<Device> make_cpu_device() { return std::make_shared<CpuDevice>(); }

}  // namespace tl::runtime
