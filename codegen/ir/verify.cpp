// The IR verifier: the structural and type rules that every pass and lowering assumes.
// A failure here is a tl bug (the tracer checks the user's program first), so the
// message names the op and the user's line that produced it.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <unordered_set>

#include "codegen/ir/ir.hpp"
#include "codegen/ir/op_properties.hpp"
#include "tl/error.hpp"

namespace tl::ir {
namespace {

class Verifier {
 public:
  void function(const Function& f) {
    for (auto& a : f.body.args) defined_.insert(a.get());
    block(f.body, /*needs_yield=*/false);
  }

 private:
  [[noreturn]] void fail(const Operation& op, const std::string& what) {
    throw compile_error(fmt::format("tile IR verifier: '{}': {}", op_name(op.op), what), op.loc.file, op.loc.line);
  }

  void expect(bool ok, const Operation& op, const char* what) {
    if (!ok) fail(op, what);
  }

  // A TMA copy's operands, loads and stores alike: a shared buffer, its stage, the tensor
  // map, then `rank` coordinates, one i32 a dim of the buffer's tile.
  void expect_tensor_map_operands(const Operation& op, size_t rank) {
    const Type& buf = op.operands[0]->type;
    const Type i32{DType::i32, DType::i32, {}};
    expect(buf.is_shared(), op, "operand 0 must be a shared buffer");
    expect(op.operands[1]->type == i32, op, "the stage must be a scalar i32");
    expect(op.operands[2]->type.is_ptr() && op.operands[2]->type.is_scalar(), op, "the map must be a scalar pointer");
    expect(rank == buf.shape.size(), op, "one coordinate a dim of the buffer's tile");
    for (size_t i = 3; i < 3 + rank && i < op.operands.size(); ++i)
      expect(op.operands[i]->type == i32, op, "a coordinate must be a scalar i32");
  }

  void block(const Block& b, bool needs_yield) {
    // What a region defines is visible only inside it (a while's body cannot read its
    // condition region's values, a branch's else cannot read its then): forgotten on exit.
    struct Scope {
      std::unordered_set<const Value*>& defined;
      const Block& b;
      ~Scope() {
        for (auto& a : b.args) defined.erase(a.get());
        for (auto& op : b.ops)
          for (auto& r : op->results) defined.erase(r.get());
      }
    } scope{defined_, b};
    for (size_t k = 0; k < b.args.size(); ++k) {
      const Value* a = b.args[k].get();
      if ((a->owner != &b || a->index != int(k)) && b.parent) fail(*b.parent, "block argument links are wrong");
      defined_.insert(a);
    }
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const Operation& op = *b.ops[i];
      expect(op.parent == &b, op, "parent link is wrong");
      if (op.op == Op::yield) expect(i + 1 == b.ops.size(), op, "yield must end its region");
      for (Value* v : op.operands) expect(v && defined_.count(v), op, "operand used before definition");
      for (size_t k = 0; k < op.results.size(); ++k)
        expect(op.results[k]->def == &op && op.results[k]->index == int(k), op, "result links are wrong");
      for (auto& r : op.regions) {
        expect(r->parent == &op, op, "region parent link is wrong");
        block(*r, true);
      }
      check_memory_types(op);
      if (op.shared) check_shared_encoding(op, *op.shared);
      if (op.smem) check_shared_slice(op, *op.smem);
      check(op);
      for (auto& r : op.results) defined_.insert(r.get());
    }
    if (needs_yield && !b.terminator() && b.parent)
      fail(*b.parent, "region does not end in yield");
  }

  static bool same_shape(const Value* a, const Value* b) { return a->type.shape == b->type.shape; }

