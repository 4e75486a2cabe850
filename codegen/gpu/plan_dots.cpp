// plan_dots (passes.hpp): each tl::dot's matrix instruction, kpack and warp split, recorded
// on the op, with Triton's rule for chained dots (AccelerateMatmul / AccelerateAMDMatmul
// on attention): when a dot's A operand is computed from another dot's result, both put
// every warp along M. Then a warp owns whole rows of the first dot's [M, N] result, so the
// row max and row sum of a softmax stay inside the warp (lane butterflies, no shared
// memory), and the first dot's accumulator layout is the second's A-operand layout
// (mma.sync m16n8: the accumulator's two columns a lane and n repetitions are exactly A's k
// pairs and k steps; MFMA at kpack 1: the transposed accumulator's columns are A's k
// groups), so P never leaves its registers. Where the instruction's k order differs from
// the accumulator's column order (gfx950's k = 16 bf16 instructions hold 8 consecutive k a
// lane, the accumulator 4 consecutive columns) the second dot renumbers its K, in A and B
// alike, to the accumulator's columns: the sum over k does not see the order.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_set>

#include "codegen/gpu/dot_layout.hpp"
#include "codegen/gpu/dot_operand_source.hpp"
#include "codegen/gpu/passes.hpp"
#include "codegen/gpu/warpgroup_dot.hpp"
#include "codegen/ir/op_properties.hpp"
#include "tl/error.hpp"

