// GPU compiles in a worker process (compile_worker.hpp says why and how).
#include "codegen/compile_worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
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
#include <set>
#include <shared_mutex>
#include <string>

#include "tl/error.hpp"

namespace tl::codegen {
namespace {

// Held shared by in-process compiles, exclusively around fork() (compile_worker.hpp).
std::shared_mutex& fork_guard() {
  static std::shared_mutex m;
  return m;
}

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0 && std::strcmp(v, "false") != 0 && std::strcmp(v, "off") != 0;
}

// --- the child -------------------------------------------------------------------------

// The result record: one byte of kind, then a JSON document ('O': the code object without
// its binary, then the binary's bytes after it; 'E': a typed error).
int g_result_fd = -1;
std::string g_fatal_prefix;  // "kernel 'k': LLVM failed fatally compiling for gfx942"
std::string g_fatal_file;
unsigned g_fatal_line = 0;

bool write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= size_t(w);
  }
  return true;
}

void write_record(char kind, const std::string& json, const std::vector<uint8_t>* binary = nullptr) {
  uint64_t sizes[2] = {json.size(), binary ? binary->size() : 0};
  write_all(g_result_fd, &kind, 1);
  write_all(g_result_fd, sizes, sizeof sizes);
  write_all(g_result_fd, json.data(), json.size());
  if (binary) write_all(g_result_fd, binary->data(), binary->size());
}

// The message of a tl::error without the "file:line: " its what() starts with.
std::string bare_message(const tl::error& e) {
  std::string what = e.what();
  if (e.file().empty()) return what;
  const std::string prefix = e.file() + ":" + std::to_string(e.line()) + ": ";
  return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
}

void write_error(const char* kind, const std::string& message, const std::string& file, unsigned line) {
  write_record('E', nlohmann::json{{"kind", kind}, {"message", message}, {"file", file}, {"line", line}}.dump());
}

// LLVM's fatal error handler in the child: LLVM is about to end the process (and must
// not be returned into); the message goes to the parent first, as a compile_error.
void on_llvm_fatal(void*, const char* reason, bool) {
  write_error("compile", g_fatal_prefix + ": " + (reason ? reason : "(no message)"), g_fatal_file, g_fatal_line);
  _exit(0);
}

