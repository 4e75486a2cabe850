// Which linker makes AMD code objects (codegen/amdgpu/link_choice.hpp), end to end through
// kernel.compile: comgr by default wherever the installed comgr lists the ISA (Debian's
// comgr 5.2, API 2.4, lists gfx90a but not gfx942), lld otherwise; TL_AMDGPU_LINKER forces
// either; the choice, comgr's version and the reason are in the cache entry, in its key,
// and in `tl-cache show`.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "codegen/amdgpu/code_object.hpp"
#include "codegen/amdgpu/link_choice.hpp"
#include "runtime/cache.hpp"
#include "tl/tl.hpp"

#ifndef TL_TEST_BINARY_DIR
#error "TL_TEST_BINARY_DIR must name the build root (tests/CMakeLists.txt sets it)"
#endif

namespace {

using nlohmann::json;

// Sets an environment variable for one scope (every test case runs in its own process
// under ctest, but not under a plain run of the binary).
struct Env {
  std::string name;
  Env(const char* n, const char* v) : name(n) { v ? setenv(n, v, 1) : unsetenv(n); }
  ~Env() { unsetenv(name.c_str()); }
};

json compile(const char* target) {
  static auto k = tl::kernel("link_probe", [](tl::ptr<tl::f32> x, tl::i32 n) {
    auto i = tl::program_id(0) * 256 + tl::arange(0, 256);
    tl::store(x + i, tl::load(x + i, i < n, 0.0f) * 2.0f, i < n);
  });
  auto* p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  return json::parse(k.compile(target, {.num_warps = 4}, p, 1000));
}

// comgr's presence decides the default; CI installs Debian's (tools/install-deps.sh).
bool comgr_lists(const char* arch) { return tl::amd::comgr_knows_isa(std::string("amdgcn-amd-amdhsa--") + arch); }

std::string run(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  pclose(f);
  return out;
}

TEST(AmdgpuLinker, ComgrByDefaultWhereItListsTheIsa) {
  Env unset("TL_AMDGPU_LINKER", nullptr);
  if (!comgr_lists("gfx90a")) GTEST_SKIP() << "no comgr that lists gfx90a here (Debian's libamd-comgr2 does)";
  json m = compile("gfx90a");
  EXPECT_EQ(m["linker"]["name"], "comgr") << m.dump(2);
  EXPECT_EQ(m["linker"]["version"], tl::amd::comgr_version());
  EXPECT_NE(m["linker"]["reason"].get<std::string>().find("lists gfx90a"), std::string::npos);
  // Debian's comgr (API 2.4, LLVM 15) links code object v4 only; a newer one gets v5.
  int major = 0, minor = 0;
  std::sscanf(tl::amd::comgr_version().c_str(), "%d.%d", &major, &minor);
  EXPECT_EQ(m["report"]["code_object_version"], major * 100 + minor < 206 ? 4 : 5);
  EXPECT_EQ(tl::amd::inspect_elf(tl::cache::DiskCache::global().load(m["key"]).value().artifacts.at("code")).mach,
            "gfx90a");
}

TEST(AmdgpuLinker, LldWhereComgrDoesNotListTheIsa) {
  Env unset("TL_AMDGPU_LINKER", nullptr);
  if (comgr_lists("gfx942")) GTEST_SKIP() << "this comgr (a ROCm one) lists gfx942: it links it";
  json m = compile("gfx942");
  EXPECT_EQ(m["linker"]["name"], "lld") << m.dump(2);
  EXPECT_EQ(m["linker"]["version"], "");
  const std::string why = m["linker"]["reason"];
  EXPECT_TRUE(why.find("does not know the ISA amdgcn-amd-amdhsa--gfx942") != std::string::npos ||
              why.find("not installed") != std::string::npos)
      << why;
  EXPECT_EQ(m["report"]["code_object_version"], 5);
}

TEST(AmdgpuLinker, EnvironmentForcesEitherAndKeysTheEntry) {
  Env unset("TL_AMDGPU_LINKER", nullptr);
  const json by_default = compile("gfx90a");
  json by_lld, by_comgr;
  {
    Env lld("TL_AMDGPU_LINKER", "lld");
    by_lld = compile("gfx90a");
  }
  EXPECT_EQ(by_lld["linker"]["name"], "lld");
  EXPECT_EQ(by_lld["linker"]["reason"], "TL_AMDGPU_LINKER=lld");
  EXPECT_EQ(by_lld["report"]["code_object_version"], 5);
  // Code linked another way is another entry: never a hit on the other linker's code.
  if (by_default["linker"]["name"] == "comgr") EXPECT_NE(by_default["key"], by_lld["key"]);
  {
    Env comgr("TL_AMDGPU_LINKER", "comgr");
    by_comgr = compile("gfx90a");
  }
  // (Where comgr is the default anyway, this is the same code and the same entry.)
  if (comgr_lists("gfx90a")) EXPECT_EQ(by_comgr["key"], by_default["key"]);
  else EXPECT_EQ(by_comgr["linker"]["reason"].get<std::string>().substr(0, 22), "TL_AMDGPU_LINKER=comgr");
  // Forced on an ISA this comgr does not know: lld links, and the entry says why.
  if (!comgr_lists("gfx942")) {
    Env comgr("TL_AMDGPU_LINKER", "comgr");
    json m = compile("gfx942");
    EXPECT_EQ(m["linker"]["name"], "lld");
    EXPECT_NE(m["linker"]["reason"].get<std::string>().find("comgr failed, lld linked"), std::string::npos);
    Env strict("TL_AMDGPU_LINKER_STRICT", "1");
    EXPECT_THROW(compile("gfx942"), tl::compile_error);
  }
}

TEST(AmdgpuLinker, UnknownLinkerOrVersionIsAnError) {
  {
    Env bad("TL_AMDGPU_LINKER", "gold");
    try {
      compile("gfx942");
      ADD_FAILURE() << "no error";
    } catch (const tl::compile_error& e) {
      EXPECT_NE(std::string(e.what()).find("TL_AMDGPU_LINKER must be comgr or lld, got 'gold'"), std::string::npos);
    }
  }
  Env bad("TL_AMDGPU_CODE_OBJECT_VERSION", "7");
  EXPECT_THROW(compile("gfx942"), tl::compile_error);
}

TEST(AmdgpuLinker, TlCacheShowsTheLinker) {
  Env unset("TL_AMDGPU_LINKER", nullptr);
  json m = compile("gfx942");
  const std::string out = run(std::string(TL_TEST_BINARY_DIR "/tools/tl-cache --dir '") +
                              tl::cache::DiskCache::global().dir().string() + "' show " +
                              m["key"].get<std::string>());
  const std::string name = m["linker"]["name"];
  EXPECT_NE(out.find("linker     " + name), std::string::npos) << out;
  EXPECT_NE(out.find(m["linker"]["reason"].get<std::string>()), std::string::npos) << out;
}

}  // namespace
