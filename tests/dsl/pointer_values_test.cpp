// Pointers as values (Triton's arrays of pointers and its int_to_ptr / ptr_to_int), run
// on the test device (the CPU in CI, a GPU where there is one or with TL_DEVICE): a
// `tl::ptr<tl::ptr<T>>` parameter whose loads give tiles of `tl::ptr<T>`, pointer
// arithmetic on them, loads and stores through them, stores of pointers, and
// `.to<tl::ptr<T>>()` of i64/u64 tiles and back; Triton's tutorial 08 (grouped GEMM) as
// Triton writes it, on device arrays of pointers, sizes and leading dimensions. Every
// result against a plain C++ reference on random inputs, outputs poisoned first.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "support/reference.hpp"

using namespace tltest;
namespace ty = tl::ty;

namespace {

// The device address of element i of a buffer, as the kernel sees it.
template <class E> uint64_t address_of(const tl::buffer<E>& b, size_t i = 0) {
  return b.address() + i * sizeof(typename tl::buffer<E>::host_t);
}

// Ragged arrays: G buffers of random f32 of the given lengths.
struct Ragged {
  std::vector<std::vector<float>> host;
  std::vector<tl::buffer<ty::f32>> dev;
};
Ragged ragged(const std::vector<int>& lengths) {
  Ragged r;
  for (int n : lengths) {
    r.host.push_back(random_floats(size_t(n)));
    r.dev.push_back(upload<ty::f32>(r.host.back()));
  }
  return r;
}
// An array of pointers to the buffers: what a ptr<ptr<f32>> parameter takes.
tl::buffer<ty::ptr<ty::f32>> pointer_array(const std::vector<tl::buffer<ty::f32>>& bufs) {
  std::vector<float*> p;
  for (auto& b : bufs) p.push_back(b.data());
  return upload<ty::ptr<ty::f32>>(p);
}

}  // namespace

// Program g reads array g through the pointer it loads from `xs` and its length from
// `sizes`, in masked blocks (a run-time loop over a ragged length), writes 2x + g through
// the pointer it loads from `ys` and the array's sum into sums[g]: loads, pointer
// arithmetic and stores, all through loaded pointers.
TEST(PointerValues, LoadsAndStoresThroughArraysOfPointersOfRaggedSizes) {
  auto k = tl::kernel("ragged_rows", [](tl::ptr<tl::ptr<tl::f32>> xs, tl::ptr<tl::ptr<tl::f32>> ys,
                                        tl::ptr<tl::i32> sizes, tl::ptr<tl::f32> sums, int BLOCK) {
    auto g = tl::program_id(0);
    tl::ptr<tl::f32> x = tl::load(xs + g);
    tl::ptr<tl::f32> y = tl::load(ys + g);
    auto n = tl::load(sizes + g);
    auto acc = tl::zeros<tl::f32>({BLOCK});
    for (auto b : tl::range(0, tl::cdiv(n, BLOCK))) {
      auto offs = b * BLOCK + tl::arange(0, BLOCK);
      auto m = offs < n;
      auto v = tl::load(x + offs, m, 0.0f);
      tl::store(y + offs, 2.0f * v + g.to<tl::f32>(), m);
      acc += v;
    }
    tl::store(sums + g, tl::sum(acc, 0));
  });
  const std::vector<int> lengths{1, 37, 64, 0, 200, 129, 3};
  const int G = int(lengths.size());
  auto in = ragged(lengths);
  std::vector<tl::buffer<ty::f32>> outs;
  for (int n : lengths) {
    // (a zero-length array still gets a buffer: every pointer is a live one)
    outs.push_back(test_device().alloc<tl::f32>(size_t(std::max(n, 1))));
    poison(outs.back());
  }
  auto xs = pointer_array(in.dev), ys = pointer_array(outs);
  auto sizes = upload<ty::i32>(std::vector<int32_t>(lengths.begin(), lengths.end()));
  auto sums = test_device().alloc<tl::f32>(size_t(G));
  poison(sums);
  k[tl::grid(G)](xs, ys, sizes, sums, 32);
  std::vector<double> want_sums(static_cast<size_t>(G));
  for (int g = 0; g < G; ++g) {
    std::vector<double> want(static_cast<size_t>(lengths[size_t(g)]));
    for (size_t i = 0; i < want.size(); ++i) {
      want[i] = 2.0 * in.host[size_t(g)][i] + g;
      want_sums[size_t(g)] += in.host[size_t(g)][i];
    }
    auto got = outs[size_t(g)].download();
    got.resize(want.size());
    EXPECT_TRUE(near(got, want, 1e-6, 1e-6)) << "array " << g;
  }
  EXPECT_TRUE(near(sums.download(), want_sums, 1e-5, 1e-5));
}

