// The on-disk JIT cache. See cache.hpp for the layout and the file format.
//
// Every file access goes through a directory fd (openat, unlinkat, renameat) with
// O_NOFOLLOW, and every fd is fstat'ed before it is trusted: checking a path and then
// opening it would let someone swap the file in between.
#include "runtime/cache.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include <fmt/core.h>
#include <xxhash.h>

#include "tl/error.hpp"

namespace tl::cache {
namespace {

// ---------------------------------------------------------------------------------------
// Small POSIX helpers.

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  ~Fd() { reset(); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

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
std::string unique_suffix() {
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
std::string dir_problem(const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) return "it is not a directory";
  if (st.st_uid != ::geteuid())
    return fmt::format("it is owned by uid {}, not by uid {}; refusing to use it", st.st_uid, ::geteuid());
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "it is writable by group or others; refusing to use it";
  return {};
}

struct Dir {
  Fd fd;
  bool missing = false;  // does not exist (yet): a plain miss, not a problem worth a warning
  std::string problem;   // non-empty: do not use (fd may still be open, to look inside)
  bool usable() const { return fd.ok() && problem.empty(); }
};

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

enum class FileKind { none, entry, used, temp, lock };

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

// ---------------------------------------------------------------------------------------
// Serialization.

uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A cursor that refuses to move past the end: every length read from the file is checked
// against the bytes actually left before anything is allocated or copied.
struct Reader {
  std::span<const uint8_t> b;
  size_t pos = 0;
  size_t left() const { return b.size() - pos; }
  bool u32(uint32_t& v) {
    if (left() < 4) return false;
    v = get_u32(b.data() + pos);
    pos += 4;
    return true;
  }
  bool u64(uint64_t& v) {
    if (left() < 8) return false;
    v = get_u64(b.data() + pos);
    pos += 8;
    return true;
  }
  bool take(uint64_t n, const uint8_t*& p) {
    if (n > left()) return false;
    p = b.data() + pos;
    pos += size_t(n);
    return true;
  }
};

// nlohmann's parser is iterative but copying and dumping a value recurse, so a hostile
// "[[[[...]]]]" could exhaust the stack later; refuse deep nesting before parsing.
bool json_nesting_ok(std::string_view s, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

std::vector<uint8_t> serialize(const std::string& key, const nlohmann::json& meta,
                               const std::map<std::string, std::vector<uint8_t>>& artifacts) {
  // Invalid UTF-8 in a meta string (a kernel name from a byte string) must not make the
  // store throw: replace it.
  std::string meta_text = meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  size_t payload_size = 8 + meta_text.size();
  for (const auto& [name, data] : artifacts) payload_size += 12 + name.size() + data.size();
  // One buffer of the final size, filled in place: an entry may hold megabytes of code.
  std::vector<uint8_t> out(kHeaderSize - kKeyLength + key.size() + payload_size);
  size_t pos = 0;
  auto raw = [&](const void* p, size_t n) {
    if (n) std::memcpy(out.data() + pos, p, n);
    pos += n;
  };
  auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) out[pos++] = uint8_t(v >> (8 * i));
  };
  auto u64 = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) out[pos++] = uint8_t(v >> (8 * i));
  };
  raw(kMagic, 8);
  u32(kFormatVersion);
  u32(uint32_t(key.size()));
  raw(key.data(), key.size());
  u64(payload_size);
  const size_t checksum_at = pos;
  pos += 16;
  const size_t payload_at = pos;
  u32(uint32_t(meta_text.size()));
  raw(meta_text.data(), meta_text.size());
  u32(uint32_t(artifacts.size()));
  for (const auto& [name, data] : artifacts) {
    u32(uint32_t(name.size()));
    raw(name.data(), name.size());
    u64(data.size());
    raw(data.data(), data.size());
  }
  XXH128_hash_t h = XXH3_128bits(out.data() + payload_at, payload_size);
  pos = checksum_at;
  u64(h.high64);
  u64(h.low64);
  return out;
}

// ---------------------------------------------------------------------------------------
// Entry files and their side records.