namespace tl::gpu {
namespace {

bool pure_elementwise(Op op) { return ir::has_trait(op, ir::kPure) && ir::has_trait(op, ir::kElementwise); }

// The dot whose result `v` is computed from through elementwise ops of v's shape (a
// scale, a mask, exp2, a cast), or null.
const ir::Operation* chained_producer(const ir::Value* v, std::unordered_set<const ir::Value*>& seen) {
  if (!seen.insert(v).second || !v->def) return nullptr;
  const ir::Operation* d = v->def;
  if (d->op == Op::dot) return d;
  if (!pure_elementwise(d->op)) return nullptr;
  for (const ir::Value* x : d->operands)
    if (x->type.shape == v->type.shape)
      if (const ir::Operation* p = chained_producer(x, seen)) return p;
  return nullptr;
}

int lg(int x) { return log2_exact(x); }

// The renumbering of K (one image per K bit) that makes `a`, an A-operand layout of K
// columns in the instruction's order, equal to `acc`, a layout of the same [M, K] tile;
// nullopt when they differ in more than the order of single K bits.
std::optional<std::vector<uint32_t>> k_renumbering(const Layout& a, const Layout& acc) {
  if (a.shape != acc.shape || a.shape.size() != 2 || a.reg.size() != acc.reg.size() ||
      a.lane.size() != acc.lane.size() || a.warp.size() != acc.warp.size())
    return std::nullopt;
  const int K = a.shape[1];
  const uint32_t kmask = uint32_t(K - 1);
  std::vector<uint32_t> perm(size_t(lg(K)), 0);
  bool ok = true;
  auto pair = [&](uint32_t x, uint32_t y) {
    if ((x & ~kmask) != (y & ~kmask)) return void(ok = false);
    uint32_t kx = x & kmask, ky = y & kmask;
    if (!kx && !ky) return;
    if (!kx || !ky || (kx & (kx - 1)) || (ky & (ky - 1))) return void(ok = false);
    uint32_t& slot = perm[size_t(__builtin_ctz(kx))];
    if (slot && slot != ky) ok = false;
    slot = ky;
  };
  for (size_t i = 0; i < a.reg.size(); ++i) pair(a.reg[i], acc.reg[i]);
  for (size_t i = 0; i < a.lane.size(); ++i) pair(a.lane[i], acc.lane[i]);
  for (size_t i = 0; i < a.warp.size(); ++i) pair(a.warp[i], acc.warp[i]);
  uint32_t all = 0;
  for (uint32_t p : perm) all |= p;
  if (!ok || all != kmask) return std::nullopt;
  return perm;
}

std::optional<DotPlan> plan(const ir::Operation& dot, const PlanTarget& t, DotRequest req, std::string& why) {
  const ir::Type &a = dot.operands[0]->type, &b = dot.operands[1]->type;
  req.ieee = dot.i0 != 0;  // input_precision ieee: no TF32 instruction
  req.scaled = dot.operands.size() == 5;  // tl::dot_scaled: the block-scaled instructions
  return plan_dot(*t.caps, a.dtype, b.dtype, a.shape[0], b.shape[1], a.shape[1], t.num_warps, t.wave_size, req, why);
}

// Whether `v` is (a transpose or cast of) an 8-bit tile. Renumbering K scatters the rows
// of B a lane reads; an 8-bit B read a byte at a time (FP8 V in a decode kernel, where the
// target has no transposing byte read) then costs more registers than P's conversion
// saves: gfx950's seed-002 decode tuple went from 186 to 237 VGPRs with it before V was
// read by ds_read_b64_tr_b8, where tutorial-06 attention's bf16 V kept 311 and saved 64
// ds_bpermute. A transposing read takes any 8 rows (its lanes' addresses), so where the
// target has one the renumbering stands: seed 002's tuple on gfx950 then keeps P in
// registers (32 ds_bpermute an iteration fewer; D = 64: 120 -> 114 VGPRs).
bool eight_bit_source(const ir::Value* v) {
  while (v->def && (v->def->op == Op::trans || converts_dot_operand_registers(*v->def)) && bit_width(v->type.dtype) > 8)
    v = v->def->operands[0];
  return bit_width(v->type.dtype) == 8;
}

// Whether `v` is (a cast, bitcast or transpose of) a read of a shared buffer.
bool from_shared(const ir::Value* v) {
  while (v->def && (v->def->op == Op::trans || converts_dot_operand_registers(*v->def))) v = v->def->operands[0];
  return v->def && v->def->op == Op::shared_load;
}

// The N renumbering that makes the N repetitions of `p`'s B (its register bits along N)
// the lowest columns, then the instruction's own columns (lane bits): a lane's columns of
// one row of B are then consecutive, one access for all its repetitions.
std::vector<uint32_t> repetitions_first(const DotPlan& p) {
  const int N = p.b.shape[1];
  const uint32_t nmask = uint32_t(N - 1);
  std::vector<uint32_t> order;  // current column-bit images, in their new order
  for (const auto* images : {&p.b.reg, &p.b.lane, &p.b.warp})
    for (uint32_t x : *images)
      if (x && (x & ~nmask) == 0 && (x & (x - 1)) == 0) order.push_back(x);
  std::vector<uint32_t> perm(size_t(lg(N)), 0);
  if (order.size() != perm.size()) return {};
  for (size_t i = 0; i < order.size(); ++i) perm[size_t(__builtin_ctz(order[i]))] = 1u << i;
  return perm;
}

struct ChainPlan {
  DotPlan first, second;
  bool p_in_registers = false;
};

// Both dots with every warp along M, one instruction size (AMD: the asked nonkdim, else
// 32 then 16, whichever fits both); the second's K renumbered where that makes its A
// layout the first's accumulator layout and B is not 8-bit read a byte at a time.
std::optional<ChainPlan> plan_chain(const ir::Operation& first, const ir::Operation& second, const PlanTarget& t) {
  const bool amd = !t.caps->matrix_instructions.empty() &&
                   t.caps->matrix_instructions[0].family == MatrixFamily::amd_mfma;
  std::vector<int> sizes = t.nonkdim ? std::vector<int>{t.nonkdim} : amd ? std::vector<int>{32, 16} : std::vector<int>{0};
  std::string why;
  for (int size : sizes) {
    DotRequest req{size, t.kpack, t.num_warps, 1, {}};
    auto p1 = plan(first, t, req, why);
    auto p2 = plan(second, t, req, why);
    if (!p1 || !p2) continue;
    const bool byte_reads = eight_bit_source(second.operands[1]) && !t.caps->has_transposed_shared_read(8);
    if (!(p2->a == p1->acc) && !byte_reads)
      if (auto perm = k_renumbering(p2->a, p1->acc)) {
        req.k_perm = *perm;
        if (auto renumbered = plan(second, t, req, why)) p2 = renumbered;
      }
    // An 8-bit B staged in shared memory and read without a transposing read (FP8 V on
    // gfx942): its N repetitions become consecutive columns, read together.
    if (t.caps->register_pressure_rules && byte_reads && from_shared(second.operands[1]) && p2->reps_n > 1) {
      req.n_perm = repetitions_first(*p2);
      if (!req.n_perm.empty())
        if (auto renumbered = plan(second, t, req, why)) p2 = renumbered;
    }
    return ChainPlan{*p1, *p2, p2->a == p1->acc};
  }
  return std::nullopt;
}

void record(ir::Operation& dot, const DotPlan& p) {
  dot.str = p.instr.name;
  dot.ints = {p.kpack, p.warps_m, p.warps_n};
  for (uint32_t x : p.k_perm) dot.ints.push_back(int(x));
  if (p.n_perm.empty()) return;
  if (p.k_perm.empty())
    for (int k = 1; k < dot.operands[0]->type.shape[1]; k *= 2) dot.ints.push_back(k);
  for (uint32_t x : p.n_perm) dot.ints.push_back(int(x));
}

}  // namespace

void plan_dots(ir::Function& f, const PlanTarget& t, std::vector<std::string>& remarks) {
  std::vector<ir::Operation*> dots;
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op == Op::dot) dots.push_back(&op);
  });
  if (dots.empty()) return;
  auto fail = [](const ir::Operation& op, const std::string& why) {
    throw compile_error(fmt::format("tl::dot: {}", why), op.loc.file, op.loc.line);
  };
  if (!t.caps || t.caps->matrix_instructions.empty()) fail(*dots[0], "no matrix-instruction table for this target");
  std::unordered_set<const ir::Operation*> planned;
  // Warpgroup dots first (sm_90): any dot wgmma can take (warpgroup_dot_obstacle: B read
  // from shared memory, A too or from registers for 16-bit types, M a multiple of 64 a
  // warpgroup), unless the launch asked for mma.sync. The rest, and chains among them,
  // are planned below as before.
  const bool has_wgmma =
      std::any_of(t.caps->matrix_instructions.begin(), t.caps->matrix_instructions.end(),
                  [](const MatrixInstruction& mi) { return mi.family == MatrixFamily::nvidia_wgmma; });
  if (t.mma_version == 3 && !has_wgmma) fail(*dots[0], fmt::format("mma_version=3 (wgmma): {} has no wgmma (sm_90a only)", t.caps->arch));
  for (ir::Operation* dot : dots) {
    if (!has_wgmma || t.mma_version == 2) break;
    const std::string why = warpgroup_dot_obstacle(*t.caps, *dot, t.num_warps);
    if (!why.empty()) {
      if (t.mma_version == 3) fail(*dot, fmt::format("mma_version=3 (wgmma) cannot take this dot: {}", why));
      continue;
    }
    std::string unused;
    DotRequest req;
    req.warpgroup = true;
    auto p = plan(*dot, t, req, unused);
    record(*dot, *p);
    planned.insert(dot);
  }
  // A chain of warpgroup dots (attention's Q K^T then P V): warpgroups split M first, so
  // the first's accumulator is the second's register A layout wherever both take every
  // warp along M; the remark says whether P stays in registers.
  for (ir::Operation* second : dots) {
    std::unordered_set<const ir::Value*> seen;
    const ir::Operation* first = chained_producer(second->operands[0], seen);
    if (!first || first == second || !planned.count(first) || !planned.count(second)) continue;
    const DotPlan p1 = recorded_dot_plan(*t.caps, *first, t.num_warps, t.wave_size);
    const DotPlan p2 = recorded_dot_plan(*t.caps, *second, t.num_warps, t.wave_size);
    remarks.push_back(fmt::format("chained dots {} -> {}: wgmma, {} warps along M ({} then {}); {}",
                                  ir::short_location(first->loc), ir::short_location(second->loc), p1.warps_m,
                                  p1.instr.name, p2.instr.name,
                                  p2.a == p1.acc ? "the first's accumulator is the second's A operand (P stays in registers)"
                                                 : "P converts to the second's A-operand layout"));
  }
  for (ir::Operation* second : dots) {
    std::unordered_set<const ir::Value*> seen;
    auto* first = const_cast<ir::Operation*>(chained_producer(second->operands[0], seen));
    if (!first || first == second || planned.count(first) || planned.count(second)) continue;
    if (first->operands.size() == 5 || second->operands.size() == 5) continue;  // (no scaled chains yet)
    auto chain = plan_chain(*first, *second, t);
    if (!chain) continue;
    record(*first, chain->first);
    record(*second, chain->second);
    planned.insert(first);
    planned.insert(second);
    remarks.push_back(fmt::format(
        "chained dots {} -> {}: every warp along M ({} warps, {}){}; {}", ir::short_location(first->loc),
        ir::short_location(second->loc), t.num_warps, chain->first.instr.name,
        chain->second.k_perm.empty() ? "" : ", K of the second renumbered to the accumulator's columns",
        chain->p_in_registers ? "the first's accumulator is the second's A operand (P stays in registers)"
                              : "P converts to the second's A-operand layout"));
  }
  for (ir::Operation* dot : dots) {
    if (planned.count(dot)) continue;
    std::string why;
    auto p = plan(*dot, t, DotRequest{t.nonkdim, t.kpack, 0, 0, {}}, why);
    if (!p) fail(*dot, why);
    record(*dot, *p);
  }
}

}  // namespace tl::gpu
