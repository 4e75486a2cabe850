// The CPU lowering's driver: the kernel entry and its arguments, the walk over the
// tile IR, loops over tiles, and structured control flow (for with carried values, if
// with results).
#include "codegen/cpu/lower.hpp"

#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Metadata.h>

#include <algorithm>
#include <bit>

#include "codegen/integer_ops.hpp"
#include "tl/error.hpp"

namespace tl::codegen::cpu {

using llvm::BasicBlock;
using llvm::PHINode;
using llvm::Type;
using llvm::Value;

std::string kernel_symbol(const std::string& function_name) {
  std::string s = "tl_";
  for (char c : function_name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return s;
}

Lowerer::Lowerer(const ir::Function& f, llvm::Module& m, const CompileOptions& opts, const std::string& symbol,
                 const std::string& features)
    : f_(f), mod_(m), ctx_(m.getContext()), opts_(opts), b_(m.getContext()) {
  auto has = [&](const char* feat) {
    std::string s = "," + features + ",";
    return s.find(std::string(",+") + feat + ",") != std::string::npos;
  };
  has_avx_ = has("avx");
  has_avx512bw_ = has("avx512bw");
  Type* ptr = llvm::PointerType::getUnqual(ctx_);
  Type* i32 = b_.getInt32Ty();
  auto* ft = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i32, i32, i32, i32, i32, i32, ptr}, false);
  fn_ = llvm::Function::Create(ft, llvm::GlobalValue::ExternalLinkage, symbol, mod_);
  const char* names[] = {"args", "pid_x", "pid_y", "pid_z", "nprog_x", "nprog_y", "nprog_z", "ctx"};
  for (unsigned i = 0; i < 8; ++i) fn_->getArg(i)->setName(names[i]);
  fn_->addFnAttr(llvm::Attribute::NoUnwind);
  // Tiles live on the stack; a probe turns a frame larger than the guard page into a
  // clean crash instead of a silent write past it.
  fn_->addFnAttr("probe-stack", "inline-asm");
  fn_->addParamAttr(0, llvm::Attribute::NoAlias);
  fn_->addParamAttr(0, llvm::Attribute::ReadOnly);

  alloca_block_ = BasicBlock::Create(ctx_, "entry", fn_);
  BasicBlock* start = new_block("start");
  llvm::BranchInst::Create(start, alloca_block_);
  b_.SetInsertPoint(start);
  args_ = fn_->getArg(0);
  for (int a = 0; a < 3; ++a) {
    pid_[a] = fn_->getArg(1 + a);
    nprog_[a] = fn_->getArg(4 + a);
  }
  rt_ctx_ = fn_->getArg(7);

  std::string ptr_args;
  for (size_t i = 0; i < f_.body.args.size(); ++i) {
    const ir::Value* a = f_.body.args[i].get();
    if (!a->type.is_scalar())
      throw compile_error(fmt::format("tl cpu: kernel argument {} is a tile; arguments must be scalars", i),
                          f_.loc.file, f_.loc.line);
    Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), args_, 8 * i);
    Value* v = b_.CreateAlignedLoad(mem_type(a->type.dtype), slot, llvm::Align(8),
                                    i < f_.arg_info.size() ? f_.arg_info[i].name : "");
    rep(a).scalar = from_mem(v, a->type.dtype);
    ptr_args += a->type.is_ptr() ? 'p' : '-';
  }
  auto* init = llvm::ConstantDataArray::getString(ctx_, ptr_args, true);
  new llvm::GlobalVariable(mod_, init->getType(), true, llvm::GlobalValue::ExternalLinkage, init,
                           symbol + kPtrArgsSuffix);
}

void Lowerer::run() {
  plan_fusion();
  lower_block(f_.body);
  b_.CreateRetVoid();
}

// ------------------------------------------------------------------------- types

Type* Lowerer::reg_type(DType t) {
  switch (t) {
    case DType::i1: return b_.getInt1Ty();
    case DType::f32: return b_.getFloatTy();
    case DType::f64: return b_.getDoubleTy();
    case DType::ptr: return llvm::PointerType::getUnqual(ctx_);
    default: return b_.getIntNTy(bit_width(t));  // ints, and narrow floats as their codes
  }
}

