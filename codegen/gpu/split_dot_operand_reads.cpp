// split_dot_operand_reads (passes.hpp): a read of a shared buffer that feeds several
// warpgroup dots, as it is and transposed, becomes one read per dot.
//
// The attention backward reads each staged tile twice: dK/dV reads Q^T as B of K.Q^T and,
// transposed, as B of dS^T.Q; dO as B of P^T.dO and, transposed, as B of V.dO^T (dQ the
// same with K^T). The pipeliner stages such a tile once (CSE merges the reads of one
// stage), so the one read had two uses, and a wgmma reads a descriptor operand only where
// the read is its own (match_descriptor_operand): both dots fell back to mma.sync, the
// tile went to registers and was copied through shared memory again for each of them.
// With a read per dot (transposes through the chain cancelling: trans(trans(x)) is x),
// each dot reads the one stage through a descriptor, K-major or by the descriptor's
// transpose bit, and nothing is copied. Runs before plan_dots, on targets with warpgroup
// dots, where the launch does not ask for mma.sync.
#include "codegen/gpu/passes.hpp"
#include "codegen/gpu/warpgroup_dot.hpp"
#include "codegen/ir/builder.hpp"

#include <algorithm>

namespace tl::gpu {
namespace {

struct DotUse {
  ir::Operation* dot;
  int index;        // 0: A, 1: B
  bool transposed;  // an odd number of transposes between the read and the dot
};

// The dot operands `v` reaches through transposes only; false where some use is anything
// else (a cast, an elementwise op: the tile is needed in registers anyway).
bool dot_uses(ir::Block& scope, const ir::Value* v, bool transposed, std::vector<DotUse>& out) {
  for (auto [user, i] : ir::uses_of(scope, v)) {
    if (user->op == Op::dot && i < 2) {
      out.push_back({user, i, transposed});
      continue;
    }
    if (user->op == Op::trans && user->result()->type.rank() == 2 && dot_uses(scope, user->result(), !transposed, out))
      continue;
    return false;
  }
  return true;
}

bool has_warpgroup_dots(const TargetCapabilities& caps) {
  return std::any_of(caps.matrix_instructions.begin(), caps.matrix_instructions.end(),
                     [](const MatrixInstruction& mi) { return mi.family == MatrixFamily::nvidia_wgmma; });
}

}  // namespace

int split_dot_operand_reads(ir::Function& f, const PlanTarget& t) {
  if (!t.caps || !has_warpgroup_dots(*t.caps) || t.mma_version == 2 || t.num_warps % 4 != 0) return 0;
  std::vector<ir::Operation*> reads;
  ir::walk(f.body, [&](ir::Operation& op) {
    if (op.op == Op::shared_load && op.result()->type.rank() == 2) reads.push_back(&op);
  });
  int split = 0;
  for (ir::Operation* read : reads) {
    std::vector<DotUse> uses;
    if (!dot_uses(f.body, read->result(), false, uses) || uses.size() < 2) continue;
    // Only where every dot it feeds can be a warpgroup dot: an mma.sync dot reads its
    // operand through ldmatrix or a conversion either way.
    if (!std::all_of(uses.begin(), uses.end(), [&](const DotUse& u) {
          return warpgroup_dot_obstacle(*t.caps, *u.dot, t.num_warps, /*operands_known=*/false).empty();
        }))
      continue;
    ir::Builder at(*read->parent);
    at.after(*read);
    for (const DotUse& u : uses) {
      ir::ValueMap same;
      ir::Value* v = at.insert(ir::clone(*read, same)).result();
      if (u.transposed) {
        ir::Type tt = v->type;
        std::swap(tt.shape[0], tt.shape[1]);
        ir::Operation& tr = at.create(Op::trans, {v}, {tt}, u.dot->loc);
        tr.ints = {1, 0};
        v = tr.result();
      }
      u.dot->operands[size_t(u.index)] = v;
    }
    ++split;  // (the old read and its transposes are left to dead-code elimination)
  }
  return split;
}

}  // namespace tl::gpu
