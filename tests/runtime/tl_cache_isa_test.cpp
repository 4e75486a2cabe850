// `tl-cache isa` on real entries made by the JIT: the disassembly of an AMD code
// object (made on demand from the stored HSACO) and the PTX of an NVIDIA one.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "support/reference.hpp"

namespace fs = std::filesystem;

namespace {

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  pclose(p);
  return out;
}

auto make_kernel() {
  return tl::kernel("isa_probe", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, int BLOCK) {
    auto i = tl::program_id(0) * BLOCK + tl::arange(0, BLOCK);
    tl::store(y + i, tl::load(x + i) * 2.0f);
  });
}

}  // namespace

TEST(TlCacheIsa, DisassemblesAmdAndShowsPtxOnDemand) {
  // The process-wide cache is $TL_CACHE_DIR (the test scripts give each run its own).
  const char* dir = std::getenv("TL_CACHE_DIR");
  if (!dir) GTEST_SKIP() << "TL_CACHE_DIR is not set; this test needs a private cache directory";
  const std::string tool = std::string(TL_TEST_BINARY_DIR) + "/tools/tl-cache --dir " + dir;
  auto* p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  auto k = make_kernel();
  auto amd = nlohmann::json::parse(k.compile("gfx942", {.num_warps = 4}, p, p, 1024));
  auto nv = nlohmann::json::parse(k.compile("sm_90", {.num_warps = 4}, p, p, 1024));
  std::string isa = run(tool + " isa " + amd["key"].get<std::string>());
  EXPECT_NE(isa.find("global_load_dwordx4"), std::string::npos) << isa.substr(0, 2000);
  EXPECT_NE(isa.find("s_endpgm"), std::string::npos);
  std::string ptx = run(tool + " isa " + nv["key"].get<std::string>());
  EXPECT_NE(ptx.find(".entry"), std::string::npos) << ptx.substr(0, 2000);
  EXPECT_NE(ptx.find("ld.global.v4"), std::string::npos);
  std::string listing = run(tool + " list --kernel isa_probe");
  EXPECT_NE(listing.find("gfx942"), std::string::npos) << listing;
  EXPECT_NE(listing.find("sm_90"), std::string::npos) << listing;
}
