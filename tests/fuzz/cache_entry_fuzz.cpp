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
//   3: edits of a valid kernel entry's metadata (runtime/kernel_entry): the rest says which
//      fields to remove or replace, and with what (values of every JSON type, edge numbers,
//      or JSON text from the input). A checksum only proves who wrote the bytes, so the
//      reader must refuse every malformed field without throwing, and what it accepts must
//      hold the invariants the launch relies on.
// Every entry that parses (modes 1 and 3) also goes through the kernel-entry reader.
#include <xxhash.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "runtime/cache.hpp"
#include "runtime/kernel_entry.hpp"

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

// The kernel-entry reader on any entry: it never throws, and what it accepts is a code
// object a launch can use as is.
void kernel_reader(const tl::cache::Entry& e) {
  std::optional<tl::codegen::CodeObject> code;
  try {
    std::string why;
    code = tl::runtime::read_kernel_entry(e, &why);
    if (!code && why.empty()) fail("a kernel entry refused without a reason");
  } catch (...) {
    fail("read_kernel_entry threw");
  }
  if (!code) return;
  if (code->kernel_symbol.empty()) fail("accepted an empty kernel symbol");
  if (code->binary.empty()) fail("accepted an entry without code");
  if (code->block_threads < 1 || code->block_threads > 1024) fail("accepted block_threads out of range");
  if (code->shared_bytes < 0) fail("accepted negative shared_bytes");
  if (!(code->compile_ms >= 0)) fail("accepted a negative compile_ms");
  if (code->format != "elf" && code->format != "hsaco" && code->format != "ptx") fail("accepted an unknown format");
  for (const auto& [k, v] : code->report)
    if (v < 0 || (k == "dynamic_shared_bytes" && v > int64_t(UINT32_MAX))) fail("accepted a report value out of range");
  const auto& bytes = e.meta.at("code_bytes");
  if (!bytes.is_number_unsigned() || bytes.get<uint64_t>() != code->binary.size()) fail("code_bytes disagrees");
  // What it accepts it accepts again after a trip through the file format.
  auto again = tl::cache::parse_entry(tl::cache::serialize_entry(e), e.key);
  if (!again || !tl::runtime::read_kernel_entry(*again)) fail("an accepted kernel entry is refused after serialize -> parse");
}