Type* Lowerer::mem_type(DType t) { return t == DType::i1 ? b_.getInt8Ty() : reg_type(t); }

Value* Lowerer::to_mem(Value* reg, DType t) { return t == DType::i1 ? b_.CreateZExt(reg, b_.getInt8Ty()) : reg; }

Value* Lowerer::from_mem(Value* mem, DType t) {
  return t == DType::i1 ? b_.CreateICmpNE(mem, b_.getInt8(0)) : mem;
}

Value* Lowerer::zero(DType t) { return llvm::Constant::getNullValue(reg_type(t)); }

// ------------------------------------------------------------------------- tiles

TileRep& Lowerer::rep(const ir::Value* v) { return reps_[v]; }

// Scalars and shared buffers (a pointer to the buffer) are SSA values; tiles are buffers.
bool Lowerer::in_ssa(const ir::Type& t) { return t.is_scalar() || t.is_shared(); }

Type* Lowerer::ssa_type(const ir::Type& t) {
  return t.is_shared() ? llvm::PointerType::getUnqual(ctx_) : reg_type(t.dtype);
}

BasicBlock* Lowerer::new_block(const char* name) { return BasicBlock::Create(ctx_, name, fn_); }

Value* Lowerer::alloc_buffer(const ir::Type& t, const char* name) {
  llvm::IRBuilder<> ab(alloca_block_->getTerminator());
  auto* a = ab.CreateAlloca(llvm::ArrayType::get(mem_type(t.dtype), uint64_t(t.numel())), nullptr, name);
  a->setAlignment(llvm::Align(64));
  tag_buffer(a);
  return a;
}

void Lowerer::tag_buffer(llvm::AllocaInst* a) {
  const ir::SrcLoc& at = current_op_ ? current_op_->loc : f_.loc;
  a->setMetadata(kLocMetadata, llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, at.file),
                                                        llvm::ConstantAsMetadata::get(b_.getInt32(at.line))}));
}

Value* Lowerer::alloc_scalar(Type* t, const char* name) {
  llvm::IRBuilder<> ab(alloca_block_->getTerminator());
  return ab.CreateAlloca(t, nullptr, name);
}

Value* Lowerer::buf_ptr(Value* buf, DType t, Value* flat) {
  return b_.CreateInBoundsGEP(mem_type(t), buf, flat ? flat : b_.getInt64(0));
}

Value* Lowerer::load_buf(Value* buf, DType t, Value* flat) {
  return from_mem(b_.CreateLoad(mem_type(t), buf_ptr(buf, t, flat)), t);
}

void Lowerer::store_buf(Value* buf, DType t, Value* flat, Value* reg) {
  b_.CreateStore(to_mem(reg, t), buf_ptr(buf, t, flat));
}

Idx Lowerer::idx_from_dims(const std::vector<int>& shape, std::vector<Value*> dims) {
  Idx idx;
  Value* flat = b_.getInt64(0);
  int64_t stride = 1;
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1) {
      Value* term = stride == 1 ? dims[d] : b_.CreateMul(dims[d], b_.getInt64(stride), "", true, true);
      flat = b_.CreateAdd(flat, term, "", true, true);
    } else {
      dims[d] = b_.getInt64(0);
    }
    stride *= shape[d];
  }
  idx.dims = std::move(dims);
  idx.flat = flat;
  return idx;
}

Idx Lowerer::idx_from_flat(const std::vector<int>& shape, Value* flat) {
  Idx idx;
  idx.flat = flat;
  idx.dims.resize(shape.size());
  int64_t stride = 1;
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] == 1) {
      idx.dims[d] = b_.getInt64(0);
    } else {
      Value* q = stride == 1 ? flat : b_.CreateLShr(flat, std::countr_zero(uint64_t(stride)));
      idx.dims[d] = d == 0 ? q : b_.CreateAnd(q, b_.getInt64(shape[d] - 1));
    }
    stride *= shape[d];
  }
  return idx;
}

