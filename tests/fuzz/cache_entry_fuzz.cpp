// libFuzzer target: the cache-entry reader, and the other text the cache parses, on
// arbitrary bytes. It must never crash, hang or allocate without bound, whatever a hostile
// or broken file holds.
//
// The first byte picks what the rest is:
//   0: a whole entry file, header included. Random bytes almost never carry a matching
//      checksum, so this mostly exercises the header checks.
//   1: an entry's payload. The fuzzer wraps it in a valid header (magic, version, key,
//      length, XXH3-128), so every input reaches the payload parser (meta JSON, artifact
//      table). An entry that parses must survive serialize -> parse unchanged.
//   2: a size ("64K", "1GiB": TL_CACHE_MAX_BYTES, tl-cache prune --max-size) and a key
//      (normalize_key: tl-cache arguments, file names).
#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "runtime/cache.hpp"

namespace {

constexpr char kKey[] = "0123456789abcdef0123456789abcdef";

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

// A header the reader accepts around `payload`, per the format in runtime/cache.hpp.
std::vector<uint8_t> wrap(std::span<const uint8_t> payload) {
  std::vector<uint8_t> out(tl::cache::kMagic, tl::cache::kMagic + 8);
  put_u32(out, tl::cache::kFormatVersion);
  put_u32(out, uint32_t(tl::cache::kKeyLength));
  out.insert(out.end(), kKey, kKey + tl::cache::kKeyLength);
  put_u64(out, payload.size());
  XXH128_hash_t h = XXH3_128bits(payload.data(), payload.size());
  put_u64(out, h.high64);
  put_u64(out, h.low64);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "cache_entry_fuzz: %s\n", what);
  std::abort();
}

void whole_file(std::span<const uint8_t> bytes) {
  // The first 32 bytes double as the expected key, so the fuzzer can reach the paths
  // behind a matching key as well as the mismatch.
  std::string key(reinterpret_cast<const char*>(bytes.data()), bytes.size() < 32 ? bytes.size() : 32);
  (void)tl::cache::parse_entry(bytes, key);
  (void)tl::cache::parse_entry(bytes, kKey);
}

void payload(std::span<const uint8_t> bytes) {
  std::vector<uint8_t> file = wrap(bytes);
  auto e = tl::cache::parse_entry(file, kKey);
  // The same bytes under another key are never an entry.
  if (tl::cache::parse_entry(file, "ffffffffffffffffffffffffffffffff")) fail("entry accepted under a foreign key");
  if (!e) return;
  if (e->key != kKey || !e->meta.is_object()) fail("parsed entry has a wrong key or non-object meta");
  // What the reader accepts, the writer must reproduce: serialize -> parse is the identity.
  std::vector<uint8_t> again = tl::cache::serialize_entry(*e);
  auto e2 = tl::cache::parse_entry(again, kKey);
  if (!e2) fail("a parsed entry, serialized again, does not parse");
  if (e2->meta != e->meta) fail("meta changed through serialize -> parse");
  if (e2->artifacts != e->artifacts) fail("artifacts changed through serialize -> parse");
  // Any single truncation of a valid entry is refused.
  if (again.size() > tl::cache::kHeaderSize &&
      tl::cache::parse_entry(std::span<const uint8_t>(again).first(again.size() - 1), kKey))
    fail("a truncated entry was accepted");
}

void text(std::span<const uint8_t> bytes) {
  std::string_view s(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (auto v = tl::cache::parse_size(s)) {
    // A plain decimal count of bytes reads back as itself.
    auto back = tl::cache::parse_size(std::to_string(*v));
    if (!back || *back != *v) fail("parse_size does not read its own decimal back");
  }
  if (auto k = tl::cache::normalize_key(s)) {
    if (k->size() != tl::cache::kKeyLength) fail("normalize_key returned a key of the wrong length");
    for (char c : *k)
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) fail("normalize_key let a non-hex digit through");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::span<const uint8_t> rest(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0: whole_file(rest); break;
    case 1: payload(rest); break;
    case 2: text(rest); break;
  }
  return 0;
}
