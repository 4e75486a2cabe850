// The flat element index a thread's register holds, as LLVM IR: the XOR of the images
// of the set bits of the register index, the lane id and the warp id (layout.hpp).
//
// XOR is the rule. Where the images of two parts touch disjoint bits (every blocked or
// slice layout: registers, lanes and warps own separate coordinate bits) XOR, OR and
// ADD agree, and ADD is what gets emitted: `base + constant` folds into the immediate
// offset of AMD's global/ds instructions and NVIDIA's [reg+imm] addressing. Where they
// overlap (a swizzled layout, a layout composed with a swizzle) only XOR is right, and
// the code says so.
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Operator.h>

#include "codegen/gpu/lower_context.hpp"

namespace tl::gpu {

namespace {
uint32_t all_bits(const std::vector<uint32_t>& bases) {
  uint32_t m = 0;
  for (uint32_t b : bases) m |= b;
  return m;
}
}  // namespace

IndexPart hardware_bits_to_index(llvm::IRBuilderBase& b, const std::vector<uint32_t>& bases, llvm::Value* id) {
  IndexPart out;
  size_t i = 0;
  while (i < bases.size()) {
    if (bases[i] == 0) {  // a copy: contributes nothing
      ++i;
      continue;
    }
    IndexPart term;
    if ((bases[i] & (bases[i] - 1)) == 0) {
      // A run of id bits whose images are consecutive powers of two: one shift and mask.
      size_t j = i;
      while (j + 1 < bases.size() && bases[j + 1] == bases[j] << 1) ++j;
      int width = int(j - i + 1);
      llvm::Value* field = b.CreateAnd(b.CreateLShr(id, uint64_t(i)), uint64_t((1u << width) - 1));
      int shift = __builtin_ctz(bases[i]);
      term.value = shift ? b.CreateShl(field, uint64_t(shift), "", true, true) : field;
      term.bits = ((1u << width) - 1) << shift;
      i = j + 1;
    } else {  // an image of several bits (a swizzle): the bit selects it
      llvm::Value* bit = b.CreateTrunc(b.CreateLShr(id, uint64_t(i)), b.getInt1Ty());
      term.value = b.CreateSelect(bit, b.getInt32(bases[i]), b.getInt32(0));
      term.bits = bases[i];
      ++i;
    }
    // Terms of one id own separate bits in every unswizzled layout: OR them (what
    // InstCombine would make of an ADD anyway), XOR where a swizzle makes them overlap.
    if (!out.value) out = term;
    else if ((out.bits & term.bits) == 0) out = {b.CreateOr(out.value, term.value), out.bits | term.bits};
    else out = {b.CreateXor(out.value, term.value), out.bits | term.bits};
  }
  if (!out.value) out.value = b.getInt32(0);
  return out;
}

IndexPart combine_index(llvm::IRBuilderBase& b, const IndexPart& x, const IndexPart& y) {
  if (!x.value) return y;
  if (!y.value) return x;
  llvm::Value* v = (x.bits & y.bits) == 0 ? b.CreateAdd(x.value, y.value, "", true, true) : b.CreateXor(x.value, y.value);
  return IndexPart{v, x.bits | y.bits};
}

IndexPart layout_thread_index(llvm::IRBuilderBase& b, const Layout& l, llvm::Value* lane, llvm::Value* warp) {
  IndexPart lp = hardware_bits_to_index(b, l.lane, lane);
  IndexPart wp = hardware_bits_to_index(b, l.warp, warp);
  if (all_bits(l.lane) == 0) return wp;
  if (all_bits(l.warp) == 0) return lp;
  return combine_index(b, lp, wp);
}

llvm::Value* layout_element_index(llvm::IRBuilderBase& b, const Layout& l, const IndexPart& thread, int r) {
  uint32_t rp = l.reg_part(uint32_t(r));
  if (!rp || !thread.value) return rp ? b.getInt32(rp) : thread.value;
  // The register's bits the thread part may also set (a swizzle's) are XORed in; the
  // others are disjoint from everything the XOR can set, so they are added: an
  // immediate offset of the access, so that registers differing only there share one
  // address register.
  const uint32_t x = rp & thread.bits, a = rp & ~thread.bits;
  llvm::Value* v = thread.value;
  if (x) v = b.CreateXor(v, b.getInt32(x));
  if (a) v = b.CreateAdd(v, b.getInt32(a), "", true, true);
  return v;
}

llvm::Value* layout_padded_element_index(llvm::IRBuilderBase& b, const Layout& l, const IndexPart& thread, int r,
                                        const Padding& pad) {
  if (pad.empty()) return layout_element_index(b, l, thread, r);
  // padded(t ^ x | a) = padded(t ^ x) + padded(a): a, the register's bits no lane or warp
  // sets, shares no bit with t ^ x (shared_encoding.hpp's padded_offset).
  const uint32_t rp = l.reg_part(uint32_t(r)), x = rp & thread.bits, a = rp & ~thread.bits;
  llvm::Value* v = thread.value ? thread.value : b.getInt32(0);
  if (x) v = b.CreateXor(v, b.getInt32(x));
  llvm::Value* padded = v;
  for (auto [interval, amount] : pad) {
    llvm::Value* blocks = b.CreateLShr(v, uint64_t(log2_exact(interval)));
    padded = b.CreateAdd(padded, b.CreateMul(blocks, b.getInt32(uint32_t(amount)), "", true, true), "", true, true);
  }
  if (a) padded = b.CreateAdd(padded, b.getInt32(padded_offset(a, pad)), "", true, true);
  return padded;
}

std::vector<uint32_t> evaluate_emitted_indices(const Layout& l) { return evaluate_emitted_padded_indices(l, {}); }

std::vector<uint32_t> evaluate_emitted_padded_indices(const Layout& l, const Padding& pad) {
  // Constant lane and warp ids: the builder folds every instruction the lowering would
  // emit, so the result is exactly what that code computes.
  llvm::LLVMContext ctx;
  llvm::IRBuilder<> b(ctx);
  int lanes = 1 << l.lane.size(), warps = 1 << l.warp.size(), regs = l.num_regs();
  std::vector<uint32_t> out;
  out.reserve(size_t(lanes) * size_t(warps) * size_t(regs));
  for (int w = 0; w < warps; ++w)
    for (int ln = 0; ln < lanes; ++ln) {
      IndexPart t = layout_thread_index(b, l, b.getInt32(uint32_t(ln)), b.getInt32(uint32_t(w)));
      for (int r = 0; r < regs; ++r) {
        auto* c = llvm::cast<llvm::ConstantInt>(layout_padded_element_index(b, l, t, r, pad));
        out.push_back(uint32_t(c->getZExtValue()));
      }
    }
  return out;
}

std::pair<llvm::Value*, int64_t> split_constant(llvm::Value* v, const llvm::DataLayout& dl) {
  int64_t k = 0;
  for (;;) {
    auto* bo = llvm::dyn_cast<llvm::BinaryOperator>(v);
    if (!bo) break;
    bool add = bo->getOpcode() == llvm::Instruction::Add;
    bool disjoint_or = bo->getOpcode() == llvm::Instruction::Or && llvm::cast<llvm::PossiblyDisjointInst>(bo)->isDisjoint();
    if (!add && !disjoint_or) break;
    auto* c = llvm::dyn_cast<llvm::ConstantInt>(bo->getOperand(1));
    llvm::Value* x = bo->getOperand(0);
    if (!c) {
      c = llvm::dyn_cast<llvm::ConstantInt>(bo->getOperand(0));
      x = bo->getOperand(1);
    }
    if (!c || c->getSExtValue() < 0 || !llvm::isKnownNonNegative(x, llvm::SimplifyQuery(dl))) break;
    k += c->getSExtValue();
    v = x;
  }
  return {v, k};
}

}  // namespace tl::gpu