// Long tile loops are vectorized (and interleaved) by LoopVectorize; unrolling the
// vector loop again afterwards, or fully unrolling an outer loop of a 2-D tile,
// multiplies the code LLVM must schedule and encode (a large share of the compile time)
// for little gain. Loops nests of a few iterations may still be unrolled.
llvm::MDNode* Lowerer::loop_metadata(bool unroll, bool vectorize) {
  llvm::SmallVector<llvm::Metadata*, 3> ops{nullptr};
  if (!unroll) ops.push_back(llvm::MDNode::get(ctx_, llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")));
  if (!vectorize)
    ops.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                           llvm::ConstantAsMetadata::get(b_.getFalse())}));
  llvm::MDNode* self = llvm::MDNode::getDistinct(ctx_, ops);
  self->replaceOperandWith(0, self);
  return self;
}

void Lowerer::loop_nest(const std::vector<int>& shape, const std::function<void(const Idx&)>& body) {
  std::vector<Value*> dims(shape.size());
  // Returns the iterations of the innermost code per entry into level d, loops emitted
  // by the body included.
  std::function<int64_t(size_t)> level = [&](size_t d) -> int64_t {
    if (d == shape.size()) {
      int64_t saved_enclosing = enclosing_trips_, saved_nested = nested_work_;
      for (int e : shape) enclosing_trips_ *= e;
      nested_work_ = 1;
      forget_elements();
      body(idx_from_dims(shape, dims));
      forget_elements();
      int64_t inner = nested_work_;
      enclosing_trips_ = saved_enclosing;
      nested_work_ = saved_nested;
      return inner;
    }
    if (shape[d] == 1) {
      dims[d] = b_.getInt64(0);
      return level(d + 1);
    }
    // Bottom-tested: a tile dimension is never empty. The shape of the loop (one i64
    // induction variable from 0, unit step, constant trip count) is what the vectorizer
    // handles best.
    BasicBlock* pre = b_.GetInsertBlock();
    BasicBlock* loop = new_block("loop");
    BasicBlock* exit = new_block("loop.end");
    b_.CreateBr(loop);
    b_.SetInsertPoint(loop);
    PHINode* iv = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
    iv->addIncoming(b_.getInt64(0), pre);
    dims[d] = iv;
    int64_t outer = enclosing_trips_;
    for (size_t e = 0; e < d; ++e) outer *= shape[e];
    int64_t work = shape[d] * level(d + 1);
    Value* next = b_.CreateAdd(iv, b_.getInt64(1), "", true, true);
    iv->addIncoming(next, b_.GetInsertBlock());
    auto* br = b_.CreateCondBr(b_.CreateICmpULT(next, b_.getInt64(shape[d])), loop, exit);
    // Tiny loops may unroll; a larger one only when everything around it is tiny too
    // (else LLVM unrolls it and vectorizes the loop outside across it, with gathers).
    bool unroll = !(work > kUnrollLimit || (work > kSmallLoop && outer * work > kUnrollLimit));
    if (!unroll || scalar_loops_) br->setMetadata(llvm::LLVMContext::MD_loop, loop_metadata(unroll, !scalar_loops_));
    b_.SetInsertPoint(exit);
    return work;
  };
  int64_t work = level(0);
  nested_work_ = std::max(nested_work_, work);
}

Value* Lowerer::elem(const ir::Value* v, const Idx& idx) {
  TileRep& t = rep(v);
  if (t.scalar) return t.scalar;
  if (t.buf) return load_buf(t.buf, v->type.dtype, idx.flat);
  if (!t.remat || !v->def) throw compile_error("tl cpu: a value is used before it is defined (lowering bug)");
  auto key = std::make_pair(static_cast<const void*>(v), static_cast<const void*>(idx.flat));
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  Value* r = compute(*v->def, idx);
  memo_[key] = r;
  return r;
}

void Lowerer::copy_into(Value* buf, const ir::Value* v) {
  if (rep(v).buf == buf) return;
  DType t = v->type.dtype;
  loop_nest(v->type.shape, [&](const Idx& idx) { store_buf(buf, t, idx.flat, elem(v, idx)); });
}

// ------------------------------------------------------------------------- ops

void Lowerer::lower_block(const ir::Block& blk) {
  for (auto& op : blk.ops) lower_op(*op);
}

