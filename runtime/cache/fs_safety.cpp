// File-system safety: every path the cache touches is opened through a directory fd
// (openat, unlinkat, renameat) with O_NOFOLLOW, and every fd is fstat'ed before it is
// trusted. The cache stores code that will be executed, so a directory or entry planted by
// another user, or a symlink swapped in between a check and an open, must be refused rather
// than followed; and only the names the cache itself creates may ever be deleted, so that
// TL_CACHE_DIR pointed at the wrong directory loses nothing else.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>

#include <fmt/core.h>

#include "runtime/cache/internal.hpp"

namespace tl::cache {
namespace detail {

int64_t now_unix() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t mtime_ns(const struct stat& st) {
  return int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::string errno_text(int e) { return std::strerror(e); }

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// A name no other writer uses: pid and tid separate writers on this host, the counter
// separates one thread's files, and the random part separates hosts sharing an NFS cache.
static std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}.{}.{}.{:016x}", ::getpid(), long(::syscall(SYS_gettid)),
                     counter.fetch_add(1), rng());
}

// Creates `p` and its missing parents with mode 0700: the cache holds code that will be
// executed, so nobody else may write (or list) it. Existing components are left alone.
void make_dirs(const std::filesystem::path& p) {
  std::filesystem::path cur;
  for (const auto& part : p) {
    cur /= part;
    if (part.empty() || part == "/") continue;
    if (::mkdir(cur.c_str(), 0700) != 0 && errno != EEXIST) return;
  }
}

// Why a directory that the cache would use is unsafe, or empty if it is safe: it must be
// ours and writable by nobody else, or someone else could plant entries (code) in it.
static std::string dir_problem(const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if (st.st_uid != ::geteuid())
    return fmt::format("it is owned by uid {}, not by uid {}; refusing to use it", st.st_uid, ::geteuid());
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "it is writable by group or others; refusing to use it";
  return {};
}

// The root is opened following symlinks: the user may point TL_CACHE_DIR (or ~/.cache)
// at another disk. Everything below it is opened with O_NOFOLLOW.
Dir open_root(const std::filesystem::path& dir, bool create) {
  Dir d;
  if (dir.empty()) {
    d.problem = "no cache directory: HOME is not set";
    return d;
  }
  d.fd = Fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d.fd.ok() && errno == ENOENT && create) {  // mkdir only when missing: stores are frequent
    make_dirs(dir);
    d.fd = Fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  if (!d.fd.ok()) {
    d.missing = errno == ENOENT;
    d.problem = errno_text(errno);
    return d;
  }
  struct stat st;
  if (::fstat(d.fd.get(), &st) != 0) d.problem = errno_text(errno);
  else d.problem = dir_problem(st);
  return d;
}

Dir open_shard(int root, const std::string& name, bool create) {
  Dir d;
  if (create && ::mkdirat(root, name.c_str(), 0700) != 0 && errno != EEXIST) {
    d.problem = errno_text(errno);
    return d;
  }
  d.fd = Fd(::openat(root, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!d.fd.ok()) {
    d.missing = errno == ENOENT;
    d.problem = (errno == ELOOP || errno == ENOTDIR) ? "a symlink or not a directory"
                                                      : errno_text(errno);
    return d;
  }
  struct stat st;
  if (::fstat(d.fd.get(), &st) != 0) d.problem = errno_text(errno);
  else d.problem = dir_problem(st);
  return d;
}

// Names in a directory, read through a fresh open of "." so that the caller's fd offset
// is untouched.
std::vector<std::string> dir_names(int dirfd) {
  std::vector<std::string> names;
  int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return names;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return names;
  }
  while (struct dirent* de = ::readdir(d)) {
    std::string n = de->d_name;
    if (n != "." && n != "..") names.push_back(std::move(n));
  }
  ::closedir(d);
  return names;
}

bool is_shard_name(const std::string& n) { return n.size() == 2 && is_hex(n[0]) && is_hex(n[1]); }

// Classifies a name inside shard `shard`; only these names are ever deleted by the cache.
FileKind classify(const std::string& name, const std::string& shard, std::string* key) {
  if (name.size() < kKeyLength + 4 || name.compare(0, 2, shard) != 0) return FileKind::none;
  for (size_t i = 0; i < kKeyLength; ++i)
    if (!is_hex(name[i])) return FileKind::none;
  std::string_view rest = std::string_view(name).substr(kKeyLength);
  if (key) *key = name.substr(0, kKeyLength);
  if (rest == ".tlc") return FileKind::entry;
  if (rest == ".used") return FileKind::used;
  if (rest == ".lock") return FileKind::lock;
  if (rest.substr(0, 5) == ".tmp.") return FileKind::temp;
  return FileKind::none;
}