// A software-pipelined loop over an array of pointers (tl::num_stages): the pointers (and
// sizes) of later iterations are loaded ahead (the remark says so); the loads through
// them are not, since they depend on a load of their own iteration. The same sums for
// every stage count.
TEST(PointerValues, PipelinedLoopOverAnArrayOfPointers) {
  auto k = tl::kernel("pipelined_pointers", [](tl::ptr<tl::ptr<tl::f32>> xs, tl::ptr<tl::i32> sizes, tl::i32 count,
                                               tl::ptr<tl::f32> out, int STAGES) {
    auto offs = tl::arange(0, 64);
    auto acc = tl::zeros<tl::f32>({64});
    for (auto g : tl::range(0, count, 1, tl::num_stages(STAGES))) {
      tl::ptr<tl::f32> x = tl::load(xs + g);
      acc += tl::load(x + offs, offs < tl::load(sizes + g), 0.0f) * (g + 1).to<tl::f32>();
    }
    tl::store(out + offs, acc);
  });
  std::vector<int> lengths{64, 3, 17, 0, 64, 40, 1, 33, 60};
  auto in = ragged(std::vector<int>(lengths.size(), 64));
  auto xs = pointer_array(in.dev);
  auto sizes = upload<ty::i32>(std::vector<int32_t>(lengths.begin(), lengths.end()));
  std::vector<double> want(64);
  for (size_t g = 0; g < lengths.size(); ++g)
    for (int i = 0; i < lengths[g]; ++i) want[size_t(i)] += double(in.host[g][size_t(i)]) * double(g + 1);
  for (int stages : {1, 2, 3}) {
    auto out = test_device().alloc<tl::f32>(64);
    poison(out);
    k[tl::grid(1)](xs, sizes, int(lengths.size()), out, stages);
    EXPECT_TRUE(near(out.download(), want, 1e-5, 1e-5)) << "num_stages " << stages;
  }
  std::string meta = k.compile(test_device(), {}, xs, sizes, int(lengths.size()), test_device().alloc<tl::f32>(64), 3);
  EXPECT_NE(meta.find("num_stages=3: yes (2 loads into registers"), std::string::npos) << meta;
}

// A tile of pointers loaded at once with a mask and `other` (the lanes past the array's
// end take the fallback pointer), then a gather through every lane's pointer, and a 2-D
// tile of pointers [lanes, columns] made by pointer arithmetic on the loaded tile.
TEST(PointerValues, MaskedLoadOfATileOfPointersThenGathers) {
  auto k = tl::kernel("gather_rows", [](tl::ptr<tl::ptr<tl::f32>> rows, tl::ptr<tl::f32> fallback, tl::i32 count,
                                        tl::ptr<tl::f32> firsts, tl::ptr<tl::f32> out) {
    constexpr int L = 8, C = 4;
    auto lane = tl::arange(0, L);
    auto p = tl::load(rows + lane, lane < count, tl::broadcast_to(fallback, {L}));
    tl::store(firsts + lane, tl::load(p));
    auto grid = tl::expand_dims(p, 1) + tl::expand_dims(tl::arange(0, C), 0);  // [L, C] pointers
    tl::store(out + (tl::expand_dims(lane, 1) * C + tl::expand_dims(tl::arange(0, C), 0)), tl::load(grid) * 3.0f);
  });
  const int count = 5, L = 8, C = 4;
  auto in = ragged(std::vector<int>(size_t(count), C));
  auto fb = upload<ty::f32>(random_floats(C));
  auto rows = pointer_array(in.dev);
  auto firsts = test_device().alloc<tl::f32>(L);
  auto out = test_device().alloc<tl::f32>(size_t(L) * C);
  poison(firsts);
  poison(out);
  k[tl::grid(1)](rows, fb, count, firsts, out);
  auto f = fb.download();
  std::vector<double> want_first(L), want_out(size_t(L) * C);
  for (int l = 0; l < L; ++l)
    for (int c = 0; c < C; ++c) {
      double v = l < count ? in.host[size_t(l)][size_t(c)] : f[size_t(c)];
      if (c == 0) want_first[size_t(l)] = v;
      want_out[size_t(l) * C + size_t(c)] = 3.0 * v;
    }
  EXPECT_TRUE(near(firsts.download(), want_first, 0, 0));
  EXPECT_TRUE(near(out.download(), want_out, 1e-6, 0));
}

