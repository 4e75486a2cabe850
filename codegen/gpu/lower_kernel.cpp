// The GPU lowering's driver: the kernel function and its ABI, the value maps (eager and
// lazy; conversions are convert_layout ops), thread geometry, and structured control
// flow (for, if).
#include <fmt/format.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <nlohmann/json.hpp>

#include "codegen/gpu/lower_context.hpp"
#include "codegen/integer_ops.hpp"
#include "codegen/gpu/shared_encoding.hpp"
#include "tl/error.hpp"

namespace tl::gpu {

std::string lowering_result_json(const LoweringResult& r) {
  return nlohmann::json{{"kernel_symbol", r.kernel_symbol},
                        {"block_threads", r.block_threads},
                        {"shared_bytes", r.shared_bytes},
                        {"dynamic_shared_bytes", r.dynamic_shared_bytes},
                        {"remarks", r.remarks}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

LoweringResult lowering_result_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  LoweringResult r;
  r.kernel_symbol = j.at("kernel_symbol").get<std::string>();
  r.block_threads = j.at("block_threads").get<int>();
  r.shared_bytes = j.at("shared_bytes").get<int>();
  r.dynamic_shared_bytes = j.at("dynamic_shared_bytes").get<int>();
  r.remarks = j.at("remarks").get<std::vector<std::string>>();
  return r;
}

std::string kernel_symbol(const std::string& name) {
  std::string s = name.empty() ? "kernel" : name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (std::isdigit(static_cast<unsigned char>(s[0]))) s = "k_" + s;
  return s;
}

Lowerer::Lowerer(const ir::Function& f, llvm::Module& m, const codegen::CompileOptions& opts, GpuHooks& hooks)
    : f_(f), m_(m), ctx_(m.getContext()), opts_(opts), hooks_(hooks), b(m.getContext()), axis_(f) {
  ws_ = hooks.wave_size();
  // The warps the planning made every layout for, recorded in the IR (a power of two
  // within the target's threads: codegen/pipeline.cpp).
  nw_ = f.num_warps;
  if (nw_ < 1)
    throw compile_error("gpu lowering: a function the GPU planning did not plan (no num_warps; a tl bug)", f.loc.file,
                        f.loc.line);
  threads_ = ws_ * nw_;
  info_.block_threads = threads_;
  info_.waves_per_eu = opts.waves_per_eu;
  plan_ = LayoutPlan(f, hooks.capabilities(), ws_, nw_);
}

void Lowerer::fail(const ir::Operation& op, const std::string& what) {
  throw compile_error(what, op.loc.file, op.loc.line);
}

// ------------------------------------------------------------------ the kernel

LoweringResult Lowerer::run() {
  std::vector<llvm::Type*> params;
  auto tensor_map = [&](size_t i) { return i < f_.arg_info.size() && f_.arg_info[i].tensor_map; };
  for (size_t i = 0; i < f_.body.args.size(); ++i) {
    DType t = f_.body.args[i]->type.dtype;
    if (tensor_map(i)) params.push_back(b.getPtrTy());  // (byval: the pointer to the param's copy)
    else params.push_back(t == DType::i1 ? b.getInt8Ty() : reg_type(t));  // bool travels as a byte
  }
  auto* fty = llvm::FunctionType::get(b.getVoidTy(), params, false);
  std::string name = kernel_symbol(f_.name);
  fn_ = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, name, m_);
  for (size_t i = 0; i < f_.body.args.size(); ++i) {
    const ir::Value* a = f_.body.args[i].get();
    llvm::Argument* arg = fn_->getArg(unsigned(i));
    arg->setName(i < f_.arg_info.size() && !f_.arg_info[i].name.empty() ? f_.arg_info[i].name : fmt::format("arg{}", i));
    arg->addAttr(llvm::Attribute::NoUndef);
    if (tensor_map(i)) {
      // A CUtensorMap by value (CUDA's `const __grid_constant__ CUtensorMap`, as Triton
      // passes it): 128 bytes, 64-byte aligned, read in place through its generic address.
      arg->addAttr(llvm::Attribute::getWithByValType(ctx_, llvm::ArrayType::get(b.getInt8Ty(), 128)));
      arg->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
      arg->addAttr(llvm::Attribute::get(ctx_, "nvvm.grid_constant"));
      continue;
    }
    if (a->type.is_ptr() && i < f_.arg_info.size() && f_.arg_info[i].divisible_by_16)
      arg->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(16)));
  }

  entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  auto* body = llvm::BasicBlock::Create(ctx_, "body", fn_);
  b.SetInsertPoint(entry_);
  tid_ = hooks_.thread_id(b);
  lane_ = ws_ == 1 ? b.getInt32(0) : b.CreateAnd(tid_, b.getInt32(ws_ - 1), "lane");
  warp_ = hooks_.warp_id(b, tid_);
  b.CreateBr(body);
  b.SetInsertPoint(body);

  for (size_t i = 0; i < f_.body.args.size(); ++i) {
    const ir::Value* a = f_.body.args[i].get();
    llvm::Value* v = fn_->getArg(unsigned(i));
    if (a->type.dtype == DType::i1) v = b.CreateTrunc(v, b.getInt1Ty());
    scalars_[a] = v;
  }
  smem_setup();
  collect_operand_reads_by_dot();
  scopes_.emplace_back();
  lower_block(f_.body);
  b.CreateRetVoid();
  scopes_.pop_back();

  int64_t dynamic_bytes = 0;
  int64_t total = smem_ ? smem_total() : 0;
  if (smem_) {
    // The placeholder of size 0 becomes the array the user's buffers and the scratch
    // region fit in: a static array up to the target's static limit, else an external
    // array of unknown size (CUDA's `extern __shared__ char tl_shared[]`) whose bytes the
    // launch provides.
    llvm::GlobalVariable* g = nullptr;
    if (total <= hooks_.capabilities().static_shared_limit) {
      auto* ty = llvm::ArrayType::get(b.getInt8Ty(), uint64_t(total));
      g = new llvm::GlobalVariable(m_, ty, false, llvm::GlobalValue::InternalLinkage, llvm::PoisonValue::get(ty),
                                   "tl_shared", nullptr, llvm::GlobalValue::NotThreadLocal,
                                   hooks_.shared_address_space());
    } else {
      auto* ty = llvm::ArrayType::get(b.getInt8Ty(), 0);
      g = new llvm::GlobalVariable(m_, ty, false, llvm::GlobalValue::ExternalLinkage, nullptr, "tl_shared", nullptr,
                                   llvm::GlobalValue::NotThreadLocal, hooks_.shared_address_space());
      dynamic_bytes = total;
    }
    // With user buffers, a bank row (128 bytes): the allocator aligns large buffers and
    // the scratch region to one, relative to this array. Without, the 16 of before.
    // A buffer read through wgmma descriptors asks more (its swizzle pattern, 1024 bytes).
    int64_t align = smem_plan_.buffers.empty() ? 16 : 128;
    for (const SharedBuffer& buf : smem_plan_.buffers) align = std::max(align, buf.align);
    g->setAlignment(llvm::Align(uint64_t(align)));
    smem_->replaceAllUsesWith(g);
    smem_->eraseFromParent();
    smem_ = g;
  }
  hooks_.finish_kernel(*fn_, info_);
  LoweringResult result{name, threads_, int(total), int(dynamic_bytes), {}};
  return result;
}