  // A reduce or scan with a combine region (tl::reduce / tl::associative_scan): N operands
  // of one shape, N results of their dtypes, a region of 2N scalar arguments (the left
  // group's N, then the right group's) that yields N scalars, and nothing in it but pure
  // elementwise work, which the targets inline at every combining step.
  void check_combine(const Operation& op) {
    const size_t n = op.operands.size();
    expect(n >= 1 && op.results.size() == n && op.regions.size() == 1, op,
           "a combine reduction or scan has N operands, N results and one region");
    const Type& t0 = op.operands[0]->type;
    expect(op.i0 >= 0 && op.i0 < t0.rank(), op, "reduction axis out of range");
    std::vector<int> rs = t0.shape;
    if (op.op == Op::reduce && !rs.empty()) rs.erase(rs.begin() + op.i0);
    const Block& r = *op.regions[0];
    expect(r.args.size() == 2 * n, op, "a combine region takes 2N arguments");
    for (size_t i = 0; i < n; ++i) {
      const DType d = op.operands[i]->type.dtype;
      expect(op.operands[i]->type.shape == t0.shape, op, "a combine's operands have one shape");
      expect(op.results[i]->type == Type{d, d, rs}, op, "a combine's result i has operand i's dtype and the reduced shape");
      expect(r.args[i]->type == Type{d, d, {}} && r.args[n + i]->type == Type{d, d, {}}, op,
             "a combine region's arguments are scalars of the operands' dtypes");
    }
    const Operation* y = r.terminator();
    expect(y && y->operands.size() == n, op, "a combine region yields one scalar per operand");
    for (size_t i = 0; i < n; ++i)
      expect(y->operands[i]->type == r.args[i]->type, op, "a combine region yields scalars of the operands' dtypes");
    for (auto& o : r.ops) {
      const bool ok = o->op == Op::yield || o->op == Op::constant ||
                      (has_trait(o->op, kPure) && has_trait(o->op, kElementwise) && o->regions.empty());
      expect(ok, *o, "a combine region holds only pure elementwise operations");
      for (auto& res : o->results) expect(res->type.is_scalar(), *o, "a combine region computes scalars");
    }
  }

  static bool power_of_two(int d) { return d > 0 && (d & (d - 1)) == 0; }

  // A shared encoding (a conversion's exchange, a buffer's stages): its order names every
  // dim of the tile once, and a padded one (Triton's PaddedSharedEncoding) pads
  // power-of-two intervals (ascending, within the tile) of whole units by whole units,
  // with no swizzle or row split, so that the lowering's offsets stay aligned to every
  // access it issues and a register's part of the offset stays an added constant.
  void check_shared_encoding(const Operation& op, const SharedEncoding& e) {
    const Value* v = op.results.empty() ? nullptr : op.result();
    if (!v) return;
    const std::vector<int>& shape = v->type.shape;
    std::vector<int> order = e.order;
    std::sort(order.begin(), order.end());
    bool permutation = order.size() == shape.size();
    for (size_t i = 0; permutation && i < order.size(); ++i) permutation = order[i] == int(i);
    expect(permutation, op, "a shared encoding's order names every dim of the tile once");
    expect(power_of_two(e.vec), op, "a shared encoding's vec is a power of two");
    if (e.padding.empty()) return;
    int64_t numel = 1;
    for (int d : shape) numel *= d;
    int last = 0;
    for (auto [interval, amount] : e.padding) {
      expect(amount > 0 && power_of_two(interval) && interval > last && interval < numel, op,
             "a padded shared encoding pads power-of-two intervals, ascending and smaller than the tile, by positive "
             "amounts");
      expect(amount % e.vec == 0 && interval % e.vec == 0, op,
             "a padded shared encoding's intervals and paddings are whole units (multiples of vec)");
      last = interval;
    }
    expect(e.row == 0 && std::all_of(e.swizzle.begin(), e.swizzle.end(), [](uint32_t x) { return x == 0; }), op,
           "a padded shared encoding has no swizzle and no row split");
  }

  // allocate_shared_memory's slices: 16-byte aligned (the widest shared access), a
  // buffer's the bytes of all its stages.
  void check_shared_slice(const Operation& op, const Operation::SharedSlice& s) {
    expect(s.offset >= 0 && s.offset % 16 == 0 && s.bytes > 0, op,
           "a shared-memory slice starts on 16 bytes and has some");
    if (op.op == Op::shared_alloc) {
      const Type& t = op.result()->type;
      expect(s.bytes == t.numel() * t.stages * byte_width(t.dtype), op, "a buffer's slice holds all its stages");
    }
  }