void Lowerer::lower_op(const ir::Operation& op) {
  // (Restored on the way out: a loop's or branch's own buffers follow its body's ops.)
  struct Current {
    const ir::Operation*& slot;
    const ir::Operation* saved;
    ~Current() { slot = saved; }
  } current{current_op_, current_op_};
  current_op_ = &op;
  switch (op.op) {
    case Op::yield: return;  // the enclosing for/if reads it
    case Op::barrier: return;  // a CPU program is one thread: nothing to wait for
    // A CPU launch starts after the previous one has returned: nothing to wait for, nothing
    // to let start early.
    case Op::gdc_wait: case Op::gdc_launch_dependents: return;
    case Op::for_: return lower_for(op);
    case Op::if_: return lower_if(op);
    case Op::while_: return lower_while(op);
    case Op::reduce: return lower_reduce(op);
    case Op::scan: return lower_scan(op);
    case Op::sort: return lower_sort(op);
    case Op::histogram: return lower_histogram(op);
    case Op::dot: return lower_dot(op);
    case Op::assert_: return lower_assert(op);
    case Op::print: return lower_print(op);
    case Op::assume: {
      // The user's promise, for LLVM too (as Triton's tl.assume): false is undefined behaviour.
      llvm::Value* c = elem(op.operands[0], Idx{});
      if (!c->getType()->isIntegerTy(1)) c = b_.CreateICmpNE(c, llvm::Constant::getNullValue(c->getType()));
      b_.CreateAssumption(c);
      return;
    }
    case Op::shared_alloc: {
      // A CPU program is one thread, so its "shared" memory is a stack buffer of the
      // buffer's bytes, held as a pointer (an SSA value loops and branches pass on).
      const ir::Type& t = op.result()->type;
      llvm::IRBuilder<> ab(alloca_block_->getTerminator());
      auto* a = ab.CreateAlloca(llvm::ArrayType::get(mem_type(t.dtype), uint64_t(t.numel() * t.stages)), nullptr,
                                "shared");
      a->setAlignment(llvm::Align(64));
      tag_buffer(a);
      rep(op.result()).scalar = a;
      return;
    }
    case Op::shared_store: return lower_shared_store(op);
    case Op::global_load_to_shared: return lower_global_load_to_shared(op);
    case Op::async_wait: return;  // the CPU's copy is done when it returns: nothing in flight
    case Op::tensor_map_load:  // (only a launch for NVIDIA sm_90 traces one)
    case Op::mbarrier:         // (the pipeliner's, for those)
    case Op::tensor_map_store:
      throw compile_error("tensor_map_load: a TMA copy in a program compiled for the CPU (a tl bug)", op.loc.file,
                          op.loc.line);
    case Op::inline_asm_elementwise:  // (the tracer takes the fallback on the CPU; a trace made for a GPU lands here)
      throw compile_error("tl::inline_asm_elementwise: the CPU has no assembly to run; give the call a fallback lambda",
                          op.loc.file, op.loc.line);
    case Op::store:
      if (op.operands[0]->type.is_scalar()) store_elem(op, Idx{});
      else memory_loop(op, [&](const Idx& idx) { store_elem(op, idx); });
      return;
    default: break;
  }
  if (op.results.size() != 1) throw compile_error(fmt::format("tl cpu: unexpected op '{}'", op_name(op.op)), op.loc.file, op.loc.line);
  const ir::Value* r = op.result();
  if (r->type.is_scalar()) rep(r).scalar = compute(op, Idx{});
  else if (is_rematerializable(op)) rep(r).remat = true;
  else materialize(op);
}

void Lowerer::materialize(const ir::Operation& op) {
  const ir::Value* r = op.result();
  Value* buf = alloc_buffer(r->type, op_name(op.op));
  DType t = r->type.dtype;
  auto body = [&](const Idx& idx) { store_buf(buf, t, idx.flat, compute(op, idx)); };
  if (op.op == Op::load) memory_loop(op, body);
  else loop_nest(r->type.shape, body);
  rep(r).buf = buf;
}

// ------------------------------------------------------------------------- for