// Unlinks `name` only if it is still the file `st` describes: a concurrent store may have
// renamed a good entry over the bad one since we opened it. (A window remains between this
// check and the unlink; losing that race only costs a recompile.)
void unlink_if_same(int dirfd, const std::string& name, const struct stat& st) {
  struct stat now;
  if (::fstatat(dirfd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st.st_dev &&
      now.st_ino == st.st_ino)
    ::unlinkat(dirfd, name.c_str(), 0);
}

// Writes `bytes` to a temporary file next to `name` and renames it into place: readers see
// the old file or the new one, never a partial one, and of many concurrent writers the last
// rename wins with a complete file. Returns 0 or an errno.
int write_atomic(int dirfd, const std::string& name, std::span<const uint8_t> bytes) {
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    // <key>.tlc is written as <key>.tmp.*, a name scans recognize (and clean up if stale).
    std::string base = name.ends_with(".tlc") ? name.substr(0, name.size() - 4) : name;
    tmp = base + ".tmp." + unique_suffix();
    fd = ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) return errno;
  }
  if (fd < 0) return EEXIST;
  int err = 0;
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    if (n == 0) {
      err = EIO;
      break;
    }
    off += size_t(n);
  }
  // fsync is opt-in: without it a crash may leave a torn entry, which the checksum catches
  // (a miss), and the common case stays free of a disk flush per compiled kernel.
  static const bool sync = [] {
    const char* v = std::getenv("TL_CACHE_FSYNC");
    return v && *v && std::string_view(v) != "0";
  }();
  if (!err && sync && ::fsync(fd) != 0) err = errno;
  // close can report a deferred write error (NFS, quota).
  if (::close(fd) != 0 && !err && errno != EINTR) err = errno;
  if (!err && ::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) err = errno;
  if (err) ::unlinkat(dirfd, tmp.c_str(), 0);
  else if (sync) ::fsync(dirfd);
  return err;
}

// Reads a small regular file we own (stats.json, .used); nullopt if it is anything else.
std::optional<std::string> read_small_file(int dirfd, const std::string& name, size_t limit) {
  Fd fd(::openat(dirfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.ok()) return std::nullopt;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      uint64_t(st.st_size) > limit)
    return std::nullopt;
  std::string s(size_t(st.st_size), '\0');
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::pread(fd.get(), s.data() + off, s.size() - off, off_t(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += size_t(n);
  }
  s.resize(off);
  return s;
}

// Opens, checks and parses <shard>/<key>.tlc. A bad file is deleted when it is ours (our
// uid, in our checked directory): it would only be refused again on every later load.
ReadResult read_entry_file(int shard, const std::string& key) {
  ReadResult r;
  const std::string name = key + ".tlc";
  const std::string used = key + ".used";
  // O_NOFOLLOW: a symlink fails with ELOOP instead of being followed. O_NONBLOCK: opening a
  // FIFO planted under the entry's name must not hang the process.
  Fd fd(::openat(shard, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.ok()) {
    // A regular file we could not open (out of fds, EACCES) is a plain miss and is kept: the
    // trouble is ours, not the entry's. Anything else (a symlink, which O_NOFOLLOW refused
    // with ELOOP; a socket) is refused.
    struct stat lst;
    if (errno == ENOENT || ::fstatat(shard, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) != 0 ||
        S_ISREG(lst.st_mode))
      return r;
    r.status = ReadStatus::rejected;
    if (lst.st_uid == ::geteuid() && !S_ISDIR(lst.st_mode)) {
      unlink_if_same(shard, name, lst);  // unlinking a symlink removes the link, not its target
      ::unlinkat(shard, used.c_str(), 0);
    }
    return r;
  }
  r.status = ReadStatus::rejected;
  if (::fstat(fd.get(), &r.st) != 0) return r;
  auto remove_bad = [&] {
    remove_entry_file(shard, key, r.st);
    return r;
  };
  if (r.st.st_uid != ::geteuid()) return r;  // not ours: refuse, but not ours to delete either
  if (!S_ISREG(r.st.st_mode)) return remove_bad();
  if (uint64_t(r.st.st_size) < kHeaderSize || uint64_t(r.st.st_size) > kMaxEntryBytes)
    return remove_bad();
  std::vector<uint8_t> bytes(size_t(r.st.st_size));
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::pread(fd.get(), bytes.data() + off, bytes.size() - off, off_t(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += size_t(n);
  }
  if (off != bytes.size()) return remove_bad();
  r.entry = parse_entry(bytes, key);
  if (!r.entry) return remove_bad();
  r.status = ReadStatus::ok;
  return r;
}

void remove_entry_file(int shard, const std::string& key, const struct stat& st) {
  if (st.st_uid != ::geteuid() || S_ISDIR(st.st_mode)) return;
  unlink_if_same(shard, key + ".tlc", st);
  ::unlinkat(shard, (key + ".used").c_str(), 0);
}

}  // namespace detail

using detail::is_hex;

std::optional<std::string> normalize_key(std::string_view key) {
  if (key.size() != kKeyLength) return std::nullopt;
  std::string k(key);
  for (char& c : k) {
    c = char(std::tolower(uint8_t(c)));
    if (!is_hex(c)) return std::nullopt;  // also keeps '/' and ".." out of file names
  }
  return k;
}

}  // namespace tl::cache
