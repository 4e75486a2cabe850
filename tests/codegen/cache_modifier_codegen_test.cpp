// Cache modifiers, eviction policies and volatile (tl::load / tl::store's access_options)
// compiled for gfx90a, gfx942, gfx950 and sm_90 without running: every modifier's
// instruction bits asserted in the disassembly (AMD: sc0 / sc1 / nt on gfx942 and gfx950,
// glc / slc on gfx90a; global and buffer accesses) and in the PTX (ld.global.cg, ...,
// L2::cache_hint with its createpolicy, ld.volatile), the PTX assembled by ptxas where
// one is installed. docs/language.md, "Cache modifiers", is the table these check.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <unistd.h>

#include "codegen/amdgpu/code_object.hpp"
#include "support/compile.hpp"
#include "support/ptxas.hpp"
#include "support/traced_kernels.hpp"

using namespace tl;
using tltest::count;
using tltest::ptr_arg;
using tltest::trace;

namespace {

using tltest::ptxas_errors;

using Bits = std::set<std::string>;

// y = x over 256 f32, the load (or the store) with `opts`; tl::amd's buffer accesses with
// `buffer`.
std::unique_ptr<ir::Function> copy_kernel(access_options load_opts, access_options store_opts, bool buffer = false) {
  return trace("copy", [&](detail::Trace& t) {
    auto x = ptr_arg<ty::f32>(t, "x", true);
    auto y = ptr_arg<ty::f32>(t, "y", true);
    auto offs = tl::arange(0, 256);
    if (buffer) {
      tl::amd::buffer_store(y, offs, tl::amd::buffer_load(x, offs, load_opts), store_opts);
    } else {
      tl::store(y + offs, tl::load(x + offs, load_opts), store_opts);
    }
  });
}

// The cache-policy bits of each disassembled instruction whose mnemonic starts `prefix`.
std::vector<Bits> bits_of(const std::string& dis, const std::string& prefix) {
  std::vector<Bits> out;
  std::istringstream in(dis);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string w;
    if (!(words >> w) || w.rfind(prefix, 0) != 0) continue;
    Bits b;
    while (words >> w)
      if (w == "sc0" || w == "sc1" || w == "nt" || w == "glc" || w == "slc" || w == "scc") b.insert(w);
    out.push_back(b);
  }
  return out;
}

// Every `prefix` instruction carries exactly `want` (and there is at least one).
void expect_bits(const std::string& dis, const std::string& prefix, const Bits& want, const std::string& what) {
  auto all = bits_of(dis, prefix);
  ASSERT_FALSE(all.empty()) << what << ": no " << prefix << "\n" << dis;
  for (const Bits& b : all) {
    std::string got, exp;
    for (auto& x : b) got += x + " ";
    for (auto& x : want) exp += x + " ";
    EXPECT_EQ(got, exp) << what << " (" << prefix << ")\n" << dis;
  }
}

struct AmdCase {
  access_options opts;
  const char* name;
  bool load;
  Bits gfx90a, cdna3;          // global accesses
  Bits gfx90a_buf, cdna3_buf;  // buffer accesses
};

const AmdCase kAmdCases[] = {
    // Loads (Triton's AMD table: .cg/.cs nontemporal, .cv volatile; buffers its sc0/sc1/nt bits).
    {cache_modifier::ca, "load .ca", true, {}, {}, {}, {}},
    {cache_modifier::cg, "load .cg", true, {"glc", "slc"}, {"nt"}, {"glc", "slc"}, {"sc0", "nt"}},
    {cache_modifier::cs, "load .cs", true, {"glc", "slc"}, {"nt"}, {"glc", "slc"}, {"sc0", "nt"}},
    {cache_modifier::lu, "load .lu", true, {"glc", "slc"}, {"nt"}, {"glc", "slc"}, {"sc0", "nt"}},
    {cache_modifier::cv, "load .cv", true, {"glc"}, {"sc0", "sc1"}, {"glc"}, {"sc0", "sc1"}},
    {volatile_, "volatile load", true, {"glc"}, {"sc0", "sc1"}, {"glc"}, {"sc0", "sc1"}},
    {evict::last, "load evict_last (no AMD form)", true, {}, {}, {}, {}},
    // Stores.
    {cache_modifier::wb, "store .wb", false, {}, {}, {}, {}},
    {cache_modifier::cg, "store .cg", false, {}, {}, {}, {}},
    {cache_modifier::cs, "store .cs", false, {"glc", "slc"}, {"nt"}, {"glc", "slc"}, {"sc0", "nt"}},
    {cache_modifier::wt, "store .wt", false, {}, {"sc0", "sc1"}, {}, {"sc0", "sc1"}},
    {volatile_, "volatile store", false, {}, {"sc0", "sc1"}, {}, {"sc0", "sc1"}},
};