// Pointers computed in a kernel and stored into an array of pointers (a masked store
// included), read back on the host as device addresses, then followed by a second kernel.
TEST(PointerValues, StoresOfPointersAreAddressesAnotherKernelFollows) {
  auto make = tl::kernel("make_pointers", [](tl::ptr<tl::f32> base, tl::ptr<tl::i32> offsets,
                                             tl::ptr<tl::ptr<tl::f32>> out, tl::i32 n) {
    auto i = tl::arange(0, 16);
    auto m = i < n;
    tl::store(out + i, base + tl::load(offsets + i, m, 0), m);
  });
  auto follow = tl::kernel("follow_pointers", [](tl::ptr<tl::ptr<tl::f32>> ps, tl::ptr<tl::f32> out, tl::i32 n) {
    auto i = tl::arange(0, 16);
    auto m = i < n;
    tl::ptr<tl::f32> p = tl::load(ps + i, m, tl::broadcast_to(tl::ptr<tl::f32>(out), {16}));
    tl::store(out + i, tl::load(p, m, -1.0f) + 0.5f, m);
  });
  const int n = 11, len = 100;
  auto hx = random_floats(len);
  auto X = upload<ty::f32>(hx);
  auto offs = random_ints(16, 0, len - 1);
  auto O = upload<ty::i32>(offs);
  auto P = test_device().alloc<tl::ptr<tl::f32>>(16);
  poison(P);
  make[tl::grid(1)](X, O, P, n);
  auto got = P.download();
  std::vector<float*> poisoned(1);
  std::memset(static_cast<void*>(poisoned.data()), 0xAB, sizeof(float*));
  for (int i = 0; i < 16; ++i) {
    if (i < n) EXPECT_EQ(got[size_t(i)], X.data() + offs[size_t(i)]) << "pointer " << i;
    else EXPECT_EQ(got[size_t(i)], poisoned[0]) << "masked-off pointer " << i << " was written";
  }
  auto Y = test_device().alloc<tl::f32>(16);
  poison(Y);
  follow[tl::grid(1)](P, Y, n);
  auto y = Y.download();
  std::vector<double> want(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) want[size_t(i)] = hx[size_t(offs[size_t(i)])] + 0.5;
  y.resize(size_t(n));
  EXPECT_TRUE(near(y, want, 0, 0));
}

// Triton's int_to_ptr and ptr_to_int: addresses held as i64 (and u64) become pointers
// with `.to<tl::ptr<T>>()`, and pointers give their addresses with `.to<tl::i64>()`:
// the round trip is the identity, and an address is the base plus the byte offset.
TEST(PointerValues, IntegerToPointerAndBack) {
  auto k = tl::kernel("int_to_ptr", [](tl::ptr<tl::i64> addrs, tl::ptr<tl::u64> uaddrs, tl::ptr<tl::f32> x,
                                       tl::ptr<tl::f32> out, tl::ptr<tl::i64> back, tl::ptr<tl::u64> uback) {
    auto i = tl::arange(0, 32);
    auto p = tl::load(addrs + i).to<tl::ptr<tl::f32>>();
    auto q = tl::load(uaddrs + i).to<tl::ptr<tl::f32>>();
    tl::store(out + i, tl::load(p) + 10.0f * tl::load(q));
    tl::store(back + i, (x + i).to<tl::i64>());           // pointer-to-int of computed pointers
    tl::store(uback + i, p.to<tl::u64>());                // and of converted ones: the round trip
    auto s = tl::load(addrs + 3).to<tl::ptr<tl::f32>>();  // a scalar
    tl::store(out + 32, tl::load(s + 1));
  });
  auto hx = random_floats(64);
  auto X = upload<ty::f32>(hx);
  auto perm = random_ints(32, 0, 62);
  std::vector<int64_t> a(32);
  std::vector<uint64_t> u(32);
  for (int i = 0; i < 32; ++i) {
    a[size_t(i)] = int64_t(address_of(X, size_t(perm[size_t(i)])));
    u[size_t(i)] = address_of(X, size_t(31 - i));
  }
  auto A = upload<ty::i64>(a);
  auto U = upload<ty::u64>(u);
  auto out = test_device().alloc<tl::f32>(33);
  auto back = test_device().alloc<tl::i64>(32);
  auto uback = test_device().alloc<tl::u64>(32);
  poison(out);
  poison(back);
  poison(uback);
  k[tl::grid(1)](A, U, X, out, back, uback);
  std::vector<double> want(33);
  for (int i = 0; i < 32; ++i) want[size_t(i)] = double(hx[size_t(perm[size_t(i)])]) + 10.0 * double(hx[size_t(31 - i)]);
  want[32] = hx[size_t(perm[3] + 1)];
  EXPECT_TRUE(near(out.download(), want, 1e-6, 0));
  auto b = back.download();
  auto ub = uback.download();
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(uint64_t(b[size_t(i)]), address_of(X, size_t(i))) << i;
    EXPECT_EQ(ub[size_t(i)], uint64_t(a[size_t(i)])) << i;
  }
}