  // Shared buffers: a power-of-two tile shape, at least one stage, a loadable element.
  // shared_alloc defines one, loops and branches pass one through, and shared_load /
  // shared_store (operand 0) read and write one; no other op may see one.
  // tl::dot_scaled (docs/ir.md): a [M, K] and b [K, N] in their formats' dtypes (f4e2m1
  // two a byte along K: a [M, K / 2], b [K / 2, N]), f32 accumulator, e8m0 scales [M, K /
  // 32] and [N, K / 32].
  void verify_scaled_dot(const Operation& op) {
    expect(op.results.size() == 1, op, "dot_scaled has one result");
    const Type &a = op.operands[0]->type, &b = op.operands[1]->type, &c = op.operands[2]->type;
    const Type &sa = op.operands[3]->type, &sb = op.operands[4]->type;
    bool ranks = a.rank() == 2 && b.rank() == 2 && c.rank() == 2 && sa.rank() == 2 && sb.rank() == 2;
    expect(ranks, op, "dot_scaled operands and scales are 2-D tiles");
    if (!ranks || op.results.size() != 1) return;
    auto format = [](DType d) {
      return d == DType::f4e2m1 || d == DType::f8e4m3fn || d == DType::f8e5m2 || d == DType::bf16;
    };
    expect(format(a.dtype) && format(b.dtype), op, "dot_scaled operands are f4e2m1, f8e4m3fn, f8e5m2 or bf16");
    const int K = a.shape[1] * (a.dtype == DType::f4e2m1 ? 2 : 1);
    const int Kb = b.shape[0] * (b.dtype == DType::f4e2m1 ? 2 : 1);
    expect(K == Kb && K % 32 == 0, op, "dot_scaled operands agree on K, a multiple of 32");
    expect(c.dtype == DType::f32 && c.shape == std::vector<int>{a.shape[0], b.shape[1]} && op.result()->type == c,
           op, "dot_scaled accumulates [M, N] in f32, its result the accumulator's type");
    expect(sa.dtype == DType::e8m0 && sb.dtype == DType::e8m0 && sa.shape == std::vector<int>{a.shape[0], K / 32} &&
               sb.shape == std::vector<int>{b.shape[1], K / 32},
           op, "dot_scaled scales are e8m0 [M, K / 32] and [N, K / 32]");
  }

  void check_memory_types(const Operation& op) {
    auto check_type = [&](const Type& t) {
      if (!t.is_shared()) return expect(t.stages == 0, op, "a register value has a stage count");
      expect(!t.shape.empty() && t.stages >= 1 && !t.is_ptr(), op, "a shared buffer needs a tile shape and stages");
      for (int d : t.shape) expect(power_of_two(d), op, "a shared buffer's tile dims must be powers of two");
      expect(op.op == Op::for_ || op.op == Op::if_ || op.op == Op::while_ || op.op == Op::yield || op.op == Op::shared_alloc ||
                 op.op == Op::shared_load || op.op == Op::shared_store ||
                 op.op == Op::global_load_to_shared || op.op == Op::tensor_map_load || op.op == Op::mbarrier ||
                 op.op == Op::tensor_map_store,
             op, "only shared_load, shared_store, global_load_to_shared, tensor_map_load, tensor_map_store and "
                 "mbarrier read or write a shared buffer");
    };
    for (const Value* v : op.operands) check_type(v->type);
    for (auto& r : op.results) check_type(r->type);
  }