LoweringResult lower_kernel(const ir::Function& f, llvm::Module& module, const codegen::CompileOptions& opts,
                            GpuHooks& hooks) {
  Lowerer l(f, module, opts, hooks);
  return l.run();
}

// ------------------------------------------------------------------ values

llvm::Value* Lowerer::scalar(const ir::Value* v) {
  auto it = scalars_.find(v);
  if (it == scalars_.end())
    throw compile_error(fmt::format("gpu lowering: scalar {} used before it was lowered", v->type.str()));
  return it->second;
}

Layout Lowerer::preferred_layout(const ir::Value* v) {
  if (v->type.is_scalar()) return scalar_layout(ws_, nw_);
  return plan_.of(v);
}

const Regs& Lowerer::natural(const ir::Value* v) {
  auto it = natural_.find(v);
  if (it == natural_.end())
    throw compile_error(fmt::format("gpu lowering: tile {} used before it was lowered", v->type.str()));
  return it->second;
}

void Lowerer::set_natural(const ir::Value* v, Regs r) {
  if (int(r.v.size()) != r.layout.num_regs())
    throw compile_error(fmt::format("gpu lowering: {} registers for a layout of {}", r.v.size(), r.layout.num_regs()));
  // The lowering only carries out the plan; a value made in another layout is a tl bug.
  if (!(r.layout == plan_.of(v)))
    throw compile_error(fmt::format("gpu lowering: a {} made in {} where the layout plan says {}", v->type.str(),
                                    r.layout.str(), plan_.of(v).str()));
  info_.max_regs_per_value = std::max(info_.max_regs_per_value, int(r.v.size()));
  natural_[v] = std::move(r);
}