// A pointer converted to a pointer of another pointee keeps its address: bf16 elements
// read through a tl::ptr<tl::u16> are their bits, and the pointer-to-int of both agree.
TEST(PointerValues, PointerToPointerOfAnotherPointeeKeepsTheAddress) {
  auto k = tl::kernel("reinterpret", [](tl::ptr<tl::bf16> x, tl::ptr<tl::u16> bits, tl::ptr<tl::i64> same) {
    auto p = x + tl::arange(0, 64);
    auto q = p.to<tl::ptr<tl::u16>>();
    tl::store(bits + tl::arange(0, 64), tl::load(q));
    tl::store(same + tl::arange(0, 64), (q.to<tl::i64>() - p.to<tl::i64>()) + 7);
  });
  auto f = random_floats(64);
  std::vector<tl::bfloat16> h(64);
  for (size_t i = 0; i < 64; ++i) h[i] = tl::to_bf16(f[i]);
  auto X = upload<ty::bf16>(h);
  auto B = test_device().alloc<tl::u16>(64);
  auto S = test_device().alloc<tl::i64>(64);
  poison(B);
  poison(S);
  k[tl::grid(1)](X, B, S);
  auto b = B.download();
  auto s = S.download();
  for (size_t i = 0; i < 64; ++i) {
    EXPECT_EQ(b[i], h[i].bits) << i;
    EXPECT_EQ(s[i], 7) << i;
  }
}

// tl::where between two pointer tiles (Triton's `tl.where(c, a_ptr, b_ptr)`) picks the
// pointers lane by lane; comparisons of pointers compare addresses.
TEST(PointerValues, WhereAndComparisonsOnPointers) {
  auto k = tl::kernel("where_pointers", [](tl::ptr<tl::f32> a, tl::ptr<tl::f32> b, tl::ptr<tl::f32> out,
                                           tl::ptr<tl::i32> order) {
    auto i = tl::arange(0, 64);
    auto p = tl::where(i % 3 == 0, a + i, b + (63 - i));
    tl::store(out + i, tl::load(p));
    tl::store(order + i, tl::where((a + i < b + i) & (a + i != b + i) & (p == p), 1, 0));
  });
  auto ha = random_floats(64), hb = random_floats(64);
  auto A = upload<ty::f32>(ha), B = upload<ty::f32>(hb);
  auto O = test_device().alloc<tl::f32>(64);
  auto R = test_device().alloc<tl::i32>(64);
  poison(O);
  poison(R);
  k[tl::grid(1)](A, B, O, R);
  std::vector<double> want(64), want_order(64);
  for (int i = 0; i < 64; ++i) {
    want[size_t(i)] = i % 3 == 0 ? ha[size_t(i)] : hb[size_t(63 - i)];
    want_order[size_t(i)] = A.address() < B.address() ? 1 : 0;
  }
  EXPECT_TRUE(near(O.download(), want, 0, 0));
  EXPECT_TRUE(near(R.download(), want_order, 0, 0));
}

// An address passed as a scalar i64 argument and converted in the kernel: the launch's
// specialization on whether it is a multiple of 16 carries over to the pointer, so the
// aligned launch may read wide and the one 4 bytes off must not assume it (a different
// specialization, each right).
TEST(PointerValues, AddressArgumentsConvertedToPointersKeepTheirAlignmentFacts) {
  auto k = tl::kernel("address_argument", [](tl::i64 addr, tl::ptr<tl::f32> out) {
    auto x = addr.to<tl::ptr<tl::f32>>();
    auto i = tl::arange(0, 256);
    tl::store(out + i, tl::load(x + i) * 2.0f);
  });
  auto h = random_floats(260);
  auto X = upload<ty::f32>(h);
  for (int skip : {0, 1, 3, 4}) {
    auto out = test_device().alloc<tl::f32>(256);
    poison(out);
    k[tl::grid(1)](int64_t(address_of(X, size_t(skip))), out);
    std::vector<double> want(256);
    for (size_t i = 0; i < 256; ++i) want[i] = 2.0 * h[i + size_t(skip)];
    EXPECT_TRUE(near(out.download(), want, 0, 0)) << "address + " << skip << " elements";
  }
}

// A launch takes an array of pointers as a buffer of tl::ptr<T> (filled with data()) or
// as a buffer of u64/i64 filled with address(), as a Triton user passes a tensor of
// data_ptr()s: the same kernel gives the same result from both.
TEST(PointerValues, ArraysOfAddressesAsU64BuffersAreAcceptedForPointerArrays) {
  auto k = tl::kernel("first_of_each", [](tl::ptr<tl::ptr<tl::f32>> xs, tl::ptr<tl::f32> out) {
    auto i = tl::arange(0, 4);
    tl::store(out + i, tl::load(tl::load(xs + i) + 1));
  });
  auto in = ragged({2, 3, 4, 5});
  std::vector<uint64_t> addrs;
  for (auto& b : in.dev) addrs.push_back(b.address());
  auto U = upload<ty::u64>(addrs);
  std::vector<int64_t> saddrs(addrs.begin(), addrs.end());
  auto S = upload<ty::i64>(saddrs);
  auto P = pointer_array(in.dev);
  std::vector<double> want(4);
  for (size_t g = 0; g < 4; ++g) want[g] = in.host[g][1];
  for (int how = 0; how < 3; ++how) {
    auto out = test_device().alloc<tl::f32>(4);
    poison(out);
    if (how == 0) k[tl::grid(1)](P, out);
    if (how == 1) k[tl::grid(1)](U, out);
    if (how == 2) k[tl::grid(1)](S, out);
    EXPECT_TRUE(near(out.download(), want, 0, 0)) << "array passed as " << (how == 0 ? "ptr" : how == 1 ? "u64" : "i64");
  }
}