// Test hook (never set in use): TL_TEST_COMPILE_FAULT=fatal|segv|abort makes the worker
// fail as LLVM can, inside the compile: a report_fatal_error, a crash, an abort (what an
// llvm_unreachable or a failed assertion ends in, after printing its message).
void inject_test_fault() {
  const char* fault = std::getenv("TL_TEST_COMPILE_FAULT");
  if (!fault || !*fault) return;
  if (std::strcmp(fault, "fatal") == 0) llvm::report_fatal_error("tl test: injected fatal error in a pass");
  if (std::strcmp(fault, "segv") == 0) ::raise(SIGSEGV);
  if (std::strcmp(fault, "abort") == 0) {
    std::fprintf(stderr, "tl test: injected unreachable executed at pass.cpp:1\n");
    std::abort();
  }
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

[[noreturn]] void child_main(int result_fd, ir::Function& f, const TargetDesc& target, const CompileOptions& opts) {
  g_result_fd = result_fd;
  g_fatal_prefix = fmt::format("kernel '{}': LLVM failed fatally compiling it for {}", f.name, target.arch);
  g_fatal_file = f.loc.file ? f.loc.file : "";
  g_fatal_line = f.loc.line;
  llvm::install_fatal_error_handler(on_llvm_fatal, nullptr);
  // A crash in the worker ends it by its signal, which the parent reports: the handlers
  // the application (a crash reporter) or a sanitizer installed would run in a copy of
  // the application instead, and exit with a status that hides what happened.
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::signal(sig, SIG_DFL);
  try {
    inject_test_fault();
    CodeObject c = compile(f, target, opts);
    write_record('O', encode(c), &c.binary);
  } catch (const trace_error& e) {
    write_error("trace", bare_message(e), e.file(), e.line());
  } catch (const launch_error& e) {
    write_error("launch", bare_message(e), e.file(), e.line());
  } catch (const compile_error& e) {
    write_error("compile", bare_message(e), e.file(), e.line());
  } catch (const tl::error& e) {
    write_error("error", bare_message(e), e.file(), e.line());
  } catch (const std::exception& e) {
    write_error("compile", fmt::format("kernel '{}': compiling it for {} failed: {}", f.name, target.arch, e.what()),
                g_fatal_file, g_fatal_line);
  } catch (...) {
    write_error("compile", fmt::format("kernel '{}': compiling it for {} failed", f.name, target.arch), g_fatal_file,
                g_fatal_line);
  }
  _exit(0);
}

// Closes the descriptors lo..hi: close_range(2) by its number (glibc wraps it only from
// 2.34, and the bundle runs on other machines), else one by one.
void close_fds(unsigned lo, unsigned hi) {
  if (lo > hi) return;
  if (::syscall(SYS_close_range, lo, hi, 0) == 0) return;
  const long most = ::sysconf(_SC_OPEN_MAX);
  for (unsigned fd = lo; fd <= hi && long(fd) < (most > 0 ? most : 65536); ++fd) ::close(int(fd));
}

// --- the parent ------------------------------------------------------------------------

[[noreturn]] void rethrow(const nlohmann::json& e) {
  const std::string kind = e.value("kind", "compile"), message = e.value("message", "");
  const std::string file = e.value("file", "");
  const unsigned line = e.value("line", 0u);
  if (kind == "trace") throw trace_error(message, file, line);
  if (kind == "launch") throw launch_error(message, file, line);
  if (kind == "error") throw tl::error(message, file, line);
  throw compile_error(message, file, line);
}

CodeObject decode(const std::string& json, std::vector<uint8_t> binary) {
  const nlohmann::json j = nlohmann::json::parse(json);
  CodeObject c;
  c.kernel_symbol = j.at("kernel_symbol").get<std::string>();
  c.format = j.at("format").get<std::string>();
  c.binary = std::move(binary);
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

double timeout_seconds() {
  const char* v = std::getenv("TL_COMPILE_TIMEOUT_S");
  double s = v && *v ? std::atof(v) : 600;
  return s > 0 ? s : 600;
}

// Builds this thread's TargetMachine for `target` here, once, before the first fork: a
// worker inherits it (codegen::thread_machine is per thread, and the forking thread goes
// on in the child), where it would otherwise build its own, and its subtarget, on every
// compile. Compiling an empty kernel is what builds them. A failure is left for the
// worker to report.
void warm_thread_machine(const TargetDesc& target, const CompileOptions& opts) {
  thread_local std::set<std::string> warmed;
  if (!warmed.insert(target.str() + "|" + std::to_string(opts.opt_level)).second) return;
  std::shared_lock guard(fork_guard());
  try {
    std::unique_ptr<Target> backend =
        target.kind == TargetDesc::amdgpu ? make_amdgpu_target(target) : make_nvptx_target(target);
    llvm::LLVMContext context;
    llvm::Module module("tl_warm", context);
    ir::Function f;
    f.name = "tl_warm";
    backend->lower(f, module, opts);
    // And its code generation: the subtarget (instruction and register tables) that the
    // TargetMachine makes at the first function it compiles.
    CodeObject out;
    backend->emit(module, opts, out);
  } catch (const std::exception&) {
  }
}

}  // namespace

CodeObject compile_in_process(ir::Function& f, const TargetDesc& target, const CompileOptions& opts) {
  std::shared_lock guard(fork_guard());
  return compile(f, target, opts);
}

CodeObject compile_in_worker(ir::Function& f, const TargetDesc& target, const CompileOptions& opts) {
  warm_thread_machine(target, opts);
  int result[2], err[2];
  if (::pipe2(result, O_CLOEXEC) != 0) throw compile_error(fmt::format("compile worker: pipe: {}", std::strerror(errno)));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(result[0]), ::close(result[1]);
    throw compile_error(fmt::format("compile worker: pipe: {}", std::strerror(errno)));
  }
  pid_t pid;
  {
    std::unique_lock guard(fork_guard());
    pid = ::fork();
    if (pid == 0) {
      // The child: this thread alone. The guard's copy is never touched again (its
      // owner's thread id is the parent's); the child compiles without it.
      guard.release();
      ::dup2(err[1], STDERR_FILENO);
      // Only the result pipe and stdio stay open: a pipe of another thread's worker held
      // here would keep that worker's parent from seeing its end.
      const int fd = ::fcntl(result[1], F_DUPFD, 3);
      close_fds(3, unsigned(fd) - 1);
      close_fds(unsigned(fd) + 1, ~0U);
      child_main(fd, f, target, opts);
    }
  }
  const int fork_errno = errno;
  ::close(result[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(result[0]), ::close(err[0]);
    throw compile_error(fmt::format("kernel '{}': no compile worker: fork: {}", f.name, std::strerror(fork_errno)),
                        f.loc.file ? f.loc.file : "", f.loc.line);
  }

  // Read both pipes to their end (the result may be larger than a pipe holds).
  std::string out, errors;
  pollfd fds[2] = {{result[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds());
  bool timed_out = false;
  char buf[1 << 16];
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    int r = ::poll(fds, 2, int(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
      } else {
        (i == 0 ? out : errors).append(buf, size_t(n));
      }
    }
  }
  for (auto& p : fds)
    if (p.fd >= 0) ::close(p.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // What the child printed (TL_DUMP_IR, TL_DEBUG, LLVM's warnings) is this process's too.
  if (!errors.empty()) std::fwrite(errors.data(), 1, errors.size(), stderr);

  const std::string file = f.loc.file ? f.loc.file : "";
  const std::string said = errors.empty() ? "" : "\n" + tail_lines(errors, 12);
  if (timed_out)
    throw compile_error(fmt::format("kernel '{}': compiling it for {} did not finish in {} s (TL_COMPILE_TIMEOUT_S); "
                                    "the compile worker was killed{}",
                                    f.name, target.arch, timeout_seconds(), said),
                        file, f.loc.line);
  // A whole record: kind, two sizes, the JSON and the binary.
  uint64_t sizes[2] = {0, 0};
  const size_t header = 1 + sizeof sizes;
  if (out.size() >= header) std::memcpy(sizes, out.data() + 1, sizeof sizes);
  if (out.size() >= header && out.size() == header + sizes[0] + sizes[1]) {
    const std::string json = out.substr(header, sizes[0]);
    nlohmann::json e;
    std::optional<CodeObject> code;
    try {
      if (out[0] == 'E') e = nlohmann::json::parse(json);
      if (out[0] == 'O') code = decode(json, std::vector<uint8_t>(out.begin() + std::ptrdiff_t(header + sizes[0]), out.end()));
    } catch (const nlohmann::json::exception& x) {
      throw compile_error(fmt::format("kernel '{}': the compile worker's answer is unreadable: {}", f.name, x.what()),
                          file, f.loc.line);
    }
    if (code) return std::move(*code);
    if (e.is_object()) rethrow(e);
  }
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

}  // namespace tl::codegen