Values Lowerer::get(const ir::Value* v, const Layout& l) {
  if (v->type.is_scalar()) return Values(l.num_regs(), scalar(v));
  auto key = std::make_pair(v, l.str());
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(key);
    if (f != it->end()) return f->second;
  }
  if (!is_lazy(v)) {
    // Every change of layout is a convert_layout the middle end inserted
    // (insert_layout_conversions): a value asked for in another layout is a tl bug.
    const Regs& n = natural(v);
    if (n.layout == l) return n.v;
    throw compile_error(fmt::format("gpu lowering: a {} in {} read in {} without a planned convert_layout (a tl bug)",
                                    v->type.str(), n.layout.str(), l.str()));
  }
  Values out = lazy_value(v, l);
  scopes_.back()[key] = out;
  return out;
}

// ------------------------------------------------------------------ thread geometry

const IndexPart& Lowerer::thread_index(const Layout& l) {
  std::string key = fmt::format("{}|{}", fmt::join(l.lane, ","), fmt::join(l.warp, ","));
  auto it = thread_offsets_.find(key);
  if (it != thread_offsets_.end()) return it->second;
  llvm::IRBuilderBase::InsertPointGuard guard(b);
  b.SetInsertPoint(entry_->getTerminator());
  return thread_offsets_[key] = layout_thread_index(b, l, lane_, warp_);
}

llvm::Value* Lowerer::element_index(const Layout& l, int r) { return layout_element_index(b, l, thread_index(l), r); }

llvm::Value* Lowerer::owner_predicate(const Layout& l, bool ignore_warp_copies) {
  uint32_t lm = 0, wm = 0;
  for (size_t i = 0; i < l.lane.size(); ++i)
    if (l.lane[i] == 0) lm |= 1u << i;
  if (!ignore_warp_copies)
    for (size_t i = 0; i < l.warp.size(); ++i)
      if (l.warp[i] == 0) wm |= 1u << i;
  if (!lm && !wm) return nullptr;
  std::string key = fmt::format("owner|{}|{}", lm, wm);
  auto it = owner_predicates_.find(key);
  if (it != owner_predicates_.end()) return it->second;
  llvm::IRBuilderBase::InsertPointGuard guard(b);
  b.SetInsertPoint(entry_->getTerminator());
  llvm::Value* c = nullptr;
  if (lm) c = b.CreateICmpEQ(b.CreateAnd(lane_, lm), b.getInt32(0));
  if (wm) {
    llvm::Value* w = b.CreateICmpEQ(b.CreateAnd(warp_, wm), b.getInt32(0));
    c = c ? b.CreateAnd(c, w) : w;
  }
  return owner_predicates_[key] = c;
}

// ------------------------------------------------------------------ control-flow helpers

void Lowerer::if_then(llvm::Value* cond, const std::function<void()>& body) {
  if (!cond) return body();
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
  auto* cont = llvm::BasicBlock::Create(ctx_, "cont", fn_);
  b.CreateCondBr(cond, then_bb, cont);
  b.SetInsertPoint(then_bb);
  body();
  b.CreateBr(cont);
  b.SetInsertPoint(cont);
}

llvm::Value* Lowerer::if_then_value(llvm::Value* cond, const std::function<llvm::Value*()>& body,
                                    llvm::Value* otherwise) {
  if (!cond) return body();
  llvm::BasicBlock* from = b.GetInsertBlock();
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
  auto* cont = llvm::BasicBlock::Create(ctx_, "cont", fn_);
  b.CreateCondBr(cond, then_bb, cont);
  b.SetInsertPoint(then_bb);
  llvm::Value* v = body();
  llvm::BasicBlock* then_end = b.GetInsertBlock();
  b.CreateBr(cont);
  b.SetInsertPoint(cont);
  llvm::PHINode* phi = b.CreatePHI(v->getType(), 2);
  phi->addIncoming(v, then_end);
  phi->addIncoming(otherwise, from);
  return phi;
}