  void check(const Operation& op) {
    auto nops = op.operands.size();
    switch (op.op) {
      case Op::add: case Op::sub: case Op::mul: case Op::div: case Op::rem: case Op::min:
      case Op::max: case Op::band: case Op::bor: case Op::bxor: case Op::shl: case Op::shr:
        expect(nops == 2 && op.results.size() == 1, op, "binary op needs 2 operands, 1 result");
        expect(op.operands[0]->type == op.operands[1]->type && op.operands[0]->type == op.result()->type, op,
               "binary operands and result must have one type");
        break;
      case Op::neg: case Op::bnot: case Op::exp: case Op::exp2: case Op::log: case Op::log2:
      case Op::sqrt: case Op::rsqrt: case Op::abs: case Op::sin: case Op::cos: case Op::erf:
      case Op::floor: case Op::ceil:
        expect(nops == 1 && op.operands[0]->type == op.result()->type, op, "unary op type mismatch");
        break;
      case Op::fma:
        expect(nops == 3 && op.operands[0]->type == op.result()->type &&
                   op.operands[1]->type == op.result()->type && op.operands[2]->type == op.result()->type,
               op, "fma operands must share the result type");
        break;
      case Op::hint: {
        expect(nops == 1 && op.results.size() == 1 && op.operands[0]->type == op.result()->type, op,
               "hint: one operand, its result of the same type");
        const Type& t = op.operands[0]->type;
        expect(t.is_ptr() || (is_int(t.dtype) && !is_float(t.dtype)), op, "hint: an integer or pointer value");
        expect(op.i0 >= 0 && op.i0 <= int64_t(HintKind::max_constancy), op, "hint: the kind is a HintKind");
        expect(op.ints.size() == size_t(std::max(1, t.rank())), op, "hint: one value per dimension (one for a scalar)");
        for (int v : op.ints) expect(v > 0, op, "hint: the values are positive");
        break;
      }
      case Op::assume:
        expect(nops == 1 && op.results.empty() && op.operands[0]->type.dtype == DType::i1 &&
                   op.operands[0]->type.is_scalar(),
               op, "assume: one scalar i1 operand, no result");
        break;
      case Op::cmp:
        expect(nops == 2 && op.operands[0]->type == op.operands[1]->type, op, "cmp operands differ");
        expect(op.result()->type.dtype == DType::i1 && same_shape(op.result(), op.operands[0]), op,
               "cmp result must be i1 of the operand shape");
        break;
      case Op::select:
        expect(nops == 3 && op.operands[0]->type.dtype == DType::i1, op, "select condition must be i1");
        expect(same_shape(op.operands[0], op.result()) && op.operands[1]->type == op.result()->type &&
                   op.operands[2]->type == op.result()->type, op, "select operands must match");
        break;
      case Op::cast: case Op::bitcast:
        expect(nops == 1 && same_shape(op.operands[0], op.result()), op, "cast changes shape");
        if (op.op == Op::bitcast)
          expect(bit_width(op.operands[0]->type.dtype) == bit_width(op.result()->type.dtype), op,
                 "bitcast between different widths");
        // int-to-pointer and pointer-to-int: addresses are 64-bit integers on every target
        if (op.operands[0]->type.is_ptr() || op.result()->type.is_ptr())
          expect(op.op == Op::cast && (op.operands[0]->type.is_ptr() || bit_width(op.operands[0]->type.dtype) == 64) &&
                     (op.result()->type.is_ptr() || bit_width(op.result()->type.dtype) == 64) &&
                     !is_float(op.operands[0]->type.dtype) && !is_float(op.result()->type.dtype),
                 op, "a pointer casts only to and from a 64-bit integer");
        break;
      case Op::addptr:
        expect(nops == 2 && op.operands[0]->type.is_ptr() && is_int(op.operands[1]->type.dtype), op,
               "addptr takes a pointer and an integer offset");
        expect(same_shape(op.operands[0], op.operands[1]) && op.result()->type == op.operands[0]->type, op,
               "addptr operands must share a shape");
        break;
      case Op::splat:
        expect(nops == 1 && op.operands[0]->type.is_scalar(), op, "splat takes a scalar");
        break;
      case Op::broadcast: {
        expect(nops == 1, op, "broadcast takes one operand");
        auto& s = op.operands[0]->type.shape;
        auto& d = op.result()->type.shape;
        expect(s.size() == d.size(), op, "broadcast keeps the rank");
        for (size_t i = 0; i < s.size(); ++i) expect(s[i] == d[i] || s[i] == 1, op, "broadcast of a non-1 dim");
        break;
      }
      case Op::reshape: case Op::expand_dims: case Op::trans:
        expect(nops == 1 && op.operands[0]->type.numel() == op.result()->type.numel(), op,
               "reshape changes the element count");
        break;
      case Op::load:
        expect(nops >= 1 && nops <= 3 && op.operands[0]->type.is_ptr(), op, "load takes a pointer");
        expect(op.result()->type.scalar() == op.operands[0]->type.pointee_type(), op, "load result is the pointee");
        for (size_t i = 1; i < nops; ++i) expect(same_shape(op.operands[i], op.operands[0]), op, "load mask/other shape");
        expect(op.i0 == 0 || (op.i0 == kBufferAccess && buffer_operands(op).base), op,
               "a buffer load's pointer is addptr(splat(scalar base), i32 offsets)");
        expect(access_error(access_flags(op), true).empty() && (op.i1 & ~int64_t(0x7f)) == 0, op,
               "a load's access (i1) is a load's cache modifier, an eviction policy or volatile alone");
        break;
      case Op::store:
        expect(nops >= 2 && nops <= 3 && op.operands[0]->type.is_ptr(), op, "store takes a pointer");
        expect(nops >= 2 && op.operands[1]->type.scalar() == op.operands[0]->type.pointee_type(), op,
               "store value is the pointee");
        for (size_t i = 1; i < nops; ++i) expect(same_shape(op.operands[i], op.operands[0]), op, "store value/mask shape");
        expect(op.i0 == 0 || (op.i0 == kBufferAccess && buffer_operands(op).base), op,
               "a buffer store's pointer is addptr(splat(scalar base), i32 offsets)");
        expect(access_error(access_flags(op), false).empty() && (op.i1 & ~int64_t(0x7f)) == 0, op,
               "a store's access (i1) is a store's cache modifier, an eviction policy or volatile alone");
        break;
      case Op::inline_asm_elementwise: {
        expect(nops >= 1 && !op.results.empty(), op, "inline_asm_elementwise takes arguments and gives results");
        expect(op.i0 >= 1 && op.i0 <= 16 && (op.i0 & (op.i0 - 1)) == 0, op, "pack (i0) is a power of two up to 16");
        expect(op.i1 == 0 || op.i1 == 1, op, "i1 is 1 (pure) or 0");
        expect(op.str.find('\n') != std::string::npos, op, "str is the constraints, a newline, then the asm");
        for (const Value* o : op.operands) expect(o->type.shape == op.result()->type.shape, op, "arguments have the results' shape");
        for (const auto& r : op.results) {
          expect(r->type.shape == op.result()->type.shape, op, "every result has one shape");
          expect(r->type.dtype != DType::i1 && !r->type.is_ptr(), op, "results are integers or floats");
        }
        expect(op.result()->type.numel() % op.i0 == 0, op, "pack divides the element count");
        break;
      }
      case Op::barrier:
        expect(nops == 0 && op.results.empty(), op, "barrier takes no operands and has no results");
        break;
      case Op::gdc_wait: case Op::gdc_launch_dependents:
        expect(nops == 0 && op.results.empty(), op, "gdc_wait / gdc_launch_dependents take no operands and have no results");
        break;
      case Op::shared_alloc:
        expect(nops == 0 && op.results.size() == 1 && op.result()->type.is_shared(), op,
               "shared_alloc takes no operands and has one shared-buffer result");
        break;
      case Op::shared_load: case Op::shared_store: {
        bool load = op.op == Op::shared_load;
        expect(nops == (load ? 2u : 3u) && op.results.size() == (load ? 1u : 0u), op,
               load ? "shared_load takes a buffer and a stage, one result" : "shared_store takes a buffer, a stage and a value");
        const Type& buf = op.operands[0]->type;
        expect(buf.is_shared(), op, "operand 0 must be a shared buffer");
        expect(op.operands[1]->type == Type{DType::i32, DType::i32, {}}, op, "the stage must be a scalar i32");
        const Type& tile = load ? op.result()->type : op.operands[2]->type;
        expect(!tile.is_shared() && tile.dtype == buf.dtype && tile.shape == buf.shape, op,
               "the tile must have the buffer's element type and tile shape");
        expect(op.i0 == 0 || (load && op.i0 == 1), op, "only a shared_load may be relaxed (i0 = 1)");
        break;
      }
      case Op::global_load_to_shared: {
        expect(nops >= 3 && nops <= 5 && op.results.empty(), op,
               "global_load_to_shared takes a buffer, a stage, pointers [, mask [, other]] and has no result");
        if (nops < 3) break;
        const Type& buf = op.operands[0]->type;
        const Type& p = op.operands[2]->type;
        expect(buf.is_shared(), op, "operand 0 must be a shared buffer");
        expect(op.operands[1]->type == Type{DType::i32, DType::i32, {}}, op, "the stage must be a scalar i32");
        expect(p.is_ptr() && p.pointee == buf.dtype && p.shape == buf.shape, op,
               "the pointers must point to the buffer's element type, one per element of its tile");
        if (nops >= 4) expect(op.operands[3]->type.dtype == DType::i1 && same_shape(op.operands[3], op.operands[2]), op,
                              "the mask must be an i1 tile of the pointers' shape");
        if (nops == 5) expect(op.operands[4]->type.dtype == buf.dtype && same_shape(op.operands[4], op.operands[2]), op,
                              "other must be a tile of the buffer's element type and the pointers' shape");
        expect(op.i1 == 0 || op.i1 == kCompilerCopy || (op.i1 == kBufferAccess && buffer_operands(op).base), op,
               "a buffer copy's pointers must be addptr(splat(base), i32 offsets)");
        // (plan_copies: the chunk one lane moves, a power of two of 4 bytes or more, in
        // the copy layout the op records; or none, for a compiler copy it loads and stores)
        if (op.copy && op.copy->chunk_bytes == 0)
          expect(op.i1 == kCompilerCopy && !op.copy->through_resource, op,
                 "only a compiler copy may be loaded and stored instead (chunk 0)");
        else if (op.copy)
          expect(op.layout && op.copy->chunk_bytes >= 4 && (op.copy->chunk_bytes & (op.copy->chunk_bytes - 1)) == 0 &&
                     (!op.copy->through_resource || op.i1 == kCompilerCopy),
                 op, "a planned copy has a layout, a power-of-two chunk of 4 bytes or more, and only a compiler copy "
                     "goes through a resource it makes");
        break;
      }
      case Op::tensor_map_load: {
        expect(nops >= 4 && op.results.empty(), op,
               "tensor_map_load takes a buffer, a stage, a tensor map and coordinates and has no result");
        if (nops < 4) break;
        const Type& buf = op.operands[0]->type;
        const bool issue = op.i1 == kTensorMapIssue;
        const size_t rank = nops - 3 - (issue ? 2 : 0);
        expect(op.i1 == 0 || issue, op, "tensor_map_load's i1 is 0 or kTensorMapIssue");
        expect_tensor_map_operands(op, rank);
        if (issue) {
          const Type& bars = op.operands[nops - 2]->type;
          expect(bars.is_shared() && bars.dtype == DType::i64 && bars.numel() == 1 && bars.stages == buf.stages, op,
                 "an issued copy's mbarriers are an i64 [1] buffer of as many stages as its buffer");
          expect(op.operands[nops - 1]->type == Type{DType::i1, DType::i1, {}}, op,
                 "an issued copy's predicate must be a scalar i1");
        }
        break;
      }
      case Op::tensor_map_store: {
        expect(nops >= 4 && op.results.empty(), op,
               "tensor_map_store takes a buffer, a stage, a tensor map and coordinates and has no result");
        if (nops < 4) break;
        expect_tensor_map_operands(op, nops - 3);
        break;
      }
      case Op::mbarrier: {
        const bool wait = op.i0 == kMbarrierWait;
        expect(op.results.empty() && (op.i0 == kMbarrierInit || wait || op.i0 == kMbarrierInval) &&
                   nops == (wait ? 3u : 1u),
               op, "mbarrier: init or inval of the mbarriers, or a wait of (mbarriers, stage, phase); no result");
        if (nops < 1) break;
        const Type& bars = op.operands[0]->type;
        expect(bars.is_shared() && bars.dtype == DType::i64 && bars.numel() == 1, op,
               "the mbarriers are an i64 [1] shared buffer, one stage an mbarrier");
        expect(op.i0 != kMbarrierInit || op.i1 >= 1, op, "an mbarrier expects at least one arrival a phase");
        const Type i32{DType::i32, DType::i32, {}};
        for (size_t i = 1; i < nops; ++i) expect(op.operands[i]->type == i32, op, "the stage and phase are scalar i32");
        break;
      }
      case Op::async_wait:
        expect(nops == 0 && op.results.empty() && op.i0 >= 0 &&
                   (op.i1 == 0 || op.i1 == kWaitCountsCopies || op.i1 == kWaitCountsLoads),
               op,
               "async_wait takes no operands, has no result, a non-negative count and counts loads or copies");
        break;
      case Op::dot: {
        if (nops == 5) {
          verify_scaled_dot(op);
          break;
        }
        expect(nops == 3 && op.results.size() == 1, op, "dot takes a, b and the accumulator, one result");
        if (nops != 3) break;
        const Type &a = op.operands[0]->type, &b = op.operands[1]->type, &c = op.operands[2]->type;
        expect(a.rank() == 2 && b.rank() == 2 && c.rank() == 2, op, "dot operands are 2-D tiles");
        if (a.rank() != 2 || b.rank() != 2 || c.rank() != 2) break;
        expect(a.shape[1] == b.shape[0] && c.shape[0] == a.shape[0] && c.shape[1] == b.shape[1], op,
               "dot shapes: a [M, K], b [K, N], accumulator [M, N]");
        expect(op.result()->type == c, op, "dot result has the accumulator's type");
        expect(c.dtype == (a.dtype == DType::i8 ? DType::i32 : DType::f32), op,
               "dot accumulates i8 in i32 and floats in f32");
        break;
      }
      case Op::dot_wait:
        expect(nops == 1 && op.results.size() == 1 && op.result()->type == op.operands[0]->type && op.i0 >= 0, op,
               "dot_wait takes one dot result and gives it back, same type, with a non-negative pending count");
        break;
      case Op::fence_async_shared:
        expect(nops == 0 && op.results.empty(), op, "fence_async_shared takes no operands and has no result");
        break;
      case Op::convert_layout:
        expect(nops == 1 && op.results.size() == 1 && op.result()->type == op.operands[0]->type, op,
               "convert_layout takes one tile and gives it back, same type");
        expect(op.result()->layout.has_value(), op, "convert_layout's result has no layout");
        break;
      case Op::reduce: case Op::scan:
        if (!op.regions.empty()) {
          check_combine(op);
          break;
        }
        expect(nops == 1 && op.i0 >= 0 && op.i0 < op.operands[0]->type.rank(), op, "reduction axis out of range");
        break;
      case Op::join: {
        expect(nops == 2 && op.operands[0]->type == op.operands[1]->type, op, "join takes two tiles of one type");
        std::vector<int> s = op.operands[0]->type.shape;
        s.push_back(2);
        expect(!op.operands[0]->type.is_scalar() && op.result()->type == op.operands[0]->type.with_shape(s), op,
               "join's result is its operands' shape with a last dim of 2");
        break;
      }
      case Op::split: {
        expect(nops == 1 && (op.i0 == 0 || op.i0 == 1), op, "split takes one tile and a half, 0 or 1");
        std::vector<int> s = op.operands[0]->type.shape;
        bool two = !s.empty() && s.back() == 2;
        if (two) s.pop_back();
        expect(two && !s.empty() && op.result()->type == op.operands[0]->type.with_shape(s), op,
               "split takes a last dim of 2 and drops it");
        break;
      }
      case Op::cat: {
        expect(nops == 2 && op.operands[0]->type == op.operands[1]->type && !op.operands[0]->type.is_scalar(), op,
               "cat takes two tiles of one type");
        std::vector<int> s = op.operands[0]->type.shape;
        if (!s.empty()) s[0] *= 2;
        expect(op.result()->type == op.operands[0]->type.with_shape(s), op, "cat doubles dim 0");
        break;
      }
      case Op::gather: {
        bool ok = nops == 2 && is_int(op.operands[1]->type.dtype) && op.i0 >= 0 &&
                  op.i0 < op.operands[0]->type.rank() && op.operands[1]->type.rank() == op.operands[0]->type.rank() &&
                  op.result()->type == op.operands[0]->type.with_shape(op.operands[1]->type.shape);
        for (int d = 0; ok && d < op.operands[0]->type.rank(); ++d)
          ok = d == op.i0 || op.operands[0]->type.shape[size_t(d)] == op.operands[1]->type.shape[size_t(d)];
        expect(ok, op, "gather takes src and an integer index of its rank, equal dims but the axis; the result has index's shape");
        break;
      }
      case Op::flip:
        expect(nops == 1 && op.result()->type == op.operands[0]->type && op.i0 >= 0 && op.i0 < op.result()->type.rank(),
               op, "flip keeps its operand's type; its dim must be in range");
        break;
      case Op::sort: {
        bool ok = (nops == 1 || nops == 2) && op.results.size() == nops && op.i0 >= 0 &&
                  op.i0 < op.operands[0]->type.rank() && (op.i1 == 0 || op.i1 == 1);
        const size_t d = size_t(op.i0);
        // The results keep the first k along the dim (k = n: the whole sort); a top-k
        // (k < n) carries the payload, which makes the order total.
        const int n = ok ? op.operands[0]->type.shape[d] : 0, k = ok ? op.result()->type.shape[d] : 0;
        for (size_t r = 0; ok && r < nops; ++r) {
          ir::Type want = op.operands[r]->type;
          want.shape[d] = k;
          ok = op.result(int(r))->type == want;
        }
        ok = ok && (nops == 1 || (op.operands[1]->type.dtype == DType::i32 &&
                                  op.operands[1]->type.shape == op.operands[0]->type.shape));
        ok = ok && std::has_single_bit(unsigned(n)) && std::has_single_bit(unsigned(k)) && k <= n && (k == n || nops == 2);
        expect(ok, op, "sort takes keys and an optional i32 tile of their shape, one result of each's type, the first k "
                       "(a power of two, k < n only with the payload) along its dim; its dim in range, a power of two");
        break;
      }
      case Op::histogram: {
        bool ok = (nops == 1 || nops == 2) && op.results.size() == 1 && is_int(op.operands[0]->type.dtype) &&
                  !op.operands[0]->type.is_ptr() && !op.operands[0]->type.is_scalar() &&
                  op.result()->type.dtype == DType::i32 && op.result()->type.rank() == 1;
        ok = ok && (nops == 1 || (op.operands[1]->type.dtype == DType::i1 &&
                                  op.operands[1]->type.shape == op.operands[0]->type.shape));
        expect(ok, op, "histogram takes an integer tile and an optional i1 mask of its shape; its result is i32 [num_bins]");
        break;
      }
      case Op::for_: {
        expect(nops >= 3 && op.regions.size() == 1, op, "for takes lb, ub, step and inits");
        expect(op.i1 == 0 || op.i1 == kAsyncDotStage, op, "a for's i1 is 0 or kAsyncDotStage");
        const Block& body = *op.regions[0];
        expect(body.args.size() == nops - 2, op, "for body arguments must be the iv and the carried values");
        const Operation* y = body.terminator();
        expect(y && y->operands.size() == op.results.size(), op, "for yield count");
        for (size_t i = 0; i < op.results.size(); ++i) {
          expect(op.operands[3 + i]->type == op.results[i]->type, op, "for init type differs from its result");
          expect(y->operands[i]->type == op.results[i]->type, op, "for yield type differs from its result");
          expect(body.args[1 + i]->type == op.results[i]->type, op, "for carried argument type");
        }
        break;
      }
      case Op::if_: {
        expect(nops == 1 && op.operands[0]->type.dtype == DType::i1 && op.operands[0]->type.is_scalar(), op,
               "if condition must be a scalar i1");
        expect(op.regions.size() == 2, op, "if has then and else regions");
        for (auto& r : op.regions) {
          const Operation* y = r->terminator();
          expect(y && y->operands.size() == op.results.size(), op, "if yield count");
          for (size_t i = 0; i < op.results.size(); ++i)
            expect(y->operands[i]->type == op.results[i]->type, op, "if yield type");
        }
        break;
      }
      case Op::while_: {
        expect(op.regions.size() == 2, op, "while has a condition region and a body");
        const Block& before = *op.regions[0];
        const Block& after = *op.regions[1];
        expect(op.results.size() == nops && before.args.size() == nops && after.args.size() == nops, op,
               "while: inits, results and both regions' arguments must be the carried values");
        const Operation* cond = before.terminator();
        const Operation* next = after.terminator();
        expect(cond && cond->operands.size() == nops + 1, op, "while condition yield: the condition and the values");
        expect(cond->operands[0]->type.dtype == DType::i1 && cond->operands[0]->type.is_scalar(), op,
               "while condition must be a scalar i1");
        expect(next && next->operands.size() == nops, op, "while body yield count");
        for (size_t i = 0; i < nops; ++i) {
          const Type& t = op.operands[i]->type;
          expect(op.results[i]->type == t && before.args[i]->type == t && after.args[i]->type == t &&
                     cond->operands[1 + i]->type == t && next->operands[i]->type == t,
                 op, "while carried value types differ");
        }
        break;
      }
      default:
        break;
    }
  }

  std::unordered_set<const Value*> defined_;
};

}  // namespace

void verify(const Function& f) { Verifier().function(f); }

}  // namespace tl::ir