// An address converted to an array of pointers (`.to<tl::ptr<tl::ptr<tl::f32>>>()`):
// its loads are pointers to f32.
TEST(PointerValues, IntegerToAnArrayOfPointers) {
  auto k = tl::kernel("int_to_pointer_array", [](tl::i64 addr, tl::ptr<tl::f32> out) {
    auto pp = addr.to<tl::ptr<tl::ptr<tl::f32>>>();
    auto i = tl::arange(0, 4);
    tl::store(out + i, tl::load(tl::load(pp + i) + 2));
  });
  auto in = ragged({3, 4, 5, 6});
  auto P = pointer_array(in.dev);
  auto out = test_device().alloc<tl::f32>(4);
  poison(out);
  k[tl::grid(1)](int64_t(P.address()), out);
  std::vector<double> want(4);
  for (size_t g = 0; g < 4; ++g) want[g] = in.host[g][2];
  EXPECT_TRUE(near(out.download(), want, 0, 0));
}

// Pointers to pointers to pointers: each level's load gives the next level's pointer.
TEST(PointerValues, ThreeLevelsOfPointers) {
  auto k = tl::kernel("three_levels", [](tl::ptr<tl::ptr<tl::ptr<tl::i32>>> ppp, tl::ptr<tl::i32> out) {
    auto i = tl::arange(0, 4);
    tl::ptr<tl::ptr<tl::i32>> pp = tl::load(ppp + i);
    tl::ptr<tl::i32> p = tl::load(pp + 1);
    tl::store(out + i, tl::load(p + i));
  });
  std::vector<tl::buffer<ty::i32>> leaves;
  std::vector<int32_t*> mids_h;
  for (int j = 0; j < 8; ++j) {
    leaves.push_back(upload<ty::i32>(random_ints(4, -1000, 1000)));
    mids_h.push_back(leaves.back().data());
  }
  auto mids = upload<ty::ptr<ty::i32>>(mids_h);
  // top[i] points at mids[2i]: its element 1 is leaf 2i+1
  std::vector<int32_t**> top_h;
  for (int i = 0; i < 4; ++i) top_h.push_back(mids.data() + 2 * i);
  auto top = upload<ty::ptr<ty::ptr<ty::i32>>>(top_h);
  auto out = test_device().alloc<tl::i32>(4);
  poison(out);
  k[tl::grid(1)](top, out);
  std::vector<double> want(4);
  for (int i = 0; i < 4; ++i) want[size_t(i)] = leaves[size_t(2 * i + 1)].download()[size_t(i)];
  EXPECT_TRUE(near(out.download(), want, 0, 0));
}

// Triton's spin lock with int literals (`while atomic_cas(lock, 0, 1) == 1: pass`) and a
// mixed (literal, tile) spelling: each program takes the lock, adds to a plain
// (non-atomic) counter and releases it; the total is exact and the lock is free at the end.
TEST(PointerValues, AtomicCasTakesIntegerLiterals) {
  auto k = tl::kernel("cas_literals", [](tl::ptr<tl::i32> lock, tl::ptr<tl::i32> counter, tl::ptr<tl::i32> seen) {
    auto pid = tl::program_id(0);
    auto old = tl::atomic_cas(seen + pid, 0, pid + 1);  // literal compare value, tile value
    tl::while_([&] { return tl::atomic_cas(lock, 0, 1) == 1; }, [&] {});
    tl::store(counter, tl::load(counter) + old + 1);
    tl::atomic_xchg(lock, 0);
  });
  const int G = 24;
  auto lock = upload<ty::i32>({0});
  auto counter = upload<ty::i32>({0});
  auto seen = upload<ty::i32>(std::vector<int32_t>(G, 0));
  k[tl::grid(G)](lock, counter, seen);
  EXPECT_EQ(lock.download()[0], 0);
  EXPECT_EQ(counter.download()[0], G);  // every program added old (0) + 1 once
  auto s = seen.download();
  for (int i = 0; i < G; ++i) EXPECT_EQ(s[size_t(i)], i + 1);
}

