// The on-disk JIT cache: compiled kernels survive the process, so a program pays for
// compilation once per (kernel, target, options, compiler version), not once per run.
//
// The cache is independent of the compiler: it stores opaque entries under a key the
// caller computes (a 128-bit hash of the canonical IR, the target, the options and the
// compiler version, as 32 hex digits). Nothing here ever throws to the user for a cache
// problem: a damaged, foreign or unsafe entry is a miss, an unwritable directory turns the
// cache into an in-memory one. Only user errors in the inspection API (an ambiguous key
// prefix) raise tl::error.
//
// Layout of the directory (TL_CACHE_DIR, default $HOME/.cache/tl, mode 0700):
//
//   <dir>/<key[0:2]>/<key>.tlc        one entry (format below), replaced only by rename(2)
//   <dir>/<key[0:2]>/<key>.used       side record: its mtime is the last use, its content
//                                     the hit count in decimal (updated under flock)
//   <dir>/<key[0:2]>/<key>.tmp.<pid>.<tid>.<random>   a store in progress
//   <dir>/<key[0:2]>/<key>.lock       flocked by lock(key): work one process does at a time
//   <dir>/stats.json, stats.lock      hits/misses/rejected/evicted over all processes
//                                     (stats.json replaced by rename under stats.lock)
//
// Only these names are ever created or deleted, so pointing TL_CACHE_DIR at a directory
// holding other files by mistake loses nothing but cache entries.
//
// Entry file format, version 1 (all integers little-endian):
//
//   offset  size  field
//        0     8  magic "TLCACHE1"
//        8     4  u32 format version (1)
//       12     4  u32 key length (32)
//       16    32  key, lowercase hex; must equal the file name
//       48     8  u64 payload length; must equal file size - 72 (no truncation, no trailer)
//       56    16  XXH3-128 of the payload: high 64 bits, then low 64 bits
//       72     -  payload:
//                   u32 meta length, meta as JSON text (UTF-8, an object)
//                   u32 artifact count
//                   per artifact: u32 name length (1..255), name, u64 data length, data
//                 the payload must be consumed exactly; artifact names are unique.
//
// The checksum catches corruption (a torn write after a crash, a flipped bit), not an
// attacker: attackers are kept out by refusing entries that are symlinks, not regular
// files, owned by another uid, or that sit in a directory owned by another user or
// writable by group/others.
//
// The implementation is in runtime/cache/, a file per concern (internal.hpp lists them).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace tl::cache {

inline constexpr char kMagic[8] = {'T', 'L', 'C', 'A', 'C', 'H', 'E', '1'};
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr size_t kKeyLength = 32;
inline constexpr size_t kHeaderSize = 72;
// No entry is larger than this; bigger files are refused before anything is allocated.
inline constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;
inline constexpr uint64_t kDefaultMaxBytes = uint64_t(1) << 30;

struct Entry {
  std::string key;  // 32 lowercase hex digits (uppercase is accepted and lowered)
  // kernel, file, line, target, signature, constants, options, report{vgpr, sgpr,
  // spill_vgpr, spill_sgpr, occupancy, ...}, compile_ms, sizes. The cache adds `created`,
  // `last_used` (unix seconds) and `hits` (loads of this entry over all processes).
  nlohmann::json meta = nlohmann::json::object();
  // "tile_ir", "llvm_ir", "code" (object/HSACO/PTX), optionally "isa".
  std::map<std::string, std::vector<uint8_t>> artifacts;
};

struct EntryInfo {
  std::string key;
  nlohmann::json meta;
  uint64_t size = 0;       // bytes of the entry file (of the serialized entry if in memory)
  int64_t last_used = 0;   // unix seconds
  uint64_t hits = 0;
  bool in_memory = false;  // kept in the in-memory fallback, not on disk
};

struct Stats {
  uint64_t entries = 0;  // on disk plus in memory
  uint64_t bytes = 0;    // sizes of the entry files (plus serialized in-memory entries)
  // Over all processes since the last clear(). Misses include the rejected loads.
  uint64_t hits = 0, misses = 0, rejected = 0, evicted = 0;
  uint64_t memory_entries = 0;  // kept in memory because the directory is unusable
};

// Serializes an entry to the file format above (meta as given; the cache's own fields are
// added by DiskCache::store).
std::vector<uint8_t> serialize_entry(const Entry& e);
// Parses and verifies an entry file's bytes. Never crashes, never allocates more than the
// input's size on hostile input: every length is checked against the bytes left. Returns
// nullopt for anything that is not a well-formed entry for `expected_key`.
std::optional<Entry> parse_entry(std::span<const uint8_t> bytes, const std::string& expected_key);

// "1048576", "64K", "512M", "2G", "1GiB", "10mb": bytes, with binary suffixes.
std::optional<uint64_t> parse_size(std::string_view s);
// 32 hex digits -> lowercase key; anything else (which could name a path) -> nullopt.
std::optional<std::string> normalize_key(std::string_view key);

