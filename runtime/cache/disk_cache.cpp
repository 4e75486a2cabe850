// DiskCache: load, store, list, lock and clear, composed from the concerns in the other
// files of this folder (internal.hpp lists them). What this file decides is policy: what
// counts as a hit, a miss or a rejection, when the cache falls back to memory, and that no
// cache problem ever reaches the user as an exception.
#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <set>

#include <fmt/core.h>

#include "runtime/cache/internal.hpp"
#include "tl/error.hpp"

namespace tl::cache {
namespace {

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

using namespace detail;

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

DiskCache::DiskCache(std::filesystem::path dir) : DiskCache(std::move(dir), env_max_bytes()) {}

DiskCache::DiskCache(std::filesystem::path dir, uint64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {
  if (!dir_.empty()) make_dirs(dir_);
}

DiskCache::~DiskCache() { flush_counters(true); }

std::string DiskCache::disk_problem() {
  Dir root = open_root(dir_, true);
  return root.problem;
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

// A reader's check must not throw into the cache: a throwing check refuses the entry.
static bool accepted(const DiskCache::Accept& accept, const Entry& e) {
  if (!accept) return true;
  try {
    return accept(e);
  } catch (...) {
    return false;
  }
}

std::optional<Entry> DiskCache::load(const std::string& raw_key, const Accept& accept) {
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
      if (!accepted(accept, e)) {
        lock.lock();  // (not held while the caller's check ran)
        if (auto again = memory_.find(*key); again != memory_.end()) {
          memory_bytes_ -= again->second.bytes;
          memory_.erase(again);
        }
        lock.unlock();
        count({0, 1, 1, 0});
        return std::nullopt;
      }
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
  if (r.status == ReadStatus::ok && !accepted(accept, *r.entry)) {
    remove_entry_file(shard.fd.get(), *key, r.st);
    r.status = ReadStatus::rejected;
  }
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