void Lowerer::reads_of_carried(const ir::Value* v, bool remapped, const std::vector<Value*>& carried,
                               std::vector<std::pair<Value*, bool>>& out, std::vector<const ir::Value*>& seen) {
  TileRep& t = rep(v);
  if (t.scalar) return;
  if (t.buf) {
    if (std::find(carried.begin(), carried.end(), t.buf) != carried.end()) out.push_back({t.buf, remapped});
    return;
  }
  if (std::find(seen.begin(), seen.end(), v) != seen.end()) return;
  seen.push_back(v);
  const ir::Operation& op = *v->def;
  bool moves = op.op == Op::broadcast || op.op == Op::trans || op.op == Op::join || op.op == Op::split ||
               op.op == Op::cat || op.op == Op::flip || op.op == Op::gather;  // element i reads elsewhere
  for (const ir::Value* o : op.operands) reads_of_carried(o, remapped || moves, carried, out, seen);
}

void Lowerer::yield_tiles(const std::vector<Value*>& carried, const std::vector<const ir::Value*>& yielded) {
  // A copy into carried buffer i is safe in place if it reads no carried buffer other
  // than i, and i only at the element being written. Others go through a temporary,
  // all of which are filled before any carried buffer changes (a swap of two carried
  // tiles, a transposed carried tile).
  std::vector<std::pair<size_t, Value*>> staged;
  std::vector<size_t> direct;
  for (size_t i = 0; i < carried.size(); ++i) {
    if (!carried[i] || rep(yielded[i]).buf == carried[i]) continue;
    std::vector<std::pair<Value*, bool>> reads;
    std::vector<const ir::Value*> seen;
    reads_of_carried(yielded[i], false, carried, reads, seen);
    bool safe = std::all_of(reads.begin(), reads.end(), [&](auto& r) { return r.first == carried[i] && !r.second; });
    if (safe) {
      direct.push_back(i);
    } else {
      Value* tmp = alloc_buffer(yielded[i]->type, "yield.tmp");
      copy_into(tmp, yielded[i]);
      staged.push_back({i, tmp});
    }
  }
  // Direct copies may read their own destination only, so their order does not matter,
  // but they must not run before a staged copy has read the buffer they write.
  for (size_t i : direct) copy_into(carried[i], yielded[i]);
  for (auto& [i, tmp] : staged) {
    DType t = yielded[i]->type.dtype;
    Value* dst = carried[i];
    Value* src = tmp;
    loop_nest(yielded[i]->type.shape, [&](const Idx& idx) { store_buf(dst, t, idx.flat, load_buf(src, t, idx.flat)); });
  }
}