// ------------------------------------------------------------------ ops and regions

void Lowerer::lower_block(const ir::Block& blk) {
  for (size_t i = 0; i < blk.ops.size(); ++i) {
    const ir::Operation& op = *blk.ops[i];
    if (op.op == Op::yield) continue;
    // A compiler's barrier right before an exchange through scratch (insert_shared_barriers
    // puts it there for the exchange's writes) waits where those writes begin.
    if (op.op == Op::barrier && op.i0 != 0 && i + 1 < blk.ops.size() && blk.ops[i + 1]->smem &&
        blk.ops[i + 1]->op != Op::shared_alloc) {
      deferred_barrier_ = true;
      continue;
    }
    const ir::Operation* outer = lowering_op_;
    lowering_op_ = &op;
    lower_op(op);
    lowering_op_ = outer;
    if (deferred_barrier_) barrier();  // (an exchange whose lowering wrote no scratch after all)
  }
}

void Lowerer::lower_op(const ir::Operation& op) {
  switch (op.op) {
    case Op::for_: return lower_for(op);
    case Op::if_: return lower_if(op);
    case Op::while_: return lower_while(op);
    case Op::load: return lower_load(op);
    case Op::store: return lower_store(op);
    case Op::atomic_rmw: case Op::atomic_cas: return lower_atomic(op);
    case Op::reduce: return lower_reduce(op);
    case Op::scan: return lower_scan(op);
    case Op::sort: return lower_sort(op);
    case Op::histogram: return lower_histogram(op);
    case Op::assert_: return lower_assert(op);
    case Op::assume:
      // The user's promise feeds tl's own analyses (axis_analysis.cpp), which is where it
      // pays; it is not passed on as llvm.assume here: on AMD that cost registers
      // (Triton's tutorial 03 with its 8 tl.assume lines, 128x256x32 on gfx942: 235
      // VGPRs without the llvm.assume calls, 290 with them), as the assumed comparisons
      // and their operands are kept alive to the end of the kernel. (The CPU passes them on.)
      return;
    case Op::barrier: return barrier(op.i0 == 0);
    case Op::shared_alloc: return lower_shared_alloc(op);
    case Op::shared_load: return lower_shared_load(op);
    case Op::shared_store: return lower_shared_store(op);
    case Op::global_load_to_shared: return lower_global_load_to_shared(op);
    case Op::async_wait: return lower_async_wait(op);
    case Op::tensor_map_load: return lower_tensor_map_load(op);
    case Op::mbarrier: return lower_mbarrier(op);
    case Op::tensor_map_store: return lower_tensor_map_store(op);
    case Op::print:
      fail(op, fmt::format("device_print is not supported on {} yet", hooks_.target_name()));
    case Op::dot: return lower_dot(op);
    case Op::convert_layout: return lower_convert_layout(op);
    case Op::join: case Op::split: case Op::cat: case Op::flip: case Op::gather: return lower_move_op(op);
    case Op::dot_wait: return lower_dot_wait(op);
    case Op::fence_async_shared: return lower_fence_async_shared(op);
    case Op::gdc_wait: return hooks_.grid_dependency_wait(b);
    case Op::gdc_launch_dependents: return hooks_.grid_dependency_launch_dependents(b);
    case Op::inline_asm_elementwise: return lower_inline_asm(op);
    case Op::constant:
      return set_scalar(op.result(), constant(op.result()->type.dtype, op.f, op.i0));
    case Op::program_id:
      info_.uses_program_id[op.i0] = true;
      return set_scalar(op.result(), hooks_.program_id(b, int(op.i0)));
    case Op::num_programs:
      info_.uses_num_programs = true;
      return set_scalar(op.result(), hooks_.num_programs(b, int(op.i0), threads_));
    default:
      break;
  }
  const ir::Value* res = op.result();
  switch (op.op) {
    case Op::splat: case Op::broadcast: case Op::reshape: case Op::expand_dims: case Op::trans: case Op::arange:
      if (deferred_values_.count(res)) return;  // the transpose of a read its dot makes (lower_dot.cpp)
      if (res->type.is_scalar()) {  // a one-element tile back to a scalar: every thread holds it
        const ir::Value* src = op.operands[0];
        set_scalar(res, get(src, preferred_layout(src))[0]);
        return;
      }
      if (!is_lazy(res)) lower_shape_op(op);
      return;
    default:
      break;
  }
  if (deferred_values_.count(res)) return;  // a cast of a read its dot makes (lower_dot.cpp)
  if (res->type.is_scalar()) {
    Values args;
    for (const ir::Value* v : op.operands) args.push_back(scalar(v));
    return set_scalar(res, element(op, args));
  }
  if (!is_lazy(res)) lower_elementwise_tile(op);
}