// On-demand disassembly for `tl-cache isa` when an entry stores no "isa" artifact. The
// compiler registers one where it can disassemble the target; the cache only forwards.
using IsaProvider = std::function<std::string(const Entry&)>;
void set_isa_provider(IsaProvider provider);
IsaProvider isa_provider();

// An exclusive lock held across threads and processes (flock), released on destruction
// or when the process dies. Empty (held() false) where the directory is unusable.
class KeyLock {
 public:
  KeyLock() = default;
  explicit KeyLock(int fd) : fd_(fd) {}
  KeyLock(KeyLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  KeyLock& operator=(KeyLock&& o) noexcept;
  ~KeyLock();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

class DiskCache {
 public:
  // The process-wide cache: TL_CACHE_DIR (default $HOME/.cache/tl), TL_CACHE_MAX_BYTES.
  static DiskCache& global();
  static std::filesystem::path default_dir();

  // A cache in `dir` (created 0700 with parents if missing), capped by TL_CACHE_MAX_BYTES.
  explicit DiskCache(std::filesystem::path dir);
  DiskCache(std::filesystem::path dir, uint64_t max_bytes);
  ~DiskCache();  // writes counters not yet in stats.json
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  // Whether an entry's contents are what its reader expects: every meta field it reads
  // present, of its type and in its range, and the artifacts it needs. The cache verifies
  // the bytes (the checksum, the format); only the reader knows the schema of what it
  // stored, and a hostile or stale entry can carry a valid checksum over any JSON.
  using Accept = std::function<bool(const Entry&)>;

  // The entry for `key`, or nullopt (a miss) if there is none or it cannot be trusted. An
  // untrusted entry is counted as rejected (and as a miss) and deleted when it is ours to
  // delete. A hit bumps the entry's hit count and last use (meta "hits", "last_used").
  // An entry that `accept` refuses (or throws on) is untrusted in exactly that way, so that
  // the caller rebuilds it instead of meeting a malformed field later.
  std::optional<Entry> load(const std::string& key, const Accept& accept = {});
  // Writes a temporary file next to the entry and renames it into place, so that readers
  // and concurrent writers (threads or processes) only ever see complete entries. Then, if
  // the cache is over its cap, evicts least recently used entries down to 90% of it.
  // Returns false if the entry could not go to disk: it is then kept in memory (for this
  // process's loads), with one warning per process on stderr. TL_CACHE_FSYNC=1 adds fsync.
  bool store(const Entry& e);

  // Every entry, most recently used first. Damaged entries met on the way are refused
  // (and removed) as load() would.
  std::vector<EntryInfo> list();
  // Counters over all processes. Each process adds its hits/misses/rejected/evicted to
  // stats.json at most once a second (a locked read-modify-rename costs more than a load),
  // and on stats(), flush_stats(), destruction and, for global(), at exit.
  Stats stats();
  void flush_stats();
  // Waits for the lock on `key` (<key>.lock beside the entry) and holds it: for work that
  // only one process should do at a time, such as tuning a kernel (the others wait, then
  // load what it stored). Lock files are tiny, never evicted, removed by clear().
  KeyLock lock(const std::string& key);
  // Evicts least-recently-used entries until at most `max_bytes` remain; bytes freed.
  uint64_t prune(uint64_t max_bytes);
  // Removes every entry (only files the cache names; never anything else in the directory).
  void clear();
  // The one entry whose key starts with `prefix`; nullopt if none; tl::error if several
  // match or the prefix is not hex.
  std::optional<Entry> find_prefix(const std::string& prefix);

  const std::filesystem::path& dir() const { return dir_; }
  uint64_t max_bytes() const { return max_bytes_; }
  // Why the directory cannot be used right now (empty if it can).
  std::string disk_problem();

 private:
  struct MemEntry {
    Entry entry;
    uint64_t bytes = 0;
    uint64_t hits = 0;
    int64_t last_used = 0;
    uint64_t seq = 0;  // LRU order within the process
  };
  struct Counters {
    uint64_t hits = 0, misses = 0, rejected = 0, evicted = 0;
  };

  bool keep_in_memory(const Entry& e, uint64_t bytes, const std::string& reason);
  void count(Counters delta);
  void flush_counters(bool force);
  void maybe_evict(uint64_t added, const std::string& keep_key);
  uint64_t prune_disk(uint64_t max_bytes, const std::string& keep_key);

  std::filesystem::path dir_;
  uint64_t max_bytes_;
  std::mutex mu_;
  std::map<std::string, MemEntry> memory_;
  uint64_t memory_bytes_ = 0;
  uint64_t seq_ = 0;
  Counters pending_;  // not yet added to stats.json (kept here while the disk is unusable)
  int pending_pid_ = 0;  // a forked child must not write its parent's counts again
  int64_t last_flush_ms_ = 0;
  // Estimated bytes on disk, so that a store needs no directory scan until the estimate
  // crosses the cap (or goes stale, to notice other processes' stores).
  std::optional<uint64_t> approx_bytes_;
  int64_t approx_time_ = 0;
};

}  // namespace tl::cache
