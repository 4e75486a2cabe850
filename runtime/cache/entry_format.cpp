// The entry file format (runtime/cache.hpp documents the layout). Entries come from disk,
// where a crash, a full disk or another program may have left anything, so the parser
// trusts no length before checking it against the bytes actually present, and refuses
// anything that the writer here would not have produced byte for byte.
#include <cstring>

#include <xxhash.h>

#include "runtime/cache/internal.hpp"

namespace tl::cache {
namespace {

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

}  // namespace

namespace detail {

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

}  // namespace detail

std::vector<uint8_t> serialize_entry(const Entry& e) { return detail::serialize(e.key, e.meta, e.artifacts); }

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

}  // namespace tl::cache