namespace {
// Scalars, and shared buffers (their base pointer), are one LLVM value in every thread.
bool held_as_scalar(const ir::Type& t) { return t.is_scalar() || t.is_shared(); }
}  // namespace

// Lowers a loop's or branch's region in a conversion scope of its own and reads its
// yield's values from operand `first` on (a while's condition comes first), tiles in
// `layouts`, scalars and shared buffers as their one value.
std::vector<Values> Lowerer::lower_region(const ir::Block& region, const std::vector<Layout>& layouts, size_t first) {
  scopes_.emplace_back();
  lower_block(region);
  const ir::Operation* y = region.terminator();
  std::vector<Values> out(layouts.size());
  for (size_t i = 0; i < layouts.size(); ++i) {
    const ir::Value* v = y->operands[first + i];
    out[i] = held_as_scalar(v->type) ? Values{scalar(v)} : get(v, layouts[i]);
  }
  scopes_.pop_back();
  return out;
}

void Lowerer::lower_for(const ir::Operation& op) {
  const ir::Block& body = *op.regions[0];
  llvm::Value* lb = scalar(op.operands[0]);
  llvm::Value* ub = scalar(op.operands[1]);
  llvm::Value* step = scalar(op.operands[2]);
  size_t n = op.results.size();
  std::vector<Layout> layouts(n);
  std::vector<Values> inits(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::Value* init = op.operands[3 + i];
    if (held_as_scalar(init->type)) {
      inits[i] = {scalar(init)};
      continue;
    }
    layouts[i] = plan_.of(body.args[1 + i].get());
    inits[i] = get(init, layouts[i]);
  }
  // A rotated loop on the induction variable that stops where its increment would wrap
  // (codegen/integer_ops.hpp): a negative step runs downward, and no bound near INT_MAX
  // makes the induction variable wrap into an endless loop. (The CPU counts trips; here
  // the induction variable's own test keeps the registers as they were.) A step of 0 at
  // run time would never end: it traps, naming the loop's line.
  auto* constant_step = llvm::dyn_cast<llvm::ConstantInt>(step);
  bool step_nonzero = axis_.get(op.operands[2]).range.lo > 0 || (constant_step && !constant_step->isZero());
  if (!step_nonzero) {
    info_.uses_trap = true;
    if_then(b.CreateICmpEQ(step, b.getInt32(0)), [&] { hooks_.trap(b, op.loc.line); });
  }
  // Carried values a warpgroup dot still computes when the loop ends (yielded through a
  // dot_wait that leaves groups pending: plan_async_dots' dK and dV) are waited for on
  // both ways to the exit, the loop's and the one that skips it, before the exit joins
  // them. ptxas checks wgmma pipelines in code order: where LLVM placed the skipping
  // path's copies of the initial values (into the accumulators' registers) between the
  // loop and the dot_wait after it, it serialized every wgmma of the kernel (C7515; the
  // attention backward's dK/dV at 32x128 D=64, and at 64x64 once LSE was staged). A
  // wait opening that path ends the pipeline there, wherever it is placed; the dot_wait 0
  // after the loop then has nothing left to wait for (waited_after_loop_: it emits nothing).
  const ir::Operation* yield = body.terminator();
  std::vector<bool> in_flight(n, false);
  bool any_in_flight = false;
  for (size_t i = 0; i < n && yield; ++i) {
    const ir::Operation* d = yield->operands[i]->def;
    in_flight[i] = d && d->op == Op::dot_wait && d->i0 > 0 && !held_as_scalar(yield->operands[i]->type);
    any_in_flight |= in_flight[i];
  }
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx_, "loop", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "loop.exit", fn_);
  llvm::BasicBlock* skip = any_in_flight ? llvm::BasicBlock::Create(ctx_, "loop.skip", fn_, exit) : exit;
  b.CreateCondBr(codegen::loop_enters(b, lb, ub, step), loop, skip);
  if (any_in_flight) {
    // (a wait tying no registers: tied to the initial values, it would need them copied
    // into its registers, the accumulators', before it. The initial values are complete
    // unless a dot before the loop left them in flight: that dot_wait 0 after the loop
    // still waits, see below.)
    b.SetInsertPoint(skip);
    hooks_.warpgroup_wait(b, 0, {});
    b.CreateBr(exit);
  }

  b.SetInsertPoint(loop);
  llvm::PHINode* iv = b.CreatePHI(b.getInt32Ty(), 2, "iv");
  iv->addIncoming(lb, pre);
  scalars_[body.args[0].get()] = iv;
  std::vector<std::vector<llvm::PHINode*>> phis(n);
  for (size_t i = 0; i < n; ++i) {
    Values vals;
    for (llvm::Value* init : inits[i]) {
      llvm::PHINode* p = b.CreatePHI(init->getType(), 2);
      p->addIncoming(init, pre);
      phis[i].push_back(p);
      vals.push_back(p);
    }
    const ir::Value* arg = body.args[1 + i].get();
    if (held_as_scalar(arg->type)) scalars_[arg] = vals[0];
    else natural_[arg] = Regs{layouts[i], vals};
  }
  std::vector<Values> yields = lower_region(body, layouts);
  // nsw: the back edge is taken only where it did not wrap (loop_continues tests that
  // without reading it), so LLVM may widen and fold the induction variable freely.
  llvm::Value* next = b.CreateAdd(iv, step, "iv.next", false, true);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  llvm::BasicBlock* done = any_in_flight ? llvm::BasicBlock::Create(ctx_, "loop.done", fn_, exit) : exit;
  b.CreateCondBr(codegen::loop_continues(b, iv, next, ub, step), loop, done);
  iv->addIncoming(next, latch);
  for (size_t i = 0; i < n; ++i)
    for (size_t r = 0; r < phis[i].size(); ++r) phis[i][r]->addIncoming(yields[i][r], latch);
  if (any_in_flight) {
    b.SetInsertPoint(done);
    for (size_t i = 0; i < n; ++i)
      if (in_flight[i]) yields[i] = hooks_.warpgroup_wait(b, 0, yields[i]);
    b.CreateBr(exit);
  }

  b.SetInsertPoint(exit);
  for (size_t i = 0; i < n; ++i) {
    Values vals;
    for (size_t r = 0; r < inits[i].size(); ++r) {
      llvm::PHINode* p = b.CreatePHI(inits[i][r]->getType(), 2);
      p->addIncoming(inits[i][r], skip == exit ? pre : skip);
      p->addIncoming(yields[i][r], any_in_flight ? done : latch);
      vals.push_back(p);
    }
    const ir::Value* res = op.result(int(i));
    if (held_as_scalar(res->type)) scalars_[res] = vals[0];
    else natural_[res] = Regs{layouts[i], vals};
    const ir::Operation* init = op.operands[3 + i]->def;
    if (in_flight[i] && !(init && ((init->op == Op::dot_wait && init->i0 > 0) ||
                                   (init->op == Op::dot && init->i1 == ir::kAsyncDot))))
      waited_after_loop_.insert(res);
  }
}