enum class ReadStatus { ok, missing, rejected };

struct ReadResult {
  ReadStatus status = ReadStatus::missing;
  std::optional<Entry> entry;
  struct stat st {};
};

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
    if (r.st.st_uid == ::geteuid() && !S_ISDIR(r.st.st_mode)) {
      unlink_if_same(shard, name, r.st);
      ::unlinkat(shard, used.c_str(), 0);
    }
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

struct Use {
  uint64_t hits = 0;
  int64_t last_used_ns = 0;
};

// The side record's mtime is the last use; its content the hit count. Readers do not lock:
// the count only grows, so a racing read sees the old or the new number.
Use read_use(int shard, const std::string& key, const struct stat& entry_st) {
  Use u;
  u.last_used_ns = mtime_ns(entry_st);
  const std::string used = key + ".used";
  struct stat st;
  if (::fstatat(shard, used.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
      st.st_uid != ::geteuid())
    return u;
  u.last_used_ns = std::max(u.last_used_ns, mtime_ns(st));
  if (auto text = read_small_file(shard, used, 32)) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
    if (ec == std::errc()) u.hits = v;
  }
  return u;
}

// Counts a hit in the side record and marks the entry used now, for LRU eviction. The
// flock makes concurrent counts from many processes exact. Returns the new count.
uint64_t record_use(int shard, const std::string& key) {
  const std::string used = key + ".used";
  Fd fd(::openat(shard, used.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
  if (!fd.ok()) return 0;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) return 0;
  if (::flock(fd.get(), LOCK_EX) != 0) return 0;
  char buf[32];
  ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
  uint64_t hits = 0;
  if (n > 0) std::from_chars(buf, buf + n, hits);
  ++hits;
  std::string text = std::to_string(hits);
  // The write also sets mtime, the LRU clock. The count only grows, so the new text is never
  // shorter than a valid old one; truncate only over garbage.
  if (::pwrite(fd.get(), text.data(), text.size(), 0) == ssize_t(text.size()) && n > ssize_t(text.size()))
    (void)::ftruncate(fd.get(), off_t(text.size()));
  return hits;  // the lock goes with the fd
}

struct DiskItem {
  std::string shard, key;
  uint64_t size = 0;
  int64_t last_used_ns = 0;
};

// Entry files in safe shards (stat only, not parsed). Stale temporary files of crashed
// writers (older than an hour) are removed on the way.
std::vector<DiskItem> scan_disk(int root) {
  std::vector<DiskItem> items;
  const int64_t stale_ns = (now_unix() - 3600) * int64_t(1000000000);
  for (const std::string& shard_name : dir_names(root)) {
    if (!is_shard_name(shard_name)) continue;
    Dir shard = open_shard(root, shard_name, false);
    if (!shard.usable()) continue;
    for (const std::string& name : dir_names(shard.fd.get())) {
      std::string key;
      FileKind kind = classify(name, shard_name, &key);
      if (kind != FileKind::entry && kind != FileKind::temp) continue;
      struct stat st;
      if (::fstatat(shard.fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
      if (kind == FileKind::temp) {
        if (mtime_ns(st) < stale_ns) ::unlinkat(shard.fd.get(), name.c_str(), 0);
        continue;
      }
      DiskItem it{shard_name, key, uint64_t(st.st_size), 0};
      it.last_used_ns = read_use(shard.fd.get(), key, st).last_used_ns;
      items.push_back(std::move(it));
    }
  }
  return items;
}

// stats.json: counters over all processes. Updated under an flock on stats.lock and
// replaced by rename, so lock-free readers never see a partial file.
struct FileCounters {
  uint64_t hits = 0, misses = 0, rejected = 0, evicted = 0;
};

FileCounters read_stats_file(int root) {
  FileCounters c;
  auto text = read_small_file(root, "stats.json", 64 * 1024);
  if (!text) return c;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return c;
  auto get = [&](const char* k) -> uint64_t {
    auto it = j.find(k);
    return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
  };
  c.hits = get("hits");
  c.misses = get("misses");
  c.rejected = get("rejected");
  c.evicted = get("evicted");
  return c;
}

bool update_stats_file(int root, const FileCounters& delta, bool reset) {
  Fd lock(::openat(root, "stats.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
  if (!lock.ok()) return false;
  struct stat st;
  if (::fstat(lock.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) return false;
  if (::flock(lock.get(), LOCK_EX) != 0) return false;
  FileCounters c = reset ? FileCounters{} : read_stats_file(root);
  c.hits += delta.hits;
  c.misses += delta.misses;
  c.rejected += delta.rejected;
  c.evicted += delta.evicted;
  nlohmann::json j = {{"hits", c.hits}, {"misses", c.misses}, {"rejected", c.rejected},
                      {"evicted", c.evicted}};
  std::string text = j.dump(2) + "\n";
  return write_atomic(root, "stats.json",
                      std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size())) == 0;
}

std::atomic<bool> g_warned{false};

// Constructed on first use: libtl's own static initializers register the provider
// (runtime/isa_text.cpp), and a plain global here could still be unconstructed then
// (ASan: initialization-order-fiasco), or be reset by its constructor afterwards.
struct IsaRegistry {
  std::mutex mu;
  IsaProvider provider;
};
IsaRegistry& isa_registry() {
  static IsaRegistry r;
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Free functions.

std::vector<uint8_t> serialize_entry(const Entry& e) { return serialize(e.key, e.meta, e.artifacts); }

std::optional<Entry> parse_entry(std::span<const uint8_t> bytes, const std::string& expected_key) {
  try {
    if (bytes.size() < kHeaderSize) return std::nullopt;
    if (std::memcmp(bytes.data(), kMagic, 8) != 0) return std::nullopt;  // not ours
    if (get_u32(bytes.data() + 8) != kFormatVersion) return std::nullopt;
    if (get_u32(bytes.data() + 12) != kKeyLength) return std::nullopt;
    std::string key(reinterpret_cast<const char*>(bytes.data() + 16), kKeyLength);
    if (key != expected_key) return std::nullopt;  // a file moved or copied under another name
    uint64_t payload_len = get_u64(bytes.data() + 48);
    if (payload_len != bytes.size() - kHeaderSize) return std::nullopt;  // truncated or trailer
    std::span<const uint8_t> payload = bytes.subspan(kHeaderSize);
    XXH128_hash_t h = XXH3_128bits(payload.data(), payload.size());
    if (get_u64(bytes.data() + 56) != h.high64 || get_u64(bytes.data() + 64) != h.low64)
      return std::nullopt;

    Reader r{payload};
    Entry e;
    e.key = std::move(key);
    uint32_t meta_len = 0;
    const uint8_t* p = nullptr;
    if (!r.u32(meta_len) || !r.take(meta_len, p)) return std::nullopt;
    std::string_view meta_text(reinterpret_cast<const char*>(p), meta_len);
    if (!json_nesting_ok(meta_text, 64)) return std::nullopt;
    e.meta = nlohmann::json::parse(meta_text, nullptr, /*allow_exceptions=*/false);
    if (!e.meta.is_object()) return std::nullopt;
    uint32_t count = 0;
    if (!r.u32(count)) return std::nullopt;
    // Each artifact takes at least 13 bytes, so a huge count cannot pass this and make the
    // loop below spin; the map only grows with bytes actually present.
    if (uint64_t(count) * 13 > r.left()) return std::nullopt;
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t name_len = 0;
      uint64_t data_len = 0;
      const uint8_t* name = nullptr;
      const uint8_t* data = nullptr;
      if (!r.u32(name_len) || name_len == 0 || name_len > 255 || !r.take(name_len, name))
        return std::nullopt;
      if (!r.u64(data_len) || !r.take(data_len, data)) return std::nullopt;
      auto [it, inserted] = e.artifacts.try_emplace(
          std::string(reinterpret_cast<const char*>(name), name_len),
          std::vector<uint8_t>(data, data + data_len));
      if (!inserted) return std::nullopt;  // duplicate names: ambiguous, not something we write
    }
    if (r.left() != 0) return std::nullopt;
    return e;
  } catch (const std::exception&) {
    // bad_alloc on a machine short of memory, or a JSON surprise: a miss, never a crash.
    return std::nullopt;
  }
}

std::optional<uint64_t> parse_size(std::string_view s) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p == s.data()) return std::nullopt;
  std::string suffix;
  for (const char* q = p; q != s.data() + s.size(); ++q) suffix += char(std::tolower(uint8_t(*q)));
  int shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      case 't': shift = 40; break;
      case 'b': shift = 0; break;
      default: return std::nullopt;
    }
    std::string_view rest = std::string_view(suffix).substr(1);
    if (suffix[0] == 'b' ? !rest.empty() : !(rest.empty() || rest == "b" || rest == "ib"))
      return std::nullopt;
  }
  if (shift && v > (UINT64_MAX >> shift)) return std::nullopt;
  return v << shift;
}

std::optional<std::string> normalize_key(std::string_view key) {
  if (key.size() != kKeyLength) return std::nullopt;
  std::string k(key);
  for (char& c : k) {
    c = char(std::tolower(uint8_t(c)));
    if (!is_hex(c)) return std::nullopt;  // also keeps '/' and ".." out of file names
  }
  return k;
}

void set_isa_provider(IsaProvider provider) {
  IsaRegistry& r = isa_registry();
  std::lock_guard lock(r.mu);
  r.provider = std::move(provider);
}

IsaProvider isa_provider() {
  IsaRegistry& r = isa_registry();
  std::lock_guard lock(r.mu);
  return r.provider;
}

// ---------------------------------------------------------------------------------------
// DiskCache.

std::filesystem::path DiskCache::default_dir() {
  if (const char* d = std::getenv("TL_CACHE_DIR"); d && *d) return d;
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "tl";
  struct passwd pw, *res = nullptr;
  char buf[4096];
  if (::getpwuid_r(::geteuid(), &pw, buf, sizeof buf, &res) == 0 && res && res->pw_dir && *res->pw_dir)
    return std::filesystem::path(res->pw_dir) / ".cache" / "tl";
  return {};  // no home: the cache lives in memory only
}

DiskCache& DiskCache::global() {
  // Never destroyed: kernels may be loaded from static destructors of other objects. Its
  // counters are written at exit instead.
  static DiskCache* cache = [] {
    auto* c = new DiskCache(default_dir());
    std::atexit([] { DiskCache::global().flush_stats(); });
    return c;
  }();
  return *cache;
}

static uint64_t env_max_bytes() {
  const char* v = std::getenv("TL_CACHE_MAX_BYTES");
  if (v && *v)
    if (auto n = parse_size(v)) return *n;
  return kDefaultMaxBytes;
}

DiskCache::DiskCache(std::filesystem::path dir) : DiskCache(std::move(dir), env_max_bytes()) {}

DiskCache::DiskCache(std::filesystem::path dir, uint64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {
  if (!dir_.empty()) make_dirs(dir_);
}

DiskCache::~DiskCache() { flush_counters(true); }

void DiskCache::flush_stats() { flush_counters(true); }

std::string DiskCache::disk_problem() {
  Dir root = open_root(dir_, true);
  return root.problem;
}

static int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void DiskCache::count(Counters delta) {
  {
    std::lock_guard lock(mu_);
    if (pending_pid_ != ::getpid()) {
      pending_ = {};  // inherited through fork: the parent writes those
      pending_pid_ = ::getpid();
    }
    pending_.hits += delta.hits;
    pending_.misses += delta.misses;
    pending_.rejected += delta.rejected;
    pending_.evicted += delta.evicted;
  }
  flush_counters(false);
}

void DiskCache::flush_counters(bool force) {
  Counters d;
  {
    std::lock_guard lock(mu_);
    if (pending_pid_ != ::getpid()) {
      pending_ = {};
      pending_pid_ = ::getpid();
    }
    const int64_t now = steady_ms();
    if (!force && now - last_flush_ms_ < 1000) return;
    last_flush_ms_ = now;
    d = pending_;
    pending_ = {};
  }
  if (!d.hits && !d.misses && !d.rejected && !d.evicted) return;
  Dir root = open_root(dir_, false);
  if (root.usable() && update_stats_file(root.fd.get(), {d.hits, d.misses, d.rejected, d.evicted}, false))
    return;
  // Best-effort: keep them for stats() and a later flush.
  std::lock_guard lock(mu_);
  pending_.hits += d.hits;
  pending_.misses += d.misses;
  pending_.rejected += d.rejected;
  pending_.evicted += d.evicted;
}

bool DiskCache::keep_in_memory(const Entry& e, uint64_t bytes, const std::string& reason) {
  {
    std::lock_guard lock(mu_);
    auto& m = memory_[e.key];
    memory_bytes_ -= m.bytes;
    m.entry = e;
    m.bytes = bytes;
    m.last_used = now_unix();
    m.seq = ++seq_;
    memory_bytes_ += bytes;
    // The memory cache has the same cap; evict its least recently used entries, but never
    // the one just stored.
    while (memory_bytes_ > max_bytes_ && memory_.size() > 1) {
      auto victim = memory_.end();
      for (auto it = memory_.begin(); it != memory_.end(); ++it)
        if (it->first != e.key && (victim == memory_.end() || it->second.seq < victim->second.seq))
          victim = it;
      memory_bytes_ -= victim->second.bytes;
      memory_.erase(victim);
      ++pending_.evicted;
    }
  }
  // One warning per process, not per store: a read-only cache is a condition, not an event.
  if (!reason.empty() && !g_warned.exchange(true))
    fmt::print(stderr, "tl: cache directory {} is not writable ({}); using an in-memory cache\n",
               dir_.string(), reason);
  return false;
}

bool DiskCache::store(const Entry& in) {
  auto key = normalize_key(in.key);
  if (!key || !(in.meta.is_object() || in.meta.is_null())) return false;
  try {
    Entry e;
    e.key = *key;
    e.meta = in.meta.is_null() ? nlohmann::json::object() : in.meta;
    int64_t now = now_unix();
    e.meta["created"] = now;
    e.meta["last_used"] = now;
    e.meta["hits"] = 0;
    std::vector<uint8_t> bytes = serialize(e.key, e.meta, in.artifacts);
    if (bytes.size() > kMaxEntryBytes) {
      e.artifacts = in.artifacts;
      return keep_in_memory(e, bytes.size(), "");  // too big for the disk; not a directory problem
    }
    auto fallback = [&](const std::string& reason) {
      e.artifacts = in.artifacts;
      return keep_in_memory(e, bytes.size(), reason);
    };
    Dir root = open_root(dir_, true);
    if (!root.usable()) return fallback(root.problem);
    Dir shard = open_shard(root.fd.get(), e.key.substr(0, 2), true);
    if (!shard.usable()) return fallback(fmt::format("{}: {}", e.key.substr(0, 2), shard.problem));
    if (int err = write_atomic(shard.fd.get(), e.key + ".tlc", bytes)) return fallback(errno_text(err));
    {
      std::lock_guard lock(mu_);
      if (auto it = memory_.find(e.key); it != memory_.end()) {
        memory_bytes_ -= it->second.bytes;
        memory_.erase(it);
      }
    }
    maybe_evict(bytes.size(), e.key);
    return true;
  } catch (const std::exception&) {
    return false;  // out of memory while serializing: simply not cached
  }
}

void DiskCache::maybe_evict(uint64_t added, const std::string& keep_key) {
  // A full scan per store would cost O(entries) syscalls; instead keep an estimate and scan
  // when it crosses the cap, or when it is a minute old (other processes store too).
  const int64_t now = now_unix();
  bool scan = false;
  {
    std::lock_guard lock(mu_);
    if (!approx_bytes_ || now - approx_time_ > 60) {
      scan = true;
    } else {
      *approx_bytes_ += added;
      scan = *approx_bytes_ > max_bytes_;
    }
  }
  if (!scan) return;
  Dir root = open_root(dir_, false);
  if (!root.usable()) return;
  uint64_t total = 0;
  for (const DiskItem& it : scan_disk(root.fd.get())) total += it.size;
  if (total > max_bytes_) {
    // Down to 90%, not to the cap, so that the next few stores do not each evict again.
    total -= prune_disk(max_bytes_ / 10 * 9 + (max_bytes_ % 10) * 9 / 10, keep_key);
  }
  std::lock_guard lock(mu_);
  approx_bytes_ = total;
  approx_time_ = now;
}

uint64_t DiskCache::prune_disk(uint64_t max_bytes, const std::string& keep_key) {
  Dir root = open_root(dir_, false);
  if (!root.usable()) return 0;
  std::vector<DiskItem> items = scan_disk(root.fd.get());
  uint64_t total = 0;
  for (const auto& it : items) total += it.size;
  std::sort(items.begin(), items.end(), [](const DiskItem& a, const DiskItem& b) {
    return a.last_used_ns != b.last_used_ns ? a.last_used_ns < b.last_used_ns : a.key < b.key;
  });
  uint64_t freed = 0, evicted = 0;
  for (const DiskItem& it : items) {
    if (total <= max_bytes) break;
    if (it.key == keep_key) continue;
    Dir shard = open_shard(root.fd.get(), it.shard, false);
    if (!shard.usable()) continue;
    // Readers that already opened the file keep reading it; unlink never tears an entry.
    if (::unlinkat(shard.fd.get(), (it.key + ".tlc").c_str(), 0) == 0) {
      freed += it.size;
      ++evicted;
    }
    ::unlinkat(shard.fd.get(), (it.key + ".used").c_str(), 0);
    total -= std::min(total, it.size);  // gone either way, maybe by another process's prune
  }
  if (evicted) count({0, 0, 0, evicted});
  return freed;
}

uint64_t DiskCache::prune(uint64_t max_bytes) {
  uint64_t freed = prune_disk(max_bytes, "");
  uint64_t evicted = 0;
  {
    std::lock_guard lock(mu_);
    while (memory_bytes_ > max_bytes && !memory_.empty()) {
      auto victim = std::min_element(memory_.begin(), memory_.end(), [](const auto& a, const auto& b) {
        return a.second.seq < b.second.seq;
      });
      memory_bytes_ -= victim->second.bytes;
      freed += victim->second.bytes;
      memory_.erase(victim);
      ++evicted;
    }
    approx_bytes_.reset();
  }
  if (evicted) count({0, 0, 0, evicted});
  return freed;
}

std::optional<Entry> DiskCache::load(const std::string& raw_key) {
  auto key = normalize_key(raw_key);
  if (!key) {
    count({0, 1, 0, 0});
    return std::nullopt;
  }
  {
    std::unique_lock lock(mu_);
    if (auto it = memory_.find(*key); it != memory_.end()) {
      MemEntry& m = it->second;
      m.hits++;
      m.last_used = now_unix();
      m.seq = ++seq_;
      Entry e = m.entry;
      e.meta["hits"] = m.hits;
      e.meta["last_used"] = m.last_used;
      lock.unlock();
      count({1, 0, 0, 0});
      return e;
    }
  }
  const std::string shard_name = key->substr(0, 2);
  const std::string rel = shard_name + "/" + *key + ".tlc";
  // Refused for an unsafe directory: counted as rejected if there is something to refuse.
  auto refuse_in = [&](int dirfd, const std::string& path) {
    struct stat st;
    bool exists = dirfd >= 0 && ::fstatat(dirfd, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    count({0, 1, exists ? 1u : 0u, 0});
    return std::nullopt;
  };
  Dir root = open_root(dir_, false);
  if (!root.usable()) {
    if (root.missing || !root.fd.ok()) {
      count({0, 1, 0, 0});
      return std::nullopt;
    }
    return refuse_in(root.fd.get(), rel);
  }
  Dir shard = open_shard(root.fd.get(), shard_name, false);
  if (!shard.usable()) {
    if (shard.missing) {
      count({0, 1, 0, 0});
      return std::nullopt;
    }
    return refuse_in(root.fd.get(), rel);
  }
  ReadResult r = read_entry_file(shard.fd.get(), *key);
  if (r.status != ReadStatus::ok) {
    count({0, 1, r.status == ReadStatus::rejected ? 1u : 0u, 0});
    return std::nullopt;
  }
  uint64_t hits = record_use(shard.fd.get(), *key);
  r.entry->meta["hits"] = hits;
  r.entry->meta["last_used"] = now_unix();
  count({1, 0, 0, 0});
  return std::move(r.entry);
}

std::vector<EntryInfo> DiskCache::list() {
  std::vector<EntryInfo> out;
  std::set<std::string> seen;
  std::map<std::string, int64_t> order;  // last use in ns: seconds alone would tie
  uint64_t rejected = 0;
  Dir root = open_root(dir_, false);
  if (root.usable()) {
    for (const std::string& shard_name : dir_names(root.fd.get())) {
      if (!is_shard_name(shard_name)) continue;
      Dir shard = open_shard(root.fd.get(), shard_name, false);
      if (!shard.usable()) continue;
      for (const std::string& name : dir_names(shard.fd.get())) {
        std::string key;
        if (classify(name, shard_name, &key) != FileKind::entry) continue;
        ReadResult r = read_entry_file(shard.fd.get(), key);
        if (r.status == ReadStatus::rejected) ++rejected;
        if (r.status != ReadStatus::ok) continue;
        Use u = read_use(shard.fd.get(), key, r.st);
        order[key] = u.last_used_ns;
        EntryInfo info;
        info.key = key;
        info.meta = std::move(r.entry->meta);
        info.size = uint64_t(r.st.st_size);
        info.last_used = u.last_used_ns / 1000000000;
        info.hits = u.hits;
        info.meta["last_used"] = info.last_used;
        info.meta["hits"] = info.hits;
        seen.insert(key);
        out.push_back(std::move(info));
      }
    }
  }
  if (rejected) count({0, 0, rejected, 0});
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, m] : memory_) {
      if (seen.count(key)) continue;
      EntryInfo info{key, m.entry.meta, m.bytes, m.last_used, m.hits, true};
      info.meta["last_used"] = m.last_used;
      info.meta["hits"] = m.hits;
      order[key] = m.last_used * int64_t(1000000000) + int64_t(m.seq % 1000000000);
      out.push_back(std::move(info));
    }
  }
  std::sort(out.begin(), out.end(), [&](const EntryInfo& a, const EntryInfo& b) {
    int64_t ta = order[a.key], tb = order[b.key];
    return ta != tb ? ta > tb : a.key < b.key;
  });
  return out;
}

