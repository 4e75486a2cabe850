// shared_load / shared_store: one stage of a user's shared buffer (tl::shared), Triton's
// local_load / local_store. A stage lies at buffer base + stage * tile bytes (the stage
// is a run-time i32) in the swizzled row-major form of shared_tile_layout (layout.hpp):
// each thread moves its registers at the swizzled offsets of their elements, a whole
// 16-byte vector at a time where its layout gives it that many contiguous elements along
// the last dim (ds_read_b128 / ds_write_b128, ld/st.shared.v4); the swizzle keeps such a
// vector contiguous and spreads the vectors one 8-lane phase touches over distinct banks.
//
// Ordering between threads is the IR's business: codegen/passes/insert_barriers.cpp put
// an Op::barrier wherever one access of a buffer may conflict with another's, and
// insert_shared_barriers wherever bytes the allocator gave two buffers (or a buffer and
// the scratch) may.
#include <fmt/format.h>

#include <algorithm>

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Operator.h>

#include "codegen/gpu/copy_offsets.hpp"
#include "codegen/gpu/lower_context.hpp"
#include "codegen/gpu/shared_encoding.hpp"
#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

namespace {
// The registers of `l` moved per access: a run of contiguous elements along the last
// dim, no longer than one swizzle vector (which the swizzle keeps contiguous).
int access_group(const Layout& l, int vec) { return std::max(1, std::min({contiguous_run(l, 1), vec, l.num_regs()})); }
}  // namespace

// The buffer `v` is, for its alias scope; kUnknownBuffer when it may be several (a loop
// or branch choosing between buffers): its accesses then carry no scope.
int Lowerer::smem_buffer_of(const ir::Value* v) const {
  auto it = smem_plan_.buffers_of.find(v);
  return it != smem_plan_.buffers_of.end() && it->second.size() == 1 ? it->second[0] : kUnknownBuffer;
}

llvm::Value* Lowerer::shared_stage_base(const ir::Operation& op, unsigned eb) {
  const ir::Type& bt = op.operands[0]->type;
  llvm::Value* tile_bytes = b.getInt32(uint32_t(bt.numel() * eb));
  llvm::Value* first = b.CreateMul(scalar(op.operands[1]), tile_bytes, "stage.offset", true, true);
  return b.CreateGEP(b.getInt8Ty(), scalar(op.operands[0]), first, "stage");
}

// (stage_tile_layout: the encoding recorded on the buffers `buffer` may be, else the
// default swizzle.)
SharedTileLayout Lowerer::stage_layout(const ir::Value* buffer, unsigned eb) {
  std::vector<const ir::Operation*> allocs;
  if (auto ids = smem_plan_.buffers_of.find(buffer); ids != smem_plan_.buffers_of.end())
    for (int id : ids->second) allocs.push_back(smem_plan_.buffers[size_t(id)].alloc);
  const TargetCapabilities& caps = hooks_.capabilities();
  return stage_tile_layout(buffer->type.shape, allocs, int(eb), {caps.shared_banks, caps.shared_bank_bytes});
}

Lowerer::StageAccess Lowerer::stage_access(const ir::Operation& op, const Layout& l, DType t) {
  llvm::Type* ty = mem_type(t);
  unsigned eb = unsigned(m_.getDataLayout().getTypeStoreSize(ty));
  SharedTileLayout st = stage_layout(op.operands[0], eb);
  return StageAccess{ty, eb, compose(st.offsets, l, l.shape), access_group(l, st.vec), smem_buffer_of(op.operands[0]),
                     shared_stage_base(op, eb)};
}

void Lowerer::lower_shared_store(const ir::Operation& op) {
  const ir::Value* v = op.operands[2];
  DType t = v->type.dtype;
  // The value where it already lives (a store takes any layout: the offsets follow it).
  Layout l = is_lazy(v) ? preferred_layout(v) : natural(v).layout;
  Values regs = get(v, l);
  StageAccess a = stage_access(op, l, t);
  uint32_t dup = l.duplicate_reg_mask();
  for (int r = 0; r < l.num_regs(); r += a.group) {
    if (r & dup) continue;  // a copy of another register
    llvm::Value* p = b.CreateGEP(a.ty, a.base, element_index(a.offsets, r));
    smem_store(pack_for_memory(regs, r, a.group, t), p, a.eb * unsigned(a.group), a.buffer);
  }
}