std::string ptx(const codegen::CodeObject& co) { return std::string(co.binary.begin(), co.binary.end()); }


}  // namespace

TEST(CacheModifierCodegen, AmdGlobalAccessBits) {
  for (const char* arch : {"gfx90a", "gfx942", "gfx950"}) {
    const bool gfx90a = std::string(arch) == "gfx90a";
    for (const AmdCase& c : kAmdCases) {
      auto f = c.load ? copy_kernel(c.opts, {}) : copy_kernel({}, c.opts);
      std::string dis = amd::disassemble(tltest::compile_for(arch, *f).binary);
      const std::string what = std::string(arch) + " " + c.name;
      expect_bits(dis, c.load ? "global_load" : "global_store", gfx90a ? c.gfx90a : c.cdna3, what);
      expect_bits(dis, c.load ? "global_store" : "global_load", {}, what + ", the other access");
    }
  }
}

TEST(CacheModifierCodegen, AmdBufferAccessBits) {
  for (const char* arch : {"gfx90a", "gfx942", "gfx950"}) {
    const bool gfx90a = std::string(arch) == "gfx90a";
    for (const AmdCase& c : kAmdCases) {
      auto f = c.load ? copy_kernel(c.opts, {}, true) : copy_kernel({}, c.opts, true);
      std::string dis = amd::disassemble(tltest::compile_for(arch, *f).binary);
      const std::string what = std::string(arch) + " buffer " + c.name;
      expect_bits(dis, c.load ? "buffer_load" : "buffer_store", gfx90a ? c.gfx90a_buf : c.cdna3_buf, what);
      expect_bits(dis, c.load ? "buffer_store" : "buffer_load", {}, what + ", the other access");
    }
  }
}

// A volatile load in a loop is made every iteration (never hoisted): a flag polled.
TEST(CacheModifierCodegen, AmdVolatileLoadInALoopIsReadEachIteration) {
  auto f = trace("poll", [&](detail::Trace& t) {
    auto flag = ptr_arg<ty::i32>(t, "flag", true);
    auto out = ptr_arg<ty::i32>(t, "out", true);
    tl::i32 spins = 0;
    tl::while_([&] { return (tl::load(flag, tl::volatile_) == 0) & (spins < 1000); }, [&] { spins += 1; });
    tl::store(out, spins);
  });
  for (const char* arch : {"gfx90a", "gfx942"}) {
    std::string dis = amd::disassemble(tltest::compile_for(arch, *f).binary);
    size_t load = dis.find("global_load_dword");
    ASSERT_NE(load, std::string::npos) << arch << "\n" << dis;
    EXPECT_NE(dis.find("s_cbranch", load), std::string::npos) << arch << "\n" << dis;  // the branch back follows it
  }
}

struct PtxCase {
  access_options opts;
  const char* name;
  bool load;
  std::vector<std::string> want;  // in the PTX
};

