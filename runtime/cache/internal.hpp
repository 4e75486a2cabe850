// What the cache's files share and nothing outside runtime/cache uses. The cache is one
// class (runtime/cache.hpp) over four concerns kept in separate files, so that each can
// be read and reviewed alone:
//
//   fs_safety.cpp     every file access: directory fds, O_NOFOLLOW, ownership checks,
//                     atomic replacement, the names the cache may create and delete
//   entry_format.cpp  the bytes of an entry file (serialize, parse, verify)
//   eviction.cpp      LRU: the .used side records, directory scans, pruning to the cap
//   stats.cpp         hit/miss/rejected/evicted counters shared by all processes
//   disk_cache.cpp    DiskCache itself: load, store, list, lock, clear, built on the above
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/cache.hpp"

namespace tl::cache::detail {

// ---------------------------------------------------------------------------------------
// File-system safety (fs_safety.cpp).

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

int64_t now_unix();
int64_t mtime_ns(const struct stat& st);
std::string errno_text(int e);
bool is_hex(char c);

void make_dirs(const std::filesystem::path& p);

struct Dir {
  Fd fd;
  bool missing = false;  // does not exist (yet): a plain miss, not a problem worth a warning
  std::string problem;   // non-empty: do not use (fd may still be open, to look inside)
  bool usable() const { return fd.ok() && problem.empty(); }
};

Dir open_root(const std::filesystem::path& dir, bool create);
Dir open_shard(int root, const std::string& name, bool create);
std::vector<std::string> dir_names(int dirfd);
bool is_shard_name(const std::string& n);

enum class FileKind { none, entry, used, temp, lock };
FileKind classify(const std::string& name, const std::string& shard, std::string* key);

void unlink_if_same(int dirfd, const std::string& name, const struct stat& st);
int write_atomic(int dirfd, const std::string& name, std::span<const uint8_t> bytes);
std::optional<std::string> read_small_file(int dirfd, const std::string& name, size_t limit);

enum class ReadStatus { ok, missing, rejected };

struct ReadResult {
  ReadStatus status = ReadStatus::missing;
  std::optional<Entry> entry;
  struct stat st {};
};

ReadResult read_entry_file(int shard, const std::string& key);
// Removes <shard>/<key>.tlc (and its side record) if it is still the file `st` describes
// and ours to delete: for an entry that parsed but that its reader refused.
void remove_entry_file(int shard, const std::string& key, const struct stat& st);

// ---------------------------------------------------------------------------------------
// Entry format (entry_format.cpp).

std::vector<uint8_t> serialize(const std::string& key, const nlohmann::json& meta,
                               const std::map<std::string, std::vector<uint8_t>>& artifacts);

// ---------------------------------------------------------------------------------------
// LRU eviction (eviction.cpp).

struct Use {
  uint64_t hits = 0;
  int64_t last_used_ns = 0;
};

Use read_use(int shard, const std::string& key, const struct stat& entry_st);
uint64_t record_use(int shard, const std::string& key);

struct DiskItem {
  std::string shard, key;
  uint64_t size = 0;
  int64_t last_used_ns = 0;
};

std::vector<DiskItem> scan_disk(int root);
uint64_t env_max_bytes();

// ---------------------------------------------------------------------------------------
// Statistics (stats.cpp).

struct FileCounters {
  uint64_t hits = 0, misses = 0, rejected = 0, evicted = 0;
};

FileCounters read_stats_file(int root);
bool update_stats_file(int root, const FileCounters& delta, bool reset);

}  // namespace tl::cache::detail