namespace {
// When `l` (a 2-D tile of 16- or 8-bit elements) is made of ldmatrix.x4 results
// (NVIDIA): the layout of the row addresses its lanes give, one register per ldmatrix
// (nullopt when it is not). An x4 result holds, in its `w` low register bits (w = 1 for
// 16-bit elements, 2 for 8-bit: a 32-bit register's elements) and lane bits 0-4, the
// element (l / 4, 4 bytes (l % 4) + the low bits) of an 8-row by 16-byte matrix: in the
// tile, column bits 0 .. w+1 then row bits 0-2 (not transposed), or (16-bit only) row
// bits 0-2 then column bits 0-2 (.trans: the tile's rows are the matrix's columns); the
// next two register bits choose the matrix (any 16-byte-aligned block), higher bits the
// ldmatrix. Its lanes address rows: lane bits 0-2 the row within the matrix, bits 3-4
// the matrix. mma.sync's operand fragments are this shape (A from a K-contiguous tile,
// B from a K-contiguous B^T, and 16-bit B with .trans from an N-contiguous one).
std::optional<Layout> ldmatrix_addresses(const Layout& l, int elem_bits, bool& trans) {
  const size_t w = elem_bits == 8 ? 2 : 1;
  if (l.rank() != 2 || l.reg.size() < w + 2 || l.lane.size() != 5 || l.shape[1] < int(16 * 8 / elem_bits))
    return std::nullopt;
  const uint32_t C = uint32_t(l.shape[1]), chunk = uint32_t(16 * 8 / elem_bits);
  std::vector<uint32_t> cols = {1, 2, 4}, rows = {C, 2 * C, 4 * C};
  if (w == 2) cols.push_back(8);
  auto is = [&](std::vector<uint32_t> got, const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
    std::vector<uint32_t> want = a;
    want.insert(want.end(), b.begin(), b.end());
    return got == want;
  };
  std::vector<uint32_t> frag(l.reg.begin(), l.reg.begin() + long(w));
  frag.insert(frag.end(), l.lane.begin(), l.lane.end());
  if (is(frag, cols, rows)) trans = false;
  else if (w == 1 && is(frag, rows, cols)) trans = true;
  else return std::nullopt;
  for (size_t i = w; i < l.reg.size(); ++i)
    if (l.reg[i] == 0 || (l.reg[i] % C) % chunk != 0) return std::nullopt;  // copies, or a block not 16-byte aligned
  Layout a;
  a.shape = l.shape;
  a.reg.assign(l.reg.begin() + long(w) + 2, l.reg.end());
  a.lane = {C, 2 * C, 4 * C, l.reg[w], l.reg[w + 1]};
  a.warp = l.warp;
  return a;
}
}  // namespace