Stats DiskCache::stats() {
  flush_counters(true);
  Stats s;
  Dir root = open_root(dir_, false);
  if (root.usable()) {
    for (const DiskItem& it : scan_disk(root.fd.get())) {
      ++s.entries;
      s.bytes += it.size;
    }
    FileCounters c = read_stats_file(root.fd.get());
    s.hits = c.hits;
    s.misses = c.misses;
    s.rejected = c.rejected;
    s.evicted = c.evicted;
  }
  std::lock_guard lock(mu_);
  s.hits += pending_.hits;
  s.misses += pending_.misses;
  s.rejected += pending_.rejected;
  s.evicted += pending_.evicted;
  s.memory_entries = memory_.size();
  s.entries += memory_.size();
  s.bytes += memory_bytes_;
  return s;
}

void DiskCache::clear() {
  {
    std::lock_guard lock(mu_);
    memory_.clear();
    memory_bytes_ = 0;
    pending_ = {};
    approx_bytes_.reset();
  }
  Dir root = open_root(dir_, false);
  if (!root.usable()) return;
  // Only names the cache itself creates: TL_CACHE_DIR=$HOME by mistake must not wipe $HOME.
  for (const std::string& shard_name : dir_names(root.fd.get())) {
    if (!is_shard_name(shard_name)) continue;
    Dir shard = open_shard(root.fd.get(), shard_name, false);
    if (!shard.usable()) continue;
    for (const std::string& name : dir_names(shard.fd.get())) {
      if (classify(name, shard_name, nullptr) == FileKind::none) continue;
      ::unlinkat(shard.fd.get(), name.c_str(), 0);  // fails harmlessly on a directory
    }
    ::unlinkat(root.fd.get(), shard_name.c_str(), AT_REMOVEDIR);  // only if now empty
  }
  for (const std::string& name : dir_names(root.fd.get()))
    if (name.starts_with("stats.json.tmp.")) ::unlinkat(root.fd.get(), name.c_str(), 0);
  update_stats_file(root.fd.get(), {}, /*reset=*/true);
}