void payload(std::span<const uint8_t> bytes) {
  std::vector<uint8_t> file = wrap(bytes);
  auto e = tl::cache::parse_entry(file, kKey);
  // The same bytes under another key are never an entry.
  if (tl::cache::parse_entry(file, "ffffffffffffffffffffffffffffffff")) fail("entry accepted under a foreign key");
  if (!e) return;
  if (e->key != kKey || !e->meta.is_object()) fail("parsed entry has a wrong key or non-object meta");
  kernel_reader(*e);
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

// A kernel entry as a CPU launch stores it (runtime/launch.cpp), with the cache's fields.
tl::cache::Entry valid_kernel_entry() {
  tl::codegen::CodeObject code;
  code.kernel_symbol = "probe";
  code.format = "elf";
  code.binary = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
  code.tile_ir = "tile ir";
  code.llvm_ir = "llvm ir";
  code.report = {{"stack_bytes", 64}, {"shared_bytes", 0}};
  code.remarks = {"pipelined: no"};
  code.block_threads = 1;
  code.compile_ms = 3.5;
  code.linker = "lld";
  code.linker_version = "22";
  code.linker_reason = "default";
  tl::runtime::KernelOrigin o{"probe", "probe.cpp", 12, "cpu", "x86_64-unknown-linux-gnu-znver4", {"ptr<i32> div16"},
                              std::string("\x11\0\0\0", 4)};
  o.compiler = "fuzz";
  tl::cache::Entry e = tl::runtime::kernel_entry(kKey, tl::runtime::kernel_meta(o, code), code);
  e.meta["created"] = 1700000000;
  e.meta["last_used"] = 1700000000;
  e.meta["hits"] = 0;
  return e;
}

// Structure-aware edits: each edit is a byte for the field, a byte for the action, and for
// "JSON text" a length byte and that many bytes.
void kernel_fields(std::span<const uint8_t> bytes) {
  static const tl::cache::Entry base = [] {
    tl::cache::Entry e = valid_kernel_entry();
    std::string why;
    if (!tl::runtime::read_kernel_entry(e, &why)) {
      std::fprintf(stderr, "cache_entry_fuzz: the valid kernel entry is refused: %s\n", why.c_str());
      std::abort();
    }
    return e;
  }();
  static const char* const kFields[] = {
      "/kernel", "/source", "/source/file", "/source/line", "/target", "/target_full", "/signature",
      "/signature/0", "/constants_hex", "/options", "/options/num_warps", "/options/num_stages",
      "/options/waves_per_eu", "/options/bounds_check", "/options/matrix_instr_nonkdim", "/options/kpack", "/report",
      "/report/stack_bytes", "/report/dynamic_shared_bytes", "/remarks", "/remarks/0", "/format", "/kernel_symbol",
      "/block_threads", "/shared_bytes", "/compile_ms", "/code_bytes", "/compiler", "/linker", "/linker/name",
      "/linker/version", "/linker/reason", "/created", "/last_used", "/hits", "/unknown", "/options/unknown"};
  using json = nlohmann::json;
  const json kValues[] = {json(),
                          json(true),
                          json(false),
                          json(0),
                          json(1),
                          json(-1),
                          json(3),
                          json(16),
                          json(1024),
                          json(1025),
                          json(std::numeric_limits<int64_t>::min()),
                          json(std::numeric_limits<int64_t>::max()),
                          json(std::numeric_limits<uint64_t>::max()),
                          json(uint64_t(UINT32_MAX) + 1),
                          json(0.5),
                          json(-0.0),
                          json(1e308),
                          json(""),
                          json("x"),
                          json("elf"),
                          json("4"),
                          json::array(),
                          json::array({1}),
                          json::array({"a"}),
                          json::object(),
                          json::object({{"a", 1}})};
  constexpr size_t kNumFields = sizeof kFields / sizeof kFields[0];
  constexpr size_t kNumValues = sizeof kValues / sizeof kValues[0];
  tl::cache::Entry e = base;
  size_t i = 0;
  while (i + 2 <= bytes.size()) {
    json::json_pointer at(kFields[bytes[i] % kNumFields]);
    const uint8_t action = bytes[i + 1];
    i += 2;
    // Only edit inside objects and arrays that are still there: json_pointer would
    // otherwise turn a number into an object, which is also a malformed entry but tests
    // nlohmann, not us.
    const json::json_pointer parent = at.parent_pointer();
    if (!e.meta.contains(parent)) continue;
    json& container = e.meta[parent];
    const bool settable = container.is_object() || (container.is_array() && !container.empty() && at.back() == "0");
    if (action % 8 == 0) {  // remove
      if (container.is_object()) container.erase(at.back());
      else if (container.is_array() && !container.empty()) container.erase(container.size() - 1);
    } else if (action % 8 == 1 && i < bytes.size()) {  // JSON text from the input
      size_t n = std::min<size_t>(bytes[i], bytes.size() - i - 1);
      json v = json::parse(bytes.begin() + long(i) + 1, bytes.begin() + long(i + 1 + n), nullptr, false);
      i += 1 + n;
      if (settable) e.meta[at] = v.is_discarded() ? json("discarded") : std::move(v);
    } else if (settable) {
      e.meta[at] = kValues[(action / 8) % kNumValues];
    }
  }
  if (i < bytes.size() && bytes[i] % 4 == 0) e.artifacts.erase("code");
  if (i < bytes.size() && bytes[i] % 4 == 1) e.artifacts["extra"] = {1};
  kernel_reader(e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::span<const uint8_t> rest(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0: whole_file(rest); break;
    case 1: payload(rest); break;
    case 2: text(rest); break;
    case 3: kernel_fields(rest); break;
  }
  return 0;
}