// A register's element of a stage: lane part L (elements), XORed with the register's
// swizzle bits x (those the lane part may also set) and offset by its other bits a:
// base + ((L ^ x) + a) * eb. Emitted as ((base + L * eb) ^ x * eb) + a * eb where adding
// the base carries into no bit x * eb sets (the base's known alignment, 128 bytes for a
// user buffer, exceeds them): then the XOR is of a value that changes with the stage, made
// where it is used, instead of one loop-invariant L ^ x per x that LLVM hoists out of the
// loop and keeps in a VGPR throughout (a K or V tile read by a dot: 4 to 8 of them).
llvm::Value* Lowerer::stage_address(llvm::Value* base, llvm::Type* ty, const Layout& offsets, int r, int buffer) {
  const IndexPart& t = thread_index(offsets);
  const uint32_t rp = offsets.reg_part(uint32_t(r));
  const uint32_t x = t.value ? rp & t.bits : 0, a = t.value ? rp & ~t.bits : rp;
  const llvm::DataLayout& dl = m_.getDataLayout();
  const uint64_t eb = dl.getTypeStoreSize(ty);
  if (!x || (eb & (eb - 1)) || !hooks_.capabilities().register_pressure_rules)
    return b.CreateGEP(ty, base, element_index(offsets, r));
  // The stage's alignment: the array's (a bank row with user buffers), the buffer's
  // offset's and the stage size's.
  uint64_t align = smem_plan_.buffers.empty() ? 16 : 128;
  if (buffer == kUnknownBuffer) align = 16;
  else if (int64_t o = smem_plan_.buffers[size_t(buffer)].offset) align = std::min<uint64_t>(align, uint64_t(o & -o));
  const uint64_t tile = uint64_t(offsets.numel()) * eb;
  align = std::min<uint64_t>(align, tile & (~tile + 1));
  if (uint64_t(x) * eb >= align) return b.CreateGEP(ty, base, element_index(offsets, r));
  llvm::Value* bi = b.CreatePtrToInt(base, b.getInt32Ty());
  llvm::Value* v = b.CreateAdd(bi, b.CreateMul(t.value, b.getInt32(uint32_t(eb)), "", true, true));
  v = b.CreateXor(v, b.getInt32(uint32_t(x * eb)));
  if (a) v = b.CreateAdd(v, b.getInt32(uint32_t(a * eb)), "", true, true);
  return b.CreateIntToPtr(v, base->getType());
}