// while.cond runs the condition region on the carried values (phis), then branches to
// while.body with the values it passes on, or out with them as the results; the body's
// yield feeds the phis. Every region keeps the carried tiles in the layout of the
// regions' arguments (assign_layouts: the initial values'), the yields converted to it.
void Lowerer::lower_while(const ir::Operation& op) {
  const ir::Block& before = *op.regions[0];
  const ir::Block& after = *op.regions[1];
  size_t n = op.results.size();
  std::vector<Layout> layouts(n);
  std::vector<Values> inits(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::Value* init = op.operands[i];
    if (held_as_scalar(init->type)) {
      inits[i] = {scalar(init)};
      continue;
    }
    layouts[i] = plan_.of(before.args[i].get());
    inits[i] = get(init, layouts[i]);
  }
  auto bind = [&](const ir::Value* v, size_t i, const Values& vals) {
    if (held_as_scalar(v->type)) scalars_[v] = vals[0];
    else natural_[v] = Regs{layouts[i], vals};
  };
  llvm::BasicBlock* pre = b.GetInsertBlock();
  auto* head = llvm::BasicBlock::Create(ctx_, "while.cond", fn_);
  auto* body = llvm::BasicBlock::Create(ctx_, "while.body", fn_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "while.exit", fn_);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  std::vector<std::vector<llvm::PHINode*>> phis(n);
  for (size_t i = 0; i < n; ++i) {
    Values vals;
    for (llvm::Value* init : inits[i]) {
      llvm::PHINode* p = b.CreatePHI(init->getType(), 2);
      p->addIncoming(init, pre);
      phis[i].push_back(p);
      vals.push_back(p);
    }
    bind(before.args[i].get(), i, vals);
  }
  std::vector<Values> passed = lower_region(before, layouts, /*first=*/1);
  llvm::Value* go_on = scalar(before.terminator()->operands[0]);
  b.CreateCondBr(go_on, body, exit);

  b.SetInsertPoint(body);
  for (size_t i = 0; i < n; ++i) bind(after.args[i].get(), i, passed[i]);  // (while.cond dominates the body)
  std::vector<Values> yields = lower_region(after, layouts);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  b.CreateBr(head);
  for (size_t i = 0; i < n; ++i)
    for (size_t r = 0; r < phis[i].size(); ++r) phis[i][r]->addIncoming(yields[i][r], latch);

  b.SetInsertPoint(exit);
  for (size_t i = 0; i < n; ++i) bind(op.result(int(i)), i, passed[i]);  // (its one predecessor is while.cond's end)
}

