// Statistics: hits, misses, rejected and evicted entries counted over every process that
// shares the cache directory, for `tl-cache stats` and for tests that must tell a hit from
// a rebuild. stats.json is updated under an flock on stats.lock and replaced by rename, so
// lock-free readers never see a partial file; each process batches its counts (at most one
// locked update a second), because a locked read-modify-rename costs more than a load.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <mutex>

#include "runtime/cache/internal.hpp"

namespace tl::cache {
namespace detail {

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

}  // namespace detail

using namespace detail;

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

void DiskCache::flush_stats() { flush_counters(true); }

}  // namespace tl::cache