// ---------------------------------------------------------------------------------
// Triton's tutorial 08, grouped GEMM, as Triton writes it: device arrays of the groups'
// A, B and C pointers (int64 addresses turned into pointers with .to()), of their sizes
// <M, N, K> and leading dimensions <lda, ldb, ldc>; NUM_SM programs walk the tiles of all
// groups, program p taking tiles p, p + NUM_SM, ...
//
// The tutorial walks a group's tiles with `while (tile_idx >= last_problem_end and
// tile_idx < last_problem_end + num_tiles)`: tl::while_ here. The typed variant walks
// them with a tl::range bounded by the most tiles a program can take from one group
// (cdiv(num_tiles, NUM_SM)) and the same condition as a tl::if_ around the body: the same
// tiles in the same order, a check that both loops carry tile_idx alike.
namespace tutorial08 {

constexpr int BLOCK_M = 32, BLOCK_N = 32, BLOCK_K = 16;

auto& grouped_matmul() {
  static auto k = tl::kernel(
      "grouped_matmul_kernel",
      [](tl::ptr<tl::i64> group_a_ptrs, tl::ptr<tl::i64> group_b_ptrs, tl::ptr<tl::i64> group_c_ptrs,
         tl::ptr<tl::i32> group_gemm_sizes, tl::ptr<tl::i32> g_lds, int group_size, int NUM_SM) {
        auto tile_idx = tl::program_id(0);
        tl::i32 last_problem_end = 0;
        for (auto g : tl::range(group_size)) {
          auto gm = tl::load(group_gemm_sizes + g * 3);
          auto gn = tl::load(group_gemm_sizes + g * 3 + 1);
          auto gk = tl::load(group_gemm_sizes + g * 3 + 2);
          auto num_m_tiles = tl::cdiv(gm, BLOCK_M);
          auto num_n_tiles = tl::cdiv(gn, BLOCK_N);
          auto num_tiles = num_m_tiles * num_n_tiles;
          // iterate through the tiles in the current gemm problem
          tl::while_([&] { return (tile_idx >= last_problem_end) & (tile_idx < last_problem_end + num_tiles); }, [&] {
            auto k = gk;
            auto lda = tl::load(g_lds + g * 3);
            auto ldb = tl::load(g_lds + g * 3 + 1);
            auto ldc = tl::load(g_lds + g * 3 + 2);
            auto a_ptr = tl::load(group_a_ptrs + g).to<tl::ptr<tl::f16>>();
            auto b_ptr = tl::load(group_b_ptrs + g).to<tl::ptr<tl::f16>>();
            auto c_ptr = tl::load(group_c_ptrs + g).to<tl::ptr<tl::f16>>();
            auto tile_idx_in_gemm = tile_idx - last_problem_end;
            auto tile_m_idx = tile_idx_in_gemm / num_n_tiles;
            auto tile_n_idx = tile_idx_in_gemm % num_n_tiles;

            auto offs_am = tile_m_idx * BLOCK_M + tl::arange(0, BLOCK_M);
            auto offs_bn = tile_n_idx * BLOCK_N + tl::arange(0, BLOCK_N);
            auto offs_k = tl::arange(0, BLOCK_K);
            auto a_ptrs = a_ptr + (tl::expand_dims(offs_am, 1) * lda + tl::expand_dims(offs_k, 0));
            auto b_ptrs = b_ptr + (tl::expand_dims(offs_k, 1) * ldb + tl::expand_dims(offs_bn, 0));
            auto accumulator = tl::zeros<tl::f32>({BLOCK_M, BLOCK_N});
            for (auto kk : tl::range(0, tl::cdiv(k, BLOCK_K))) {
              (void)kk;
              // assume full tile for now
              auto a = tl::load(a_ptrs);
              auto b = tl::load(b_ptrs);
              accumulator += tl::dot(a, b);
              a_ptrs += BLOCK_K;
              b_ptrs += BLOCK_K * ldb;
            }
            auto c = accumulator.to<tl::f16>();

            auto offs_cm = tile_m_idx * BLOCK_M + tl::arange(0, BLOCK_M);
            auto offs_cn = tile_n_idx * BLOCK_N + tl::arange(0, BLOCK_N);
            auto c_ptrs = c_ptr + (ldc * tl::expand_dims(offs_cm, 1) + tl::expand_dims(offs_cn, 0));
            // assumes full tile for now
            tl::store(c_ptrs, c);

            // go to the next tile by advancing NUM_SM
            tile_idx += NUM_SM;
          });
          // get ready to go to the next gemm problem
          last_problem_end = last_problem_end + num_tiles;
        }
      });
  return k;
}

// The same kernel with typed arrays of pointers (`tl::ptr<tl::ptr<tl::f16>>`), the way a
// tl user declares them: no conversions.
auto& grouped_matmul_typed() {
  static auto k = tl::kernel(
      "grouped_matmul_typed",
      [](tl::ptr<tl::ptr<tl::f16>> group_a_ptrs, tl::ptr<tl::ptr<tl::f16>> group_b_ptrs,
         tl::ptr<tl::ptr<tl::f16>> group_c_ptrs, tl::ptr<tl::i32> group_gemm_sizes, tl::ptr<tl::i32> g_lds,
         int group_size, int NUM_SM) {
        auto tile_idx = tl::program_id(0);
        tl::i32 last_problem_end = 0;
        for (auto g : tl::range(group_size)) {
          auto gm = tl::load(group_gemm_sizes + g * 3), gn = tl::load(group_gemm_sizes + g * 3 + 1);
          auto gk = tl::load(group_gemm_sizes + g * 3 + 2);
          auto num_n_tiles = tl::cdiv(gn, BLOCK_N);
          auto num_tiles = tl::cdiv(gm, BLOCK_M) * num_n_tiles;
          for (auto t : tl::range(tl::cdiv(num_tiles, NUM_SM))) {
            (void)t;
            tl::if_((tile_idx >= last_problem_end) & (tile_idx < last_problem_end + num_tiles), [&] {
              auto lda = tl::load(g_lds + g * 3), ldb = tl::load(g_lds + g * 3 + 1), ldc = tl::load(g_lds + g * 3 + 2);
              tl::ptr<tl::f16> a_ptr = tl::load(group_a_ptrs + g), b_ptr = tl::load(group_b_ptrs + g);
              tl::ptr<tl::f16> c_ptr = tl::load(group_c_ptrs + g);
              auto tile_m_idx = (tile_idx - last_problem_end) / num_n_tiles;
              auto tile_n_idx = (tile_idx - last_problem_end) % num_n_tiles;
              auto offs_am = tile_m_idx * BLOCK_M + tl::arange(0, BLOCK_M);
              auto offs_bn = tile_n_idx * BLOCK_N + tl::arange(0, BLOCK_N);
              auto offs_k = tl::arange(0, BLOCK_K);
              auto a_ptrs = a_ptr + (tl::expand_dims(offs_am, 1) * lda + tl::expand_dims(offs_k, 0));
              auto b_ptrs = b_ptr + (tl::expand_dims(offs_k, 1) * ldb + tl::expand_dims(offs_bn, 0));
              auto accumulator = tl::zeros<tl::f32>({BLOCK_M, BLOCK_N});
              for (auto kk : tl::range(0, tl::cdiv(gk, BLOCK_K))) {
                (void)kk;
                accumulator += tl::dot(tl::load(a_ptrs), tl::load(b_ptrs));
                a_ptrs += BLOCK_K;
                b_ptrs += BLOCK_K * ldb;
              }
              tl::store(c_ptr + (ldc * tl::expand_dims(offs_am, 1) + tl::expand_dims(offs_bn, 0)),
                        accumulator.to<tl::f16>());
              tile_idx += NUM_SM;
            });
          }
          last_problem_end = last_problem_end + num_tiles;
        }
      });
  return k;
}

struct Group {
  int m, n, k, lda, ldb, ldc;
  std::vector<tl::half> a, b;
  tl::buffer<ty::f16> A, B, C;
};

std::vector<tl::half> random_halves(size_t n) {
  auto f = random_floats(n, -1.0f, 1.0f);
  std::vector<tl::half> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = tl::to_f16(f[i]);
  return h;
}

// Ragged groups: every size a multiple of the blocks (the tutorial assumes full tiles),
// each group its own, leading dimensions wider than the rows (padding that must stay
// untouched).
std::vector<Group> make_groups() {
  const int sizes[][3] = {{64, 96, 48}, {32, 32, 16}, {96, 64, 80}, {128, 32, 32}, {32, 128, 64}};
  std::vector<Group> gs;
  for (auto& s : sizes) {
    Group g{s[0], s[1], s[2], s[2] + 8, s[1] + 16, s[1] + 8, {}, {}, {}, {}, {}};
    g.a = random_halves(size_t(g.m) * g.lda);
    g.b = random_halves(size_t(g.k) * g.ldb);
    g.A = upload<ty::f16>(g.a);
    g.B = upload<ty::f16>(g.b);
    g.C = test_device().alloc<tl::f16>(size_t(g.m) * g.ldc);
    gs.push_back(std::move(g));
  }
  return gs;
}

// C = A.B in double; the bound is f16's rounding of the result plus K f32 roundings of
// partial sums of |a||b|. The padding columns of C keep their poison.
void check(const Group& g, int index, const std::string& what) {
  auto c = g.C.download();
  tl::half poisoned;
  std::memset(&poisoned, 0xAB, sizeof(poisoned));
  int bad = 0;
  for (int i = 0; i < g.m; ++i)
    for (int j = 0; j < g.ldc; ++j) {
      tl::half got = c[size_t(i) * g.ldc + j];
      if (j >= g.n) {
        if (got.bits != poisoned.bits && bad++ < 5) ADD_FAILURE() << what << " group " << index << ": padding written";
        continue;
      }
      double want = 0, mag = 0;
      for (int k = 0; k < g.k; ++k) {
        double p = double(tl::to_float(g.a[size_t(i) * g.lda + k])) * double(tl::to_float(g.b[size_t(k) * g.ldb + j]));
        want += p, mag += std::abs(p);
      }
      double bound = std::abs(want) * 0x1p-11 + mag * g.k * 0x1p-23 + 0x1p-24;
      if (!(std::abs(double(tl::to_float(got)) - want) <= bound) && bad++ < 5)
        ADD_FAILURE() << what << " group " << index << ": C[" << i << "][" << j << "] = " << tl::to_float(got)
                      << ", want " << want << " +- " << bound;
    }
  EXPECT_EQ(bad, 0) << what << " group " << index;
}

}  // namespace tutorial08

