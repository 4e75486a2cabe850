// GPU compiles in a worker process (compile_worker.hpp says why and how).
#include "codegen/compile_worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <llvm/Support/ErrorHandling.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "tl/error.hpp"

extern char** environ;

namespace tl::codegen {
namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0 && std::strcmp(v, "false") != 0 && std::strcmp(v, "off") != 0;
}

double env_seconds(const char* name, double fallback) {
  const char* v = std::getenv(name);
  double s = v && *v ? std::atof(v) : fallback;
  return s > 0 ? s : fallback;
}

double timeout_seconds() { return env_seconds("TL_COMPILE_TIMEOUT_S", 600); }

// --- records ----------------------------------------------------------------------------

// Both ways over the worker's socket, a record: one byte of kind, two sizes, a JSON
// document and a binary. To the worker: 'J', a job (the bitcode as its binary). From it:
// 'S' alone once it has read a job whole (a worker that ends before it was never given
// the job, which another worker may then take), then 'O' (the code object without its
// binary, then the binary), 'E' (a typed error) or 'F' (LLVM failed fatally; the worker
// ends after it).
struct Record {
  char kind = 0;
  std::string json, binary;
};

constexpr size_t kHeader = 1 + 2 * sizeof(uint64_t);

// send(), not write(): a worker that is gone is EPIPE here, not a SIGPIPE that would end
// the application.
bool send_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

bool send_record(int fd, char kind, const std::string& json, const std::string& binary = {}) {
  char header[kHeader];
  const uint64_t sizes[2] = {json.size(), binary.size()};
  header[0] = kind;
  std::memcpy(header + 1, sizes, sizeof sizes);
  return send_all(fd, header, sizeof header) && send_all(fd, json.data(), json.size()) &&
         send_all(fd, binary.data(), binary.size());
}

// A whole record at the start of `buffer`, taken off it; nullopt while it is incomplete.
std::optional<Record> take_record(std::string& buffer) {
  if (buffer.size() < kHeader) return std::nullopt;
  uint64_t sizes[2];
  std::memcpy(sizes, buffer.data() + 1, sizeof sizes);
  if (buffer.size() - kHeader < sizes[0] || buffer.size() - kHeader - sizes[0] < sizes[1]) return std::nullopt;
  Record r;
  r.kind = buffer[0];
  r.json = buffer.substr(kHeader, sizes[0]);
  r.binary = buffer.substr(kHeader + sizes[0], sizes[1]);
  buffer.erase(0, kHeader + sizes[0] + sizes[1]);
  return r;
}