void Lowerer::lower_for(const ir::Operation& op) {
  Value* lb = elem(op.operands[0], Idx{});
  Value* ub = elem(op.operands[1], Idx{});
  Value* step = elem(op.operands[2], Idx{});
  const ir::Block& body = *op.regions[0];
  const size_t n = op.results.size();

  std::vector<Value*> bufs(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    const ir::Value* arg = body.args[1 + i].get();
    if (in_ssa(arg->type)) continue;
    bufs[i] = alloc_buffer(arg->type, "carried");
    copy_into(bufs[i], op.operands[3 + i]);
    rep(arg).buf = bufs[i];
  }
  // The trips are counted (codegen/integer_ops.hpp): a negative step runs downward, and
  // no bound near INT_MAX makes the induction variable wrap into an endless loop. A step
  // of 0 at run time would never end: it is a kernel fault naming the loop's line.
  if (!llvm::isa<llvm::ConstantInt>(step) || llvm::cast<llvm::ConstantInt>(step)->isZero()) {
    BasicBlock* ok = new_block("for.step_ok");
    b_.CreateCondBr(b_.CreateICmpNE(step, b_.getInt32(0)), ok,
                    fault_block(kFaultRuntimeError, op, "tl::range: the step is 0, so the loop would never end"));
    b_.SetInsertPoint(ok);
  }
  Value* trips = loop_trip_count(b_, lb, ub, step);
  BasicBlock* pre = b_.GetInsertBlock();
  BasicBlock* header = new_block("for.header");
  BasicBlock* loop_body = new_block("for.body");
  BasicBlock* exit = new_block("for.end");
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  PHINode* iv = b_.CreatePHI(b_.getInt32Ty(), 2, "iv");
  iv->addIncoming(lb, pre);
  PHINode* left = b_.CreatePHI(b_.getInt32Ty(), 2, "trips.left");
  left->addIncoming(trips, pre);
  rep(body.args[0].get()).scalar = iv;
  std::vector<PHINode*> phis(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    const ir::Value* arg = body.args[1 + i].get();
    if (!in_ssa(arg->type)) continue;
    phis[i] = b_.CreatePHI(ssa_type(arg->type), 2, "carried");
    phis[i]->addIncoming(elem(op.operands[3 + i], Idx{}), pre);
    rep(arg).scalar = phis[i];
  }
  b_.CreateCondBr(b_.CreateICmpNE(left, b_.getInt32(0)), loop_body, exit);

  b_.SetInsertPoint(loop_body);
  lower_block(body);
  const ir::Operation* y = body.terminator();
  std::vector<const ir::Value*> yielded(y->operands.begin(), y->operands.end());
  std::vector<Value*> scalar_next(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (phis[i]) scalar_next[i] = elem(yielded[i], Idx{});
  yield_tiles(bufs, yielded);
  Value* next = b_.CreateAdd(iv, step, "iv.next");  // (after the last trip it may wrap: unused)
  BasicBlock* latch = b_.GetInsertBlock();
  iv->addIncoming(next, latch);
  left->addIncoming(b_.CreateSub(left, b_.getInt32(1)), latch);
  for (size_t i = 0; i < n; ++i)
    if (phis[i]) phis[i]->addIncoming(scalar_next[i], latch);
  b_.CreateBr(header);

  b_.SetInsertPoint(exit);
  for (size_t i = 0; i < n; ++i) {
    // The carried buffer holds the final value; nothing writes it again before the
    // result's last use (the loop runs again only in a later iteration of an enclosing
    // loop, after this one's uses).
    if (phis[i]) rep(op.result(int(i))).scalar = phis[i];
    else rep(op.result(int(i))).buf = bufs[i];
  }
}

// ------------------------------------------------------------------------- while

// while.cond: the condition region on the carried values (phis, or the carried
// buffers), then a branch on its condition: to while.body with the values it passes on,
// or out with them as the results. Tiles it passes on are copied into buffers of their
// own (`passed`), which the body reads and the results are; the body's yield is copied
// into the carried buffers for the next round, as a for loop's.
void Lowerer::lower_while(const ir::Operation& op) {
  const ir::Block& before = *op.regions[0];
  const ir::Block& after = *op.regions[1];
  const size_t n = op.results.size();
  std::vector<Value*> carried(n, nullptr), passed(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& t = op.result(int(i))->type;
    if (in_ssa(t)) continue;
    carried[i] = alloc_buffer(t, "while.carried");
    passed[i] = alloc_buffer(t, "while.passed");
    copy_into(carried[i], op.operands[i]);
    rep(before.args[i].get()).buf = carried[i];
  }
  BasicBlock* pre = b_.GetInsertBlock();
  BasicBlock* header = new_block("while.cond");
  BasicBlock* body = new_block("while.body");
  BasicBlock* exit = new_block("while.end");
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  std::vector<PHINode*> phis(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    if (carried[i]) continue;
    phis[i] = b_.CreatePHI(ssa_type(op.operands[i]->type), 2, "while.carried");
    phis[i]->addIncoming(elem(op.operands[i], Idx{}), pre);
    rep(before.args[i].get()).scalar = phis[i];
  }
  lower_block(before);
  const ir::Operation* cond = before.terminator();
  Value* go_on = elem(cond->operands[0], Idx{});
  for (size_t i = 0; i < n; ++i) {
    const ir::Value* v = cond->operands[1 + i];
    if (passed[i]) {
      copy_into(passed[i], v);
      rep(after.args[i].get()).buf = passed[i];
      rep(op.result(int(i))).buf = passed[i];
    } else {
      Value* s = elem(v, Idx{});
      rep(after.args[i].get()).scalar = s;
      rep(op.result(int(i))).scalar = s;  // (the exit's only predecessor is this block)
    }
  }
  b_.CreateCondBr(go_on, body, exit);

  b_.SetInsertPoint(body);
  lower_block(after);
  const ir::Operation* y = after.terminator();
  std::vector<const ir::Value*> yielded(y->operands.begin(), y->operands.end());
  std::vector<Value*> scalar_next(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (phis[i]) scalar_next[i] = elem(yielded[i], Idx{});
  yield_tiles(carried, yielded);
  BasicBlock* latch = b_.GetInsertBlock();
  for (size_t i = 0; i < n; ++i)
    if (phis[i]) phis[i]->addIncoming(scalar_next[i], latch);
  b_.CreateBr(header);
  b_.SetInsertPoint(exit);
}

// ------------------------------------------------------------------------- if

void Lowerer::lower_if(const ir::Operation& op) {
  Value* cond = elem(op.operands[0], Idx{});
  const size_t n = op.results.size();
  std::vector<Value*> bufs(n, nullptr);
  for (size_t i = 0; i < n; ++i)
    if (!in_ssa(op.result(int(i))->type)) bufs[i] = alloc_buffer(op.result(int(i))->type, "if.result");
  BasicBlock* blocks[2] = {new_block("then"), new_block("else")};
  BasicBlock* join = new_block("if.end");
  b_.CreateCondBr(cond, blocks[0], blocks[1]);
  std::vector<Value*> scalars[2];
  BasicBlock* ends[2];
  for (int r = 0; r < 2; ++r) {
    b_.SetInsertPoint(blocks[r]);
    const ir::Block& region = *op.regions[r];
    lower_block(region);
    const ir::Operation* y = region.terminator();
    for (size_t i = 0; i < n; ++i) {
      if (bufs[i]) copy_into(bufs[i], y->operands[i]);
      scalars[r].push_back(bufs[i] ? nullptr : elem(y->operands[i], Idx{}));
    }
    ends[r] = b_.GetInsertBlock();
    b_.CreateBr(join);
  }
  b_.SetInsertPoint(join);
  for (size_t i = 0; i < n; ++i) {
    if (bufs[i]) {
      rep(op.result(int(i))).buf = bufs[i];
      continue;
    }
    PHINode* phi = b_.CreatePHI(ssa_type(op.result(int(i))->type), 2);
    phi->addIncoming(scalars[0][i], ends[0]);
    phi->addIncoming(scalars[1][i], ends[1]);
    rep(op.result(int(i))).scalar = phi;
  }
}

// ------------------------------------------------------------------------- runtime

llvm::FunctionCallee Lowerer::fault_fn() {
  Type* ptr = llvm::PointerType::getUnqual(ctx_);
  Type* i32 = b_.getInt32Ty();
  auto* ft = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i32, ptr, i32, ptr, i32, i32, i32}, false);
  auto c = mod_.getOrInsertFunction(kFaultFn, ft);
  if (auto* fn = llvm::dyn_cast<llvm::Function>(c.getCallee())) {
    fn->addFnAttr(llvm::Attribute::Cold);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
  }
  return c;
}

llvm::FunctionCallee Lowerer::print_fn() {
  Type* ptr = llvm::PointerType::getUnqual(ctx_);
  Type* i32 = b_.getInt32Ty();
  auto* ft = llvm::FunctionType::get(b_.getVoidTy(),
                                     {ptr, ptr, i32, i32, i32, b_.getInt64Ty(), b_.getDoubleTy(), i32}, false);
  auto c = mod_.getOrInsertFunction(kPrintFn, ft);
  if (auto* fn = llvm::dyn_cast<llvm::Function>(c.getCallee())) fn->addFnAttr(llvm::Attribute::NoUnwind);
  return c;
}

llvm::FunctionCallee Lowerer::check_fn() {
  Type* ptr = llvm::PointerType::getUnqual(ctx_);
  auto* ft = llvm::FunctionType::get(b_.getInt32Ty(), {ptr, b_.getInt64Ty(), b_.getInt64Ty()}, false);
  auto c = mod_.getOrInsertFunction(kCheckFn, ft);
  if (auto* fn = llvm::dyn_cast<llvm::Function>(c.getCallee())) fn->addFnAttr(llvm::Attribute::NoUnwind);
  return c;
}

}  // namespace tl::codegen::cpu