TEST(CacheModifierCodegen, NvptxQualifiers) {
  const PtxCase cases[] = {
      {cache_modifier::cg, "load .cg", true, {"ld.global.cg.v2.b32"}},
      {cache_modifier::cs, "load .cs", true, {"ld.global.cs.v2.b32"}},
      {cache_modifier::lu, "load .lu", true, {"ld.global.lu.v2.b32"}},
      {cache_modifier::cv, "load .cv", true, {"ld.global.cv.v2.b32"}},
      {volatile_, "volatile load", true, {"ld.volatile.global.v2"}},
      {evict::last, "load evict_last", true,
       {"createpolicy.fractional.L2::evict_last.b64", "ld.global.L1::evict_last.L2::cache_hint.v2.b32"}},
      {cache_modifier::cg | evict::first, "load .cg evict_first", true,
       {"createpolicy.fractional.L2::evict_first.b64", "ld.global.cg.L2::cache_hint.v2.b32"}},
      {cache_modifier::cg, "store .cg", false, {"st.global.cg.v2.b32"}},
      {cache_modifier::cs, "store .cs", false, {"st.global.cs.v2.b32"}},
      {cache_modifier::wt, "store .wt", false, {"st.global.wt.v2.b32"}},
      {volatile_, "volatile store", false, {"st.volatile.global.v2"}},
      {cache_modifier::cs | evict::last, "store .cs evict_last", false,
       {"createpolicy.fractional.L2::evict_last.b64", "st.global.cs.L2::cache_hint.v2.b32"}},
  };
  for (const PtxCase& c : cases) {
    auto f = c.load ? copy_kernel(c.opts, {}) : copy_kernel({}, c.opts);
    std::string p = ptx(tltest::compile_for("sm_90", *f));
    for (const std::string& w : c.want) EXPECT_NE(p.find(w), std::string::npos) << c.name << ": " << w << "\n" << p;
    EXPECT_EQ(ptxas_errors(p), "") << c.name << "\n" << p;
  }
  // The defaults (.ca, .wb) are the plain instructions, no inline PTX.
  for (const auto& [opts, load] : {std::pair{access_options(cache_modifier::ca), true},
                                    std::pair{access_options(cache_modifier::wb), false}}) {
    auto f = load ? copy_kernel(opts, {}) : copy_kernel({}, opts);
    std::string p = ptx(tltest::compile_for("sm_90", *f));
    EXPECT_NE(p.find("ld.global.v2"), std::string::npos) << p;
    EXPECT_NE(p.find("st.global.v2"), std::string::npos) << p;
  }
}

// Masked accesses of every width PTX moves (8-, 16-, 64-bit elements; vectors and scalars)
// carry the modifier and assemble.
TEST(CacheModifierCodegen, NvptxEveryWidthAssembles) {
  auto f = trace("widths", [&](detail::Trace& t) {
    auto a = ptr_arg<ty::i8>(t, "a", true);
    auto h = ptr_arg<ty::f16>(t, "h", true);
    auto d = ptr_arg<ty::i64>(t, "d", true);
    auto s = ptr_arg<ty::f32>(t, "s", true);
    auto n = tltest::scalar_arg<ty::i32>(t, "n", false);
    auto offs = tl::arange(0, 128);
    auto m = offs < n;
    tl::store(a + offs, tl::load(a + offs, m, 0, cache_modifier::cs), m, cache_modifier::cs);
    tl::store(h + offs, tl::load(h + offs, m, 0.0f, cache_modifier::cg | evict::last), m, evict::first);
    tl::store(d + offs, tl::load(d + offs, cache_modifier::lu), cache_modifier::wt);
    tl::store(s, tl::load(s, cache_modifier::cv) + 1.0f, cache_modifier::cg);
  });
  std::string p = ptx(tltest::compile_for("sm_90", *f));
  for (const char* w : {"ld.global.cs.b8", "st.global.cs.b8", "ld.global.cg.L2::cache_hint", "ld.global.lu",
                        "st.global.wt", "ld.global.cv.b32", "st.global.cg.b32",
                        "st.global.L1::evict_first.L2::cache_hint"})
    EXPECT_NE(p.find(w), std::string::npos) << w << "\n" << p;
  EXPECT_EQ(ptxas_errors(p), "") << p;
}

// TL_DUMP_IR's form shows the access: `load cache=cg evict_last`, `store ... volatile`.
TEST(CacheModifierCodegen, PrintedOnTheIr) {
  auto f = copy_kernel(cache_modifier::cg | evict::last, volatile_);
  std::string ir = f->str();
  EXPECT_NE(ir.find("load cache=cg evict_last"), std::string::npos) << ir;
  EXPECT_NE(ir.find("store volatile"), std::string::npos) << ir;
  auto b = copy_kernel(cache_modifier::cs, cache_modifier::wt, true);
  EXPECT_NE(b->str().find("load buffer cache=cs"), std::string::npos) << b->str();
  EXPECT_NE(b->str().find("store buffer cache=wt"), std::string::npos) << b->str();
}