KeyLock& KeyLock::operator=(KeyLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}
KeyLock::~KeyLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last fd of the open file releases the flock
}

KeyLock DiskCache::lock(const std::string& raw_key) {
  auto key = normalize_key(raw_key);
  if (!key) return {};
  Dir root = open_root(dir_, true);
  if (!root.usable()) return {};
  Dir shard = open_shard(root.fd.get(), key->substr(0, 2), true);
  if (!shard.usable()) return {};
  const std::string name = *key + ".lock";
  int fd = ::openat(shard.fd.get(), name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0) return {};
  KeyLock l(fd);  // closes the fd on every return below but the last
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) return {};
  while (::flock(fd, LOCK_EX) != 0)
    if (errno != EINTR) return {};
  return l;
}

std::optional<Entry> DiskCache::find_prefix(const std::string& raw_prefix) {
  std::string prefix = raw_prefix;
  for (char& c : prefix) c = char(std::tolower(uint8_t(c)));
  if (prefix.empty() || prefix.size() > kKeyLength || !std::all_of(prefix.begin(), prefix.end(), is_hex))
    throw tl::error(fmt::format("'{}' is not a cache key prefix (1 to {} hex digits)", raw_prefix, kKeyLength));
  std::set<std::string> keys;
  Dir root = open_root(dir_, false);
  if (root.usable()) {
    for (const std::string& shard_name : dir_names(root.fd.get())) {
      if (!is_shard_name(shard_name) || shard_name.compare(0, std::min<size_t>(2, prefix.size()), prefix, 0,
                                                            std::min<size_t>(2, prefix.size())) != 0)
        continue;
      Dir shard = open_shard(root.fd.get(), shard_name, false);
      if (!shard.usable()) continue;
      for (const std::string& name : dir_names(shard.fd.get())) {
        std::string key;
        if (classify(name, shard_name, &key) == FileKind::entry && key.starts_with(prefix)) keys.insert(key);
      }
    }
  }
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, m] : memory_)
      if (key.starts_with(prefix)) keys.insert(key);
  }
  if (keys.empty()) return std::nullopt;
  if (keys.size() > 1) {
    std::string some;
    int n = 0;
    for (const auto& k : keys) {
      if (n++ == 4) {
        some += ", ...";
        break;
      }
      some += (some.empty() ? "" : ", ") + k;
    }
    throw tl::error(fmt::format("ambiguous key prefix '{}': {} entries match ({})", raw_prefix, keys.size(), some));
  }
  const std::string key = *keys.begin();
  {
    std::lock_guard lock(mu_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      Entry e = it->second.entry;
      e.meta["hits"] = it->second.hits;
      e.meta["last_used"] = it->second.last_used;
      return e;
    }
  }
  // Inspection is not use: no hit is counted and the LRU clock is not touched.
  Dir shard = root.usable() ? open_shard(root.fd.get(), key.substr(0, 2), false) : Dir{};
  if (!shard.usable()) return std::nullopt;
  ReadResult r = read_entry_file(shard.fd.get(), key);
  if (r.status == ReadStatus::rejected) count({0, 0, 1, 0});
  if (r.status != ReadStatus::ok) return std::nullopt;
  Use u = read_use(shard.fd.get(), key, r.st);
  r.entry->meta["hits"] = u.hits;
  r.entry->meta["last_used"] = u.last_used_ns / 1000000000;
  return std::move(r.entry);
}

}  // namespace tl::cache
