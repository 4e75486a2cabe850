// LRU eviction: the cache has a cap (TL_CACHE_MAX_BYTES), and what goes first is what was
// used longest ago, over all processes sharing the directory. Each entry's last use is the
// mtime of its .used side record (its content the hit count), so that a hit writes a few
// bytes instead of rewriting the entry, and a scan needs only stat calls.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <mutex>

#include "runtime/cache/internal.hpp"

namespace tl::cache {
namespace detail {

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

// The cap: TL_CACHE_MAX_BYTES if it reads as a size, else the default.
uint64_t env_max_bytes() {
  const char* v = std::getenv("TL_CACHE_MAX_BYTES");
  if (v && *v)
    if (auto n = parse_size(v)) return *n;
  return kDefaultMaxBytes;
}

}  // namespace detail

using namespace detail;

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

}  // namespace tl::cache