void Lowerer::read_stage_registers(const ir::Operation& op, const Layout& l, int first, int count, Values& out) {
  DType t = op.result()->type.dtype;
  bool relaxed = op.i0 == 1;  // load_shared_relaxed
  StageAccess a = stage_access(op, l, t);
  const int last = first + count;
  // A matrix-instruction operand of 16- or 8-bit elements: ldmatrix, four 8-row by
  // 16-byte blocks a lane group in one instruction, conflict-free on the swizzled stage
  // (each matrix row is one 16-byte vector, and the swizzle spreads a matrix's 8 rows
  // over the banks).
  bool trans = false;
  const int bits = bit_width(t);
  auto addr = (bits == 16 || bits == 8) && hooks_.has_load_matrix() ? ldmatrix_addresses(l, bits, trans)
                                                                   : std::nullopt;
  if (addr && stage_layout(op.operands[0], a.eb).vec * int(a.eb) >= 16) {
    Layout offsets = compose(stage_layout(op.operands[0], a.eb).offsets, *addr, l.shape);
    const int per_reg = 32 / bits, per_call = 4 * per_reg;
    auto* elems = llvm::FixedVectorType::get(a.ty, unsigned(per_reg));
    for (int c = first / per_call; c * per_call < last; ++c) {
      if (out[size_t(c * per_call)]) continue;
      llvm::Value* p = b.CreateGEP(a.ty, a.base, element_index(offsets, c));
      Values q = hooks_.load_matrix_x4(b, p, trans);
      for (int i = 0; i < 4; ++i) {
        llvm::Value* v = b.CreateBitCast(q[size_t(i)], elems);
        for (int j = 0; j < per_reg; ++j)
          out[size_t((c * 4 + i) * per_reg + j)] = b.CreateExtractElement(v, uint64_t(j));
      }
    }
    return;
  }
  // gfx950: an operand read across the stage's rows (registers holding consecutive
  // elements along the dim the stage does not store fastest: an N-contiguous B's k, V in
  // attention) takes 8 bytes a lane with ds_read_b64_tr_b16 / _b8 where the plain read
  // takes fewer, when that instruction produces `l` from the stage's offsets
  // (transposed_read_layout, the rule the conversions' reads follow too).
  Layout offsets = a.offsets;
  int g = a.group;
  bool transposed = false;
  if (g * int(a.eb) < 8 && hooks_.capabilities().has_transposed_shared_read(bits)) {
    const LinearMap& stage = stage_layout(op.operands[0], a.eb).offsets;
    if (auto tr = transposed_read_layout(l, stage, int(a.eb))) {
      offsets = compose(stage, *tr, l.shape);
      g = transposed_read_slots(int(a.eb));
      transposed = true;
    }
  }
  const uint32_t dup = l.duplicate_reg_mask();
  // Consecutive elements of the stage held in registers that are not the first ones (an
  // 8-bit B renumbered along N holds a row's columns in its N-repetition registers): one
  // vector read gives all of them, up to 16 bytes or the swizzle's vector.
  if (!transposed && g * int(a.eb) < 16 && hooks_.capabilities().register_pressure_rules) {
    std::vector<int> vb;  // register bits holding stage offsets 1, 2, 4, ...
    for (uint32_t want = 1; int(want) * int(a.eb) < 16 && int(want) < stage_layout(op.operands[0], a.eb).vec; want *= 2) {
      int found = -1;
      for (size_t i = 0; i < offsets.reg.size(); ++i)
        if (offsets.reg[i] == want) found = int(i);
      if (found < 0) break;
      vb.push_back(found);
    }
    const uint32_t low = (1u << vb.size()) - 1;
    bool aligned = !vb.empty();
    uint32_t vmask = 0;
    for (int i : vb) vmask |= 1u << i;
    for (size_t i = 0; i < offsets.reg.size(); ++i)
      if (!(vmask >> i & 1) && (offsets.reg[i] & low)) aligned = false;
    for (const auto* images : {&offsets.lane, &offsets.warp})
      for (uint32_t x : *images) aligned &= (x & low) == 0;
    if (aligned && (1 << vb.size()) > g) {
      const int n = 1 << vb.size();
      auto* vty = llvm::FixedVectorType::get(a.ty, unsigned(n));
      for (int r = first; r < last; ++r) {
        if ((r & dup) || out[size_t(r)]) continue;
        const int r0 = r & ~int(vmask);
        llvm::Value* p = stage_address(a.base, a.ty, offsets, r0, a.buffer);
        llvm::Value* vec = smem_load(vty, p, a.eb * unsigned(n), a.buffer, relaxed);
        for (int j = 0; j < n; ++j) {
          int rr = r0;
          for (size_t k = 0; k < vb.size(); ++k)
            if (j >> k & 1) rr |= 1 << vb[k];
          out[size_t(rr)] = b.CreateExtractElement(vec, uint64_t(j));
        }
      }
      g = last;  // nothing left for the loop below
    }
  }
  for (int r = first / g * g; r < last; r += g) {
    if ((r & dup) || out[size_t(r)]) continue;
    llvm::Value* p = stage_address(a.base, a.ty, offsets, r, a.buffer);
    if (transposed) {
      llvm::Value* v = hooks_.load_shared_transposed(b, p, bits);
      // (the 8-bit read comes as a bitcast of the intrinsic's words)
      auto* read = llvm::dyn_cast<llvm::Instruction>(v);
      if (read && llvm::isa<llvm::BitCastInst>(read)) read = llvm::dyn_cast<llvm::Instruction>(read->getOperand(0));
      smem_tag_read(read, a.buffer, relaxed);
      v = b.CreateBitCast(v, llvm::FixedVectorType::get(a.ty, unsigned(g)));
      for (int k = 0; k < g; ++k) out[size_t(r + k)] = b.CreateExtractElement(v, uint64_t(k));
      continue;
    }
    if (g == 1) {
      out[size_t(r)] = smem_load(a.ty, p, a.eb, a.buffer, relaxed);
      continue;
    }
    llvm::Value* vec = smem_load(llvm::FixedVectorType::get(a.ty, unsigned(g)), p, a.eb * unsigned(g), a.buffer, relaxed);
    for (int k = 0; k < g; ++k) out[size_t(r + k)] = b.CreateExtractElement(vec, uint64_t(k));
  }
  for (int r = first; r < last; ++r)
    if (!out[size_t(r)]) {
      if (!out[size_t(r & ~dup)]) read_stage_registers(op, l, r & ~dup, 1, out);
      out[size_t(r)] = out[size_t(r & ~dup)];
    }
}