// The message of a tl::error without the "file:line: " its what() starts with.
std::string bare_message(const tl::error& e) {
  std::string what = e.what();
  if (e.file().empty()) return what;
  const std::string prefix = e.file() + ":" + std::to_string(e.line()) + ": ";
  return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

std::string error_json(const char* kind, const std::string& message, const std::string& file, unsigned line) {
  return nlohmann::json{{"kind", kind}, {"message", message}, {"file", file}, {"line", line}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json target_json(const TargetDesc& t) {
  return {{"kind", int(t.kind)}, {"arch", t.arch}, {"features", t.features}, {"wave_size", t.wave_size}};
}

TargetDesc target_from(const nlohmann::json& j) {
  TargetDesc t;
  t.kind = TargetDesc::Kind(j.at("kind").get<int>());
  t.arch = j.at("arch").get<std::string>();
  t.features = j.at("features").get<std::string>();
  t.wave_size = j.at("wave_size").get<int>();
  return t;
}

nlohmann::json options_json(const CompileOptions& o) {
  return {{"num_warps", o.num_warps},
          {"num_stages", o.num_stages},
          {"waves_per_eu", o.waves_per_eu},
          {"bounds_check", o.bounds_check},
          {"matrix_instr_nonkdim", o.matrix_instr_nonkdim},
          {"kpack", o.kpack},
          {"mma_version", o.mma_version},
          {"enable_fp_fusion", o.enable_fp_fusion},
          {"async_dot_stages", o.async_dot_stages},
          {"opt_level", o.opt_level}};
}

CompileOptions options_from(const nlohmann::json& j) {
  CompileOptions o;
  o.num_warps = j.at("num_warps").get<int>();
  o.num_stages = j.at("num_stages").get<int>();
  o.waves_per_eu = j.at("waves_per_eu").get<int>();
  o.bounds_check = j.at("bounds_check").get<bool>();
  o.matrix_instr_nonkdim = j.at("matrix_instr_nonkdim").get<int>();
  o.kpack = j.at("kpack").get<int>();
  o.mma_version = j.at("mma_version").get<int>();
  o.enable_fp_fusion = j.at("enable_fp_fusion").get<bool>();
  o.async_dot_stages = j.at("async_dot_stages").get<bool>();
  o.opt_level = j.at("opt_level").get<int>();
  return o;
}

std::string encode(const CodeObject& c) {
  nlohmann::json j;
  j["kernel_symbol"] = c.kernel_symbol;
  j["format"] = c.format;
  j["tile_ir"] = c.tile_ir;
  j["llvm_ir"] = c.llvm_ir;
  j["report"] = c.report;
  j["remarks"] = c.remarks;
  j["block_threads"] = c.block_threads;
  j["shared_bytes"] = c.shared_bytes;
  j["compile_ms"] = c.compile_ms;
  j["phase_ms"] = c.phase_ms;
  j["linker"] = {c.linker, c.linker_version, c.linker_reason};
  // (Text from LLVM may hold bytes that are not UTF-8: replaced rather than thrown.)
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

CodeObject decode(const std::string& json, const std::string& binary) {
  const nlohmann::json j = nlohmann::json::parse(json);
  CodeObject c;
  c.kernel_symbol = j.at("kernel_symbol").get<std::string>();
  c.format = j.at("format").get<std::string>();
  c.binary.assign(binary.begin(), binary.end());
  c.tile_ir = j.at("tile_ir").get<std::string>();
  c.llvm_ir = j.at("llvm_ir").get<std::string>();
  c.report = j.at("report").get<std::map<std::string, int64_t>>();
  c.remarks = j.at("remarks").get<std::vector<std::string>>();
  c.block_threads = j.at("block_threads").get<int>();
  c.shared_bytes = j.at("shared_bytes").get<int>();
  c.compile_ms = j.at("compile_ms").get<double>();
  c.phase_ms = j.at("phase_ms").get<std::vector<std::pair<std::string, double>>>();
  const auto& l = j.at("linker");
  c.linker = l.at(0).get<std::string>();
  c.linker_version = l.at(1).get<std::string>();
  c.linker_reason = l.at(2).get<std::string>();
  return c;
}

// --- the worker -------------------------------------------------------------------------

// The exit status of a worker that left because it was idle (TL_COMPILE_WORKER_IDLE_S).
constexpr int kIdleExit = 75;

int g_socket = -1;
std::string g_fatal_prefix;  // "kernel 'k': LLVM failed fatally compiling it for gfx942"
std::string g_fatal_file;
unsigned g_fatal_line = 0;

// LLVM's fatal error handler in the worker: LLVM is about to end the process (and must
// not be returned into); the message goes to the application first, as a compile_error.
void on_llvm_fatal(void*, const char* reason, bool) {
  send_record(g_socket, 'F',
              error_json("compile", g_fatal_prefix + ": " + (reason ? reason : "(no message)"), g_fatal_file,
                         g_fatal_line));
  _exit(0);
}

// Test hook (never set in use): TL_TEST_COMPILE_FAULT=fatal|segv|abort|hang makes the
// worker fail as LLVM can, inside the compile: a report_fatal_error, a crash, an abort
// (what an llvm_unreachable or a failed assertion ends in, after printing its message),
// a compile that never ends.
void inject_test_fault() {
  const char* fault = std::getenv("TL_TEST_COMPILE_FAULT");
  if (!fault || !*fault) return;
  if (std::strcmp(fault, "fatal") == 0) llvm::report_fatal_error("tl test: injected fatal error in a pass");
  if (std::strcmp(fault, "segv") == 0) ::raise(SIGSEGV);
  if (std::strcmp(fault, "abort") == 0) {
    std::fprintf(stderr, "tl test: injected unreachable executed at pass.cpp:1\n");
    std::abort();
  }
  if (std::strcmp(fault, "hang") == 0)
    for (;;) ::pause();
}

// The application's environment as it was when it sent the job, for the worker's own
// (what the second half reads of it: TL_AMDGPU_SCHEDULE(S), the linker's choice,
// TMPDIR, ...): the worker sees what a fork at the compile would have seen.
void take_environment(const nlohmann::json& env) {
  ::clearenv();
  for (const auto& e : env) {
    const std::string kv = e.get<std::string>();
    const size_t eq = kv.find('=');
    if (eq != std::string::npos && eq > 0) ::setenv(kv.substr(0, eq).c_str(), kv.c_str() + eq + 1, 1);
  }
}

// Reads from `fd` until `buffer` holds a whole record; false at the end of the stream.
bool receive_record(int fd, std::string& buffer, Record& r) {
  char chunk[1 << 16];
  for (;;) {
    if (std::optional<Record> got = take_record(buffer)) {
      r = std::move(*got);
      return true;
    }
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, size_t(n));
  }
}

void run_job(const Record& job) {
  const nlohmann::json j = nlohmann::json::parse(job.json);
  take_environment(j.at("env"));
  const std::string kernel = j.at("kernel").get<std::string>();
  const TargetDesc target = target_from(j.at("target"));
  g_fatal_prefix = fmt::format("kernel '{}': LLVM failed fatally compiling it for {}", kernel, target.arch);
  g_fatal_file = j.at("file").get<std::string>();
  g_fatal_line = j.at("line").get<unsigned>();
  try {
    inject_test_fault();
    const ir::SrcLoc where{g_fatal_file.c_str(), g_fatal_line};
    LoweredKernel lowered;
    lowered.module_name = j.at("module").get<std::string>();
    lowered.bitcode = job.binary;
    lowered.state = j.at("state").get<std::string>();
    lowered.name_counters = j.at("names").get<std::vector<std::pair<std::string, unsigned>>>();
    CodeObject c = emit_bitcode(target, options_from(j.at("options")), lowered, kernel, where);
    send_record(g_socket, 'O', encode(c), std::string(c.binary.begin(), c.binary.end()));
  } catch (const trace_error& e) {
    send_record(g_socket, 'E', error_json("trace", bare_message(e), e.file(), e.line()));
  } catch (const launch_error& e) {
    send_record(g_socket, 'E', error_json("launch", bare_message(e), e.file(), e.line()));
  } catch (const compile_error& e) {
    send_record(g_socket, 'E', error_json("compile", bare_message(e), e.file(), e.line()));
  } catch (const tl::error& e) {
    send_record(g_socket, 'E', error_json("error", bare_message(e), e.file(), e.line()));
  } catch (const std::exception& e) {
    send_record(g_socket, 'E',
                error_json("compile", fmt::format("kernel '{}': compiling it for {} failed: {}", kernel, target.arch,
                                                  e.what()),
                           g_fatal_file, g_fatal_line));
  } catch (...) {
    send_record(g_socket, 'E',
                error_json("compile", fmt::format("kernel '{}': compiling it for {} failed", kernel, target.arch),
                           g_fatal_file, g_fatal_line));
  }
}

// The worker: jobs one after another until the application closes its end (or it dies),
// or none comes for TL_COMPILE_WORKER_IDLE_S seconds. It leaves with _exit: no atexit
// handler, no device call, no cache write runs in a copy of the application.
[[noreturn]] void worker_main(int socket) {
  g_socket = socket;
  ::prctl(PR_SET_NAME, "tl-compile", 0, 0, 0);
  llvm::install_fatal_error_handler(on_llvm_fatal, nullptr);
  // A crash in the worker ends it by its signal, which the application reports: the
  // handlers the application (a crash reporter) or a sanitizer installed would run in a
  // copy of the application instead, and exit with a status that hides what happened.
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::signal(sig, SIG_DFL);
  std::string buffer;
  for (;;) {
    pollfd p{socket, POLLIN, 0};
    const int idle_ms = int(env_seconds("TL_COMPILE_WORKER_IDLE_S", 60) * 1000);
    int r = ::poll(&p, 1, idle_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0 && buffer.empty()) _exit(kIdleExit);
    Record job;
    if (!receive_record(socket, buffer, job)) _exit(0);
    if (job.kind != 'J' || !send_record(socket, 'S', "")) _exit(0);
    run_job(job);
  }
}

// Closes the descriptors lo..hi: close_range(2) by its number (glibc wraps it only from
// 2.34, and the bundle runs on other machines), else one by one.
void close_fds(unsigned lo, unsigned hi) {
  if (lo > hi) return;
  if (::syscall(SYS_close_range, lo, hi, 0) == 0) return;
  const long most = ::sysconf(_SC_OPEN_MAX);
  for (unsigned fd = lo; fd <= hi && long(fd) < (most > 0 ? most : 65536); ++fd) ::close(int(fd));
}

// --- the application --------------------------------------------------------------------

struct Worker {
  pid_t pid = -1;
  int socket = -1;  // the job and its answer
  int errors = -1;  // the worker's stderr (and stdout), non-blocking
};

// Ends `w` (if it still runs) and reaps it; its exit status.
int end_worker(Worker& w) {
  if (w.socket >= 0) ::close(w.socket);
  if (w.errors >= 0) ::close(w.errors);
  w.socket = w.errors = -1;
  int status = 0;
  if (w.pid > 0) {
    ::kill(w.pid, SIGKILL);
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  w.pid = -1;
  return status;
}

// Whether `w` has ended (and is reaped). Where this process cannot tell (another part
// of the application reaped it, or SIGCHLD is ignored), false: a job sent to a worker
// that is gone comes back not started, and goes to another.
bool has_ended(const Worker& w) {
  int s = 0;
  return ::waitpid(w.pid, &s, WNOHANG) == w.pid;
}

Worker spawn_worker(const std::string& kernel, const std::string& file, unsigned line) {
  auto fail = [&](const char* what, int err) {
    return compile_error(fmt::format("kernel '{}': no compile worker: {}: {}", kernel, what, std::strerror(err)), file,
                         line);
  };
  int sv[2], err[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw fail("socketpair", errno);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    ::close(sv[0]), ::close(sv[1]);
    throw fail("pipe", e);
  }
  pid_t pid;
  {
    std::unique_lock guard(fork_guard());
    pid = ::fork();
    if (pid == 0) {
      // The worker: this thread alone. The guard's copy is never touched again (its
      // owner's thread id is the application's); the worker compiles without it.
      guard.release();
      mark_compile_worker();
      ::dup2(err[1], STDERR_FILENO);
      ::dup2(err[1], STDOUT_FILENO);
      // Only its socket and stdio stay open: another worker's socket held here would keep
      // that worker from seeing the application's end.
      const int fd = ::fcntl(sv[1], F_DUPFD, 3);
      close_fds(3, unsigned(fd) - 1);
      close_fds(unsigned(fd) + 1, ~0U);
      worker_main(fd);
    }
  }
  const int fork_errno = errno;
  ::close(sv[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(sv[0]), ::close(err[0]);
    throw fail("fork", fork_errno);
  }
  ::fcntl(err[0], F_SETFL, ::fcntl(err[0], F_GETFL) | O_NONBLOCK);
  return Worker{pid, sv[0], err[0]};
}

// The idle workers. Never destroyed: at the application's exit its ends of the sockets
// close, and each worker leaves.
struct Pool {
  std::vector<Worker> idle;
  pid_t owner = ::getpid();
};

// The pool, under its lock. In a child the application forked, the workers are its
// parent's (whose jobs they may be running): the child lets go of its copies of their
// sockets and makes its own.
Pool& locked_pool(const std::lock_guard<std::mutex>&) {
  static Pool* p = new Pool;
  if (p->owner != ::getpid()) {
    for (Worker& w : p->idle) ::close(w.socket), ::close(w.errors);
    p->idle.clear();
    p->owner = ::getpid();
  }
  return *p;
}

std::mutex& pool_mutex() {
  static std::mutex* m = new std::mutex;
  return *m;
}

// An idle worker that still runs (the one idle last), else a new one (`fresh`).
Worker acquire_worker(const std::string& kernel, const std::string& file, unsigned line, bool& fresh) {
  fresh = false;
  for (;;) {
    Worker w;
    {
      std::lock_guard lock(pool_mutex());
      Pool& pool = locked_pool(lock);
      if (pool.idle.empty()) break;
      w = pool.idle.back();
      pool.idle.pop_back();
    }
    if (!has_ended(w)) return w;
    w.pid = -1;  // (reaped)
    end_worker(w);
  }
  fresh = true;
  return spawn_worker(kernel, file, line);
}

void release_worker(const Worker& w) {
  std::lock_guard lock(pool_mutex());
  locked_pool(lock).idle.push_back(w);
}

// The last `n` lines of `text`.
std::string tail_lines(const std::string& text, int n) {
  size_t at = text.size();
  while (at > 0 && text[at - 1] == '\n') --at;
  size_t end = at;
  for (int k = 0; k < n && at > 0; ++k) {
    size_t nl = text.rfind('\n', at - 1);
    at = nl == std::string::npos ? 0 : nl;
    if (nl == std::string::npos) break;
  }
  return text.substr(at == 0 ? 0 : at + 1, end - (at == 0 ? 0 : at + 1));
}

// Appends what is in the non-blocking `fd` now to `text`; false at its end.
bool drain(int fd, std::string& text) {
  char chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n > 0) {
      text.append(chunk, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return !(n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK));
  }
}

[[noreturn]] void rethrow(const nlohmann::json& e) {
  const std::string kind = e.value("kind", "compile"), message = e.value("message", "");
  const std::string file = e.value("file", "");
  const unsigned line = e.value("line", 0u);
  if (kind == "trace") throw trace_error(message, file, line);
  if (kind == "launch") throw launch_error(message, file, line);
  if (kind == "error") throw tl::error(message, file, line);
  throw compile_error(message, file, line);
}

// How one job on one worker went.
struct Outcome {
  std::optional<Record> answer;  // 'O', 'E' or 'F'
  bool started = false;          // the worker had the job ('S')
  bool timed_out = false;
  int status = 0;                // where the worker ended: its exit status
  std::string errors;            // what it wrote to stderr meanwhile
};

Outcome run_on(Worker& w, const std::string& job, const std::string& bitcode,
               std::chrono::steady_clock::time_point deadline) {
  Outcome o;
  if (send_record(w.socket, 'J', job, bitcode)) {
    std::string in;
    pollfd fds[2] = {{w.socket, POLLIN, 0}, {w.errors, POLLIN, 0}};
    char chunk[1 << 16];
    while (!o.answer) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        o.timed_out = true;
        break;
      }
      int r = ::poll(fds, 2, int(std::min<int64_t>(left.count(), 1000)));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) break;
      if (fds[1].fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) && !drain(w.errors, o.errors))
        fds[1].fd = -1;
      if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(w.socket, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the worker ended
      in.append(chunk, size_t(n));
      if (!o.started)
        if (std::optional<Record> s = take_record(in)) o.started = s->kind == 'S';
      if (o.started) o.answer = take_record(in);
    }
  }
  // What it wrote before its answer is in the pipe already.
  drain(w.errors, o.errors);
  if (!o.answer || o.answer->kind == 'F') o.status = end_worker(w);
  return o;
}

}  // namespace