TEST(PointerValues, Tutorial08GroupedGemmOnDeviceArraysOfPointers) {
  using namespace tutorial08;
  auto gs = make_groups();
  const int G = int(gs.size());
  std::vector<int64_t> a_ptrs, b_ptrs, c_ptrs;
  std::vector<int32_t> sizes, lds;
  for (auto& g : gs) {
    a_ptrs.push_back(int64_t(g.A.address()));
    b_ptrs.push_back(int64_t(g.B.address()));
    c_ptrs.push_back(int64_t(g.C.address()));
    sizes.insert(sizes.end(), {g.m, g.n, g.k});
    lds.insert(lds.end(), {g.lda, g.ldb, g.ldc});
  }
  auto d_a = upload<ty::i64>(a_ptrs), d_b = upload<ty::i64>(b_ptrs), d_c = upload<ty::i64>(c_ptrs);
  auto d_sizes = upload<ty::i32>(sizes), d_lds = upload<ty::i32>(lds);
  // NUM_SM programs: fewer than the tiles (each program takes several, across groups), and
  // more than one group's tiles in some groups and fewer in others.
  for (int num_sm : {3, 7}) {
    for (auto& g : gs) poison(g.C);
    grouped_matmul()[tl::grid(num_sm)](d_a, d_b, d_c, d_sizes, d_lds, G, num_sm);
    for (int i = 0; i < G; ++i) check(gs[size_t(i)], i, fmt::format("int64 addresses, NUM_SM {}", num_sm));
  }
  std::vector<tl::half*> pa, pb, pc;
  for (auto& g : gs) pa.push_back(g.A.data()), pb.push_back(g.B.data()), pc.push_back(g.C.data());
  auto t_a = upload<ty::ptr<ty::f16>>(pa), t_b = upload<ty::ptr<ty::f16>>(pb), t_c = upload<ty::ptr<ty::f16>>(pc);
  for (auto& g : gs) poison(g.C);
  grouped_matmul_typed()[tl::grid(4)](t_a, t_b, t_c, d_sizes, d_lds, G, 4);
  for (int i = 0; i < G; ++i) check(gs[size_t(i)], i, "typed arrays of pointers");
}