void Lowerer::lower_shared_load(const ir::Operation& op) {
  if (deferred_reads_.count(&op)) return;  // read by its dot (lower_dot.cpp)
  const ir::Value* res = op.result();
  DType t = res->type.dtype;
  const Layout& l = plan_.of(res);
  Values out(size_t(l.num_regs()));
  read_stage_registers(op, l, 0, l.num_regs(), out);
  for (auto& x : out) x = from_mem(x, t);
  set_natural(res, Regs{l, std::move(out)});
}

}  // namespace tl::gpu

namespace tl::gpu {

void Lowerer::lower_async_wait(const ir::Operation& op) {
  // (on AMD, the pipeliner's waits count loads by now: plan_wait_counts)
  hooks_.async_wait(b, int(op.i0));
}

namespace {
// v as x + k with x non-negative (split_constant), x null where v is the constant k.
std::pair<llvm::Value*, int64_t> split_nonnegative(llvm::Value* v, const llvm::DataLayout& dl) {
  auto [x, k] = split_constant(v, dl);
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(x); c && c->getSExtValue() >= 0) return {nullptr, k + c->getSExtValue()};
  return {x, k};
}

// The offsets of a copy plan_copies sends through a resource, emitted in the copy layout
// by the fold plan_copies bounded them with (copy_offsets.hpp): a uniform i64 part (null:
// 0) for the resource's base, and per register a non-negative part varying with the lane
// (null: 0) and a constant for soffset.
struct AffineOffsets {
  llvm::Value* uniform = nullptr;
  Values lane;
  std::vector<int64_t> consts;
};

// copy_offsets.hpp's algebra that emits: a node is emitted in the layout that travels
// down (a broadcast's operand in the layout it is broadcast from).
class OffsetEmitter {
 public:
  using Term = AffineOffsets;
  using Where = Layout;
  explicit OffsetEmitter(Lowerer& L) : L_(L), b(L.b) {}

  Layout where(const ir::Operation& d, const Layout& l) const {
    const auto& shape = d.operands[0]->type.shape;
    return d.op == Op::broadcast ? broadcast_source_layout(l, shape) : reshape_layout(l, shape);
  }
  std::optional<Term> uniform(const ir::Value* scalar, const Layout& l) {
    const size_t n = size_t(l.num_regs());
    AffineOffsets t;
    t.uniform = b.CreateSExt(L_.scalar(scalar), b.getInt64Ty());
    t.lane.assign(n, nullptr);
    t.consts.assign(n, 0);
    return t;
  }
  std::optional<Term> arange(const ir::Value* v, const Layout& l) {
    const size_t n = size_t(l.num_regs());
    Values vals = L_.get(v, l);
    AffineOffsets t;
    t.lane.resize(n);
    t.consts.resize(n);
    for (size_t r = 0; r < n; ++r) std::tie(t.lane[r], t.consts[r]) = split_nonnegative(vals[r], L_.m_.getDataLayout());
    return t;
  }
  std::optional<Term> add(Term x, const Term& y) {
    x.uniform = !x.uniform ? y.uniform : !y.uniform ? x.uniform : b.CreateAdd(x.uniform, y.uniform, "", false, true);
    for (size_t r = 0; r < x.lane.size(); ++r) {
      llvm::Value *p = x.lane[r], *q = y.lane[r];
      x.lane[r] = !p ? q : !q ? p : b.CreateAdd(p, q, "", true, true);
      x.consts[r] += y.consts[r];
    }
    return x;
  }
  // Of a uniform amount (plan_copies' bound: y has no lane part).
  std::optional<Term> sub(Term x, const Term& y) {
    if (y.uniform) x.uniform = x.uniform ? b.CreateSub(x.uniform, y.uniform, "", false, true) : b.CreateNeg(y.uniform);
    return x;
  }
  std::optional<Term> scale(Term x, int64_t c) {
    if (x.uniform) x.uniform = b.CreateMul(x.uniform, b.getInt64(uint64_t(c)), "", false, true);
    for (size_t r = 0; r < x.lane.size(); ++r) {
      if (x.lane[r]) x.lane[r] = b.CreateMul(x.lane[r], b.getInt32(uint32_t(c)), "", true, true);
      x.consts[r] *= c;
    }
    return x;
  }
  std::optional<Term> mul_uniform(Term x, const Term& y) {
    x.uniform = b.CreateMul(x.uniform, y.uniform, "", false, true);
    return x;
  }