void Lowerer::lower_if(const ir::Operation& op) {
  llvm::Value* cond = scalar(op.operands[0]);
  size_t n = op.results.size();
  std::vector<Layout> layouts(n);
  for (size_t i = 0; i < n; ++i)
    if (!held_as_scalar(op.result(int(i))->type)) layouts[i] = preferred_layout(op.result(int(i)));
  auto* then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
  auto* else_bb = llvm::BasicBlock::Create(ctx_, "if.else", fn_);
  auto* merge = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
  b.CreateCondBr(cond, then_bb, else_bb);
  std::vector<std::pair<llvm::BasicBlock*, std::vector<Values>>> arms;
  for (int k = 0; k < 2; ++k) {
    b.SetInsertPoint(k == 0 ? then_bb : else_bb);
    std::vector<Values> vals = lower_region(*op.regions[k], layouts);
    arms.emplace_back(b.GetInsertBlock(), std::move(vals));
    b.CreateBr(merge);
  }
  b.SetInsertPoint(merge);
  for (size_t i = 0; i < n; ++i) {
    Values vals;
    for (size_t r = 0; r < arms[0].second[i].size(); ++r) {
      llvm::PHINode* p = b.CreatePHI(arms[0].second[i][r]->getType(), 2);
      p->addIncoming(arms[0].second[i][r], arms[0].first);
      p->addIncoming(arms[1].second[i][r], arms[1].first);
      vals.push_back(p);
    }
    const ir::Value* res = op.result(int(i));
    if (held_as_scalar(res->type)) scalars_[res] = vals[0];
    else natural_[res] = Regs{layouts[i], vals};
  }
}

void Lowerer::lower_assert(const ir::Operation& op) {
  const ir::Value* c = op.operands[0];
  llvm::Value* ok = nullptr;
  if (c->type.is_scalar()) {
    ok = scalar(c);
  } else {
    Layout l = preferred_layout(c);
    for (llvm::Value* v : get(c, l)) ok = ok ? b.CreateAnd(ok, v) : v;
  }
  info_.uses_trap = true;
  if_then(b.CreateNot(ok), [&] { hooks_.trap(b, op.loc.line); });
}

}  // namespace tl::gpu
