// The compiler's identity in the cache key (runtime/compiler_identity.hpp): another build
// of libtl, even of uncommitted changes, misses the entries of this one and compiles
// again; the same build finds them. And the build-time hash itself
// (cmake/compiler_identity.cmake) changes with any source and only with the sources.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/cache.hpp"
#include "runtime/compiler_identity.hpp"
#include "tl/tl.hpp"

namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const char* name) {
  fs::path d = fs::temp_directory_path() / fmt::format("tl-identity-{}-{}-{}", name, getpid(), std::rand());
  fs::create_directories(d);
  return d;
}

// A cache of this process alone, set before the first compile opens the global one.
const bool g_cache_set = [] {
  setenv("TL_CACHE_DIR", fresh_dir("cache").c_str(), 1);
  unsetenv("TL_ALWAYS_COMPILE");
  return true;
}();

auto& scale_kernel() {
  static auto k = tl::kernel("identity_probe", [](tl::ptr<tl::f32> x, tl::ptr<tl::f32> y, int n) {
    auto i = tl::arange(0, 128);
    auto m = i < n;
    tl::store(y + i, tl::load(x + i, m, 0.f) * 3.f, m);
  });
  return k;
}

// Compiles the probe for `target`; returns its cache key.
std::string compile_probe(const std::string& target) {
  auto* p = reinterpret_cast<float*>(uintptr_t(1) << 20);
  return nlohmann::json::parse(scale_kernel().compile(target, {}, p, p, 100))["key"].get<std::string>();
}

struct Restore {
  ~Restore() { tl::detail::set_compiler_identity_for_testing(""); }
};

}  // namespace

TEST(CompilerIdentity, NamesTheRevisionAndTheSourceHash) {
  const std::string id = tl::detail::compiler_identity();
  EXPECT_TRUE(std::regex_match(tl::detail::compiler_source_hash(), std::regex("[0-9a-f]{16}"))) << id;
  EXPECT_NE(id.find("+src." + tl::detail::compiler_source_hash()), std::string::npos) << id;
}

TEST(CompilerIdentity, AnotherCompilerMissesTheCacheAndCompilesAgain) {
  Restore restore;
  for (const char* target : {"cpu", "gfx942"}) {
    SCOPED_TRACE(target);
    const std::string first = compile_probe(target);
    const tl::jit_stats s0 = tl::stats();
    EXPECT_EQ(compile_probe(target), first);  // this build: the entry it stored
    const tl::jit_stats s1 = tl::stats();
    EXPECT_EQ(s1.compiles, s0.compiles);
    EXPECT_EQ(s1.disk_hits, s0.disk_hits + 1);

    // The same git revision with other sources (an uncommitted edit): another key, a compile.
    tl::detail::set_compiler_identity_for_testing(tl::detail::compiler_identity() + "-edited");
    const std::string edited = compile_probe(target);
    const tl::jit_stats s2 = tl::stats();
    EXPECT_NE(edited, first);
    EXPECT_EQ(s2.compiles, s1.compiles + 1);
    EXPECT_EQ(s2.disk_hits, s1.disk_hits);
    auto entry = tl::cache::DiskCache::global().load(edited);
    ASSERT_TRUE(entry);
    EXPECT_EQ(entry->meta["compiler"].get<std::string>(), tl::detail::compiler_identity());

    // Back to this build: its entry again, nothing compiled.
    tl::detail::set_compiler_identity_for_testing("");
    EXPECT_EQ(compile_probe(target), first);
    EXPECT_EQ(tl::stats().compiles, s2.compiles);
  }
}

// The build step's script over a small tree: the hash is of the files' contents and their
// paths relative to the root (two checkouts of the same code agree), and any edit changes it.
TEST(CompilerIdentity, TheBuildHashFollowsEverySource) {
  const fs::path script = fs::path(TL_SOURCE_DIR) / "cmake" / "compiler_identity.cmake";
  auto hash_of = [&](const fs::path& root) {
    std::ofstream(root / "list.txt") << (root / "codegen" / "a.cpp").string() << "\n"
                                     << (root / "runtime" / "b.hpp").string() << "\n";
    const fs::path out = root / "out.cpp";
    const std::string cmd = fmt::format("cmake -DROOT={} -DLIST={} -DOUT={} '-DEXTRA=LLVM 22' -P {} 2>&1", root.string(),
                                        (root / "list.txt").string(), out.string(), script.string());
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(out);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::smatch m;
    EXPECT_TRUE(std::regex_search(text, m, std::regex("kCompilerSourceHash\\[\\] = \"([0-9a-f]{16})\""))) << text;
    return m.size() > 1 ? m[1].str() : std::string();
  };
  auto write_tree = [](const fs::path& root, const std::string& a) {
    fs::create_directories(root / "codegen");
    fs::create_directories(root / "runtime");
    std::ofstream(root / "codegen" / "a.cpp") << a;
    std::ofstream(root / "runtime" / "b.hpp") << "#pragma once\nint b();\n";
  };
  const fs::path one = fresh_dir("tree1"), two = fresh_dir("tree2");
  write_tree(one, "int a() { return 1; }\n");
  write_tree(two, "int a() { return 1; }\n");
  const std::string h1 = hash_of(one);
  EXPECT_EQ(hash_of(two), h1);  // the same code elsewhere
  write_tree(two, "int a() { return 2; }\n");
  EXPECT_NE(hash_of(two), h1);  // one edited line
  write_tree(two, "int a() { return 1; }\n");
  EXPECT_EQ(hash_of(two), h1);  // undone
  fs::remove_all(one);
  fs::remove_all(two);
}