 private:
  Lowerer& L_;
  llvm::IRBuilderBase& b;
};

AffineOffsets emit_affine_offsets(Lowerer& L, const ir::Value* v, const Layout& l) {
  OffsetEmitter emit(L);
  auto t = fold_copy_offsets(v, emit, l);
  if (!t) throw compile_error("gpu lowering: a copy's offsets are not the form plan_copies accepted (a tl bug)");
  return std::move(*t);
}
}  // namespace

void Lowerer::lower_global_load_to_shared(const ir::Operation& op) {
  // A compiler copy plan_copies loads and stores (the load and shared_store before it):
  // only its commit group, so that the waits counting copy groups count the same.
  if (op.copy && op.copy->chunk_bytes == 0) return hooks_.commit_copies(b);
  const ir::Type& bt = op.operands[0]->type;
  const ir::Value* ptr = op.operands[2];
  const ir::Value* mask = op.operands.size() > 3 ? op.operands[3] : nullptr;
  const ir::Value* other = op.operands.size() > 4 ? op.operands[4] : nullptr;
  DType t = bt.dtype;
  llvm::Type* ty = mem_type(t);
  int eb = int(m_.getDataLayout().getTypeStoreSize(ty));
  SharedTileLayout st = stage_layout(op.operands[0], unsigned(eb));
  // tl::amd::buffer_load_to_shared: buffer loads into LDS where the target has them; on
  // AMD without them an error at the user's line; elsewhere (NVIDIA) the copy through
  // the pointers base + offsets that the op also is.
  const TargetCapabilities& caps = hooks_.capabilities();
  const bool buffer_copy = op.i1 == ir::kBufferAccess && caps.has_buffer_ops();
  if (buffer_copy && !caps.buffer_load_to_shared)
    throw compile_error(fmt::format("tl::amd::buffer_load_to_shared: {} has no buffer loads into LDS (gfx950, CDNA4, "
                                    "only, as Gluon's); use tl::amd::global_load_to_shared",
                                    hooks_.target_name()),
                        op.loc.file, op.loc.line);
  if (!op.copy) throw compile_error("gpu lowering: a copy without a plan (plan_copies; a tl bug)");
  const Layout& l = *op.layout;  // (what plan_copies chose; its operands are in it)
  const int bytes = op.copy->chunk_bytes;
  const int per = bytes / eb;
  // A compiler copy (AMD) through a buffer resource where plan_copies said its pointers
  // allow: the uniform part of the offsets in the resource's base, the constants (the
  // chunks' rows) in soffset, one small offset a lane (one per swizzle variant), and
  // masked-off chunks at an offset past the bound, written as zeros with no branch. Else
  // each chunk's 64-bit address, and a branch per masked chunk.
  std::optional<AffineOffsets> affine;
  llvm::Value* affine_rsrc = nullptr;
  if (op.copy->through_resource) {
    affine = emit_affine_offsets(*this, ptr->def->operands[1], l);
    llvm::Value* base = scalar(ptr->def->operands[0]->def->operands[0]);
    if (affine->uniform) base = b.CreateGEP(ty, base, affine->uniform);
    affine_rsrc = hooks_.buffer_resource(b, base, nullptr);
  }
  Values ptrs = buffer_copy || affine ? Values{} : get(ptr, l);
  Values masks = mask ? get(mask, l) : Values{};
  Values others = other ? get(other, l) : Values{};
  Layout offsets = compose(st.offsets, l, bt.shape);
  int buffer = smem_buffer_of(op.operands[0]);
  llvm::Value* base = shared_stage_base(op, unsigned(eb));
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  // A tile with fewer chunks than the program has lanes is held by several warps at once
  // (zero warp images): only one of them copies, the others would write the same bytes
  // (a write-write race, which compute-sanitizer's racecheck reports). The predicate is
  // uniform in a wave, so AMD's wave-wide LDS DMA is issued or skipped whole.
  llvm::Value* owner = owner_predicate(l);
  // One chunk's copy: through its pointer, or (buffer_load_to_shared) through the buffer
  // resource; and the same writing zeros where the chunk's mask is false, with no branch,
  // where the copy can (nullptr where not: cp.async's src-size, a buffer load's offset
  // past the bound).
  auto buffer_chunk = buffer_copy ? buffer_chunk_copier(op, l, bytes) : nullptr;
  auto copy_chunk = [&](int r, llvm::Value* p) {
    return buffer_copy ? buffer_chunk(r, p, nullptr) : hooks_.copy_to_shared(b, ptrs[r], p, bytes);
  };
  auto copy_chunk_or_zeros = [&](int r, llvm::Value* p) {
    return buffer_copy ? buffer_chunk(r, p, masks[r]) : hooks_.copy_to_shared_or_zeros(b, ptrs[r], p, bytes, masks[r]);
  };
  auto copy_chunks = [&] {
    for (int r = 0; r < l.num_regs(); r += per) {
      llvm::Value* p = b.CreateGEP(ty, base, element_index(offsets, r));
      if (affine) {
        llvm::Value* lane = affine->lane[size_t(r)];
        llvm::Value* voff = lane ? b.CreateMul(lane, b.getInt32(uint32_t(eb)), "", true, true) : b.getInt32(0);
        if (mask) voff = masked_buffer_offset(voff, masks[size_t(r)]);
        llvm::Value* soff = b.getInt32(uint32_t(affine->consts[size_t(r)] * eb));
        smem_tag_copy(hooks_.buffer_copy_to_shared(b, affine_rsrc, voff, p, bytes, soff), buffer);
        continue;
      }
      if (!mask) {
        smem_tag_copy(copy_chunk(r, p), buffer);
        continue;
      }
      // Zeros for masked-off chunks, and a copy that can write them itself: no branch.
      if (ir::copy_fills_zeros(op))
        if (llvm::Instruction* c = copy_chunk_or_zeros(r, p)) {
          smem_tag_copy(c, buffer);
          continue;
        }
      auto* copy = llvm::BasicBlock::Create(ctx_, "copy", fn);
      auto* fill = llvm::BasicBlock::Create(ctx_, "copy.other", fn);
      auto* done = llvm::BasicBlock::Create(ctx_, "copy.done", fn);
      b.CreateCondBr(masks[r], copy, fill);  // the mask is constant over the chunk
      b.SetInsertPoint(copy);
      smem_tag_copy(copy_chunk(r, p), buffer);
      b.CreateBr(done);
      b.SetInsertPoint(fill);
      llvm::Value* vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(ty, unsigned(per)));
      for (int k = 0; k < per; ++k)
        vec = b.CreateInsertElement(vec, other ? to_mem(others[r + k], t) : llvm::Constant::getNullValue(ty), uint64_t(k));
      // No copy in flight writes this chunk (the last one into it was waited for before
      // the stage was read), so LLVM need not wait for the buffer's copies first.
      smem_store(vec, p, unsigned(bytes), buffer, /*relaxed=*/true);
      // The chunk still issues a load (of zeros, which the store above also wrote: the two
      // agree in whichever order they land), so that a wait counting this copy's loads
      // counts right when some are masked off.
      if (ir::copy_fills_zeros(op))
        if (llvm::Instruction* z = hooks_.copy_zeros_to_shared(b, p, bytes)) smem_tag_copy(z, buffer);
      b.CreateBr(done);
      b.SetInsertPoint(done);
    }
  };
  if_then(owner, copy_chunks);
  hooks_.commit_copies(b);
}

}  // namespace tl::gpu