CodeObject compile_in_process(ir::Function& f, const TargetDesc& target, const CompileOptions& opts) {
  InProcessLlvmGuard guard;
  return compile(f, target, opts);
}

CodeObject compile_in_worker(ir::Function& f, const TargetDesc& target, const CompileOptions& opts) {
  const auto start = std::chrono::steady_clock::now();
  const std::string file = f.loc.file ? f.loc.file : "";
  // The first half here (LLVM's IR construction among it: no fork meanwhile). What is not
  // a tl::error is a compile_error naming the kernel, as from the worker.
  LoweredKernel lowered;
  {
    InProcessLlvmGuard guard;
    try {
      lowered = lower_to_bitcode(f, target, opts);
    } catch (const tl::error&) {
      throw;
    } catch (const std::exception& e) {
      throw compile_error(fmt::format("kernel '{}': compiling it for {} failed: {}", f.name, target.arch, e.what()),
                          file, f.loc.line);
    }
  }
  nlohmann::json env = nlohmann::json::array();
  for (char** e = environ; e && *e; ++e) env.push_back(*e);
  const std::string job = nlohmann::json{{"kernel", f.name},
                                         {"file", file},
                                         {"line", f.loc.line},
                                         {"target", target_json(target)},
                                         {"options", options_json(opts)},
                                         {"module", lowered.module_name},
                                         {"state", lowered.state},
                                         {"names", lowered.name_counters},
                                         {"env", env}}
                              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const double timeout = timeout_seconds();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout));

  // A worker that ended before it had the job (idle too long, or killed between jobs)
  // leaves it to another; one that had it and ended is the compile's failure. (A new
  // worker that ends before it takes a job twice is the compile's failure too.)
  Outcome o;
  for (int fresh_lost = 0;;) {
    bool fresh = false;
    Worker w = acquire_worker(f.name, file, f.loc.line, fresh);
    o = run_on(w, job, lowered.bitcode, deadline);
    if (o.answer && o.answer->kind != 'F') release_worker(w);
    // What the worker printed (TL_DUMP_IR, TL_DEBUG, LLVM's warnings) is this process's too.
    if (!o.errors.empty()) std::fwrite(o.errors.data(), 1, o.errors.size(), stderr);
    if (o.answer || o.started || o.timed_out || (fresh && ++fresh_lost == 2)) break;
  }

  const std::string said = o.errors.empty() ? "" : "\n" + tail_lines(o.errors, 12);
  if (o.timed_out)
    throw compile_error(fmt::format("kernel '{}': compiling it for {} did not finish in {} s (TL_COMPILE_TIMEOUT_S); "
                                    "the compile worker was killed{}",
                                    f.name, target.arch, timeout, said),
                        file, f.loc.line);
  if (o.answer) {
    nlohmann::json e;
    std::optional<CodeObject> code;
    try {
      if (o.answer->kind == 'O') code = decode(o.answer->json, o.answer->binary);
      else e = nlohmann::json::parse(o.answer->json);
    } catch (const nlohmann::json::exception& x) {
      throw compile_error(fmt::format("kernel '{}': the compile worker's answer is unreadable: {}", f.name, x.what()),
                          file, f.loc.line);
    }
    if (code)
      return join_halves(std::move(lowered), std::move(*code),
                         std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (e.is_object()) rethrow(e);
  }
  const int status = o.status;
  std::string how = WIFSIGNALED(status) ? fmt::format("crashed (signal {}: {})", WTERMSIG(status), strsignal(WTERMSIG(status)))
                    : WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                                        : std::string("ended");
  throw compile_error(fmt::format("kernel '{}': LLVM {} compiling it for {}, in the compile worker (the process goes on; "
                                  "a tl bug, or code the target cannot build){}",
                                  f.name, how, target.arch, said),
                      file, f.loc.line);
}

CodeObject compile_guarded(ir::Function& f, const TargetDesc& target, const CompileOptions& opts, bool in_process) {
  if (target.kind == TargetDesc::cpu || in_process || env_flag("TL_COMPILE_IN_PROCESS"))
    return compile_in_process(f, target, opts);
  return compile_in_worker(f, target, opts);
}

std::vector<int> idle_compile_workers() {
  std::lock_guard lock(pool_mutex());
  std::vector<int> pids;
  for (const Worker& w : locked_pool(lock).idle) pids.push_back(int(w.pid));
  return pids;
}

}  // namespace tl::codegen