// The same kernels on every device this machine has: the CPU always, a GPU when there is
// one (device pointers in device arrays).
TEST(PointerValues, ArraysOfPointersOnEveryDevice) {
  std::vector<tl::device> devs{tl::cpu_device()};
  for (auto make : {+[] { return tl::cuda_device(); }, +[] { return tl::hip_device(); }}) {
    try {
      devs.push_back(make());
    } catch (const tl::device_error&) {
    }
  }
  if (devs.size() == 1) GTEST_SKIP() << "no GPU here: the CPU runs in the other tests";
  auto k = tl::kernel("scale_each", [](tl::ptr<tl::ptr<tl::f32>> xs, tl::ptr<tl::i32> sizes) {
    auto g = tl::program_id(0);
    auto n = tl::load(sizes + g);
    auto x = tl::load(xs + g);
    auto offs = tl::arange(0, 64);
    tl::store(x + offs, tl::load(x + offs, offs < n, 0.0f) * 2.0f + 1.0f, offs < n);
  });
  for (auto& dev : devs) {
    const std::vector<int> lengths{64, 5, 33};
    std::vector<std::vector<float>> host;
    std::vector<tl::buffer<ty::f32>> bufs;
    std::vector<float*> ptrs;
    for (int n : lengths) {
      host.push_back(random_floats(size_t(n)));
      bufs.push_back(dev.alloc<tl::f32>(size_t(n)));
      bufs.back().upload(host.back());
      ptrs.push_back(bufs.back().data());
    }
    auto P = dev.alloc<tl::ptr<tl::f32>>(ptrs.size());
    P.upload(ptrs);
    auto S = dev.alloc<tl::i32>(lengths.size());
    S.upload(std::vector<int32_t>(lengths.begin(), lengths.end()));
    k[tl::grid(int(lengths.size()))].on(dev)(P, S);
    for (size_t g = 0; g < lengths.size(); ++g) {
      std::vector<double> want(host[g].size());
      for (size_t i = 0; i < want.size(); ++i) want[i] = host[g][i] * 2.0 + 1.0;
      EXPECT_TRUE(near(bufs[g].download(), want, 1e-6, 0)) << dev.name() << " array " << g;
    }
  }
}
