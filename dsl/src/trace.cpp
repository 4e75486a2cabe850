// Tracing: tile cells, loop-carried values and branches.
//
// Each tile object is a cell holding its current IR value and the nesting depth at
// which that value is valid. Reading a cell from inside a loop that began after the
// value was made gives the loop a block argument for it (the value is then read per
// iteration); when the loop closes, a block argument whose cell was reassigned becomes
// a carried value (yielded, and the cell holds the loop's result), and one that was
// not is folded back into the value from before the loop. Branches record the value
// each cell had on entry, so that both regions can yield the cells either one changed.
#include "dsl/src/trace.hpp"

#include "codegen/ir/builder.hpp"
#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/passes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace tl::detail {

namespace {
thread_local Trace* g_trace = nullptr;

// Stale cells. A tile kept past the trace that made it (in a static, a global) holds a
// value of a function that is gone once that trace is compiled. When the trace ends, such
// a cell is given a "ghost" instead: a value of the same type that belongs to no function
// (no defining op, no owning block), and the level kStale. A later trace reading the cell
// gets the ghost, so that its type checks still see the type the tile had, and the op
// that would take it as an operand (Trace::emit) reports the use at its line. Assigning
// the cell a new value makes it an ordinary cell of the new trace again.
constexpr int kStale = INT_MIN;

struct Ghosts {
  std::mutex m;
  std::vector<std::unique_ptr<ir::Value>> values;  // never freed: a stale cell may be read at any time
  std::unordered_map<const ir::Value*, ir::SrcLoc> made_at;
  // Stand-ins for tiles made inside a loop or branch body and read after it ended
  // (TileBase::get): reported by Trace::emit as such, at the reading op's line.
  std::unordered_set<const ir::Value*> escaped;
};
Ghosts& ghosts() {
  static Ghosts* g = new Ghosts;  // cells in statics may be read during static destruction
  return *g;
}
bool is_ghost(const ir::Value* v) { return v && !v->def && !v->owner; }

// When each tile object was made, during a trace: a loop carries the cells its body
// touched, and a branch gives those it assigned, in the order they were made (the C++
// variables' declarations, which C++ sequences), not the order the body first touched
// them, which follows the host compiler's evaluation of a call's arguments
// (`acc + tl::dot(tl::load(a), tl::load(b))` touches acc first built by clang, b first
// built by GCC). Keyed by address: an object's entry goes with it (~TileBase).
struct Births {
  std::unordered_map<const TileBase*, uint64_t> of;
  uint64_t next = 0;
};
thread_local Births g_births;
void born(const TileBase* c) {
  if (g_trace) g_births.of[c] = g_births.next++;
}
uint64_t birth(const TileBase* c) {
  auto it = g_births.of.find(c);
  return it == g_births.of.end() ? UINT64_MAX : it->second;
}
// The column each op was traced from (ir::SrcLoc keeps the line): ops of one call share
// it, which the canonical order (Trace::finish) tells a call's own ops by.
thread_local std::unordered_map<const ir::Operation*, unsigned> g_columns;

// `cells` in the order their tiles were made (those made outside any trace last, as they
// were).
void order_by_birth(std::vector<CellEntry>& cells) {
  std::stable_sort(cells.begin(), cells.end(),
                   [](const CellEntry& a, const CellEntry& b) { return birth(a.cell) < birth(b.cell); });
}
}  // namespace

// What TileBase::get gives for a tile that was never given a value (see there): a value
// of no function, never part of the IR (Trace::emit refuses it as an operand).
ir::Value* unassigned_placeholder() {
  static ir::Value* v = [] {
    auto* p = new ir::Value;  // never freed: read from any thread, at any time
    p->type = ir::Type{DType::i32, DType::i32, {}};
    return p;
  }();
  return v;
}

std::string unassigned_message(const std::string& op) {
  return fmt::format("{}: use of a tile that was never given a value (declared without one, as `tl::f32 x;`, and "
                     "not assigned before this line, or assigned in one branch of a tl::if_ only); assign it first, or "
                     "declare it with a value",
                     op);
}

// --------------------------------------------------------------------- Trace

Trace::Trace(std::string kernel_name, ir::SrcLoc loc)
    : fn_(std::make_unique<ir::Function>()), previous_(g_trace), kernel_loc_(loc) {
  fn_->name = std::move(kernel_name);
  fn_->loc = loc;
  block_ = &fn_->body;
  g_trace = this;
}

Trace::~Trace() {
  // The cells still alive were kept past this trace: make them stale (see kStale). Their
  // values are still alive here (the function, finished or not, outlives this object's
  // destructor body, and end_for's dropped arguments are in retired_values).
  if (!cells_.empty()) {
    Ghosts& g = ghosts();
    std::lock_guard lock(g.m);
    for (TileBase* c : cells_) {
      if (!c->v_ || c->level_ == kStale) continue;
      if (is_ghost(c->v_)) {  // a copy of a stale cell: the same ghost
        c->level_ = kStale;
        continue;
      }
      auto ghost = std::make_unique<ir::Value>();
      ghost->type = c->v_->type;
      g.made_at[ghost.get()] = c->v_->def ? c->v_->def->loc : kernel_loc_;
      c->v_ = ghost.get();
      c->level_ = kStale;
      g.values.push_back(std::move(ghost));
    }
  }
  g_trace = previous_;
  if (!g_trace) g_columns.clear();  // (ops of traces that threw)
}

void Trace::forget(TileBase* cell) {
  for (Trace* t = this; t; t = t->previous_)
    if (t->cells_.erase(cell)) return;
}

Trace& Trace::current(const Loc& loc) {
  if (!g_trace) throw trace_error("tl operations can only be used inside a kernel being traced", loc);
  return *g_trace;
}
Trace* Trace::current_or_null() { return g_trace; }

std::unique_ptr<ir::Function> Trace::finish() {
  // (tl::range reports a body left by break or return itself, loop_left: this is what
  // is left, such as a tl::range iterated by hand.)
  if (!frames_.empty()) {
    const ir::SrcLoc& at = frames_.back().op->loc;
    throw trace_error("tl: the loop or branch that begins here was never closed: its body was left early (by break, "
                      "return or goto), which a traced body cannot do; use a mask or tl::if_",
                      at.file, at.line);
  }
  // The op order the host compiler's evaluation of the user's expressions gave, made one
  // order whatever the compiler (C++ leaves the order of a call's arguments open), before
  // anything hashes or compiles the program.
  auto column = [](const ir::Operation& op) {
    auto it = g_columns.find(&op);
    return it == g_columns.end() ? 0u : it->second;
  };
  passes::order_canonically(*fn_, [&](const ir::Operation& a, const ir::Operation& b) {
    return a.loc.line == b.loc.line && column(a) == column(b) && std::string_view(a.loc.file) == b.loc.file;
  });
  ir::walk(fn_->body, [](ir::Operation& op) { g_columns.erase(&op); });
  return std::move(fn_);
}

ir::Operation* Trace::emit(Op op, std::vector<ir::Value*> operands, const Loc& loc) {
  for (ir::Value* v : operands)
    if (v == unassigned_placeholder()) throw trace_error(unassigned_message(op_name(op)), loc);
  for (ir::Value* v : operands)
    if (is_ghost(v)) {
      ir::SrcLoc made{};
      bool escaped = false;
      {
        Ghosts& g = ghosts();
        std::lock_guard lock(g.m);
        if (auto it = g.made_at.find(v); it != g.made_at.end()) made = it->second;
        escaped = g.escaped.count(v) > 0;
      }
      if (escaped)
        throw trace_error(fmt::format("{}: a tile made inside a tl::range, tl::while_ or tl::if_ body (at {}:{}) is "
                                      "used after the body ended; declare it before the loop or branch and assign to "
                                      "it inside",
                                      op_name(op), made.file, made.line),
                          loc);
      throw trace_error(fmt::format("{}: this tile was made by an earlier trace (at {}:{}) and kept past it (in a "
                                    "static or a global variable); a tile belongs to the trace that made it: make it "
                                    "again in the kernel's body (a tile in a static is not reset between traces)",
                                    op_name(op), made.file, made.line),
                        loc);
    }
  check_combine(op, operands, loc);
  auto o = std::make_unique<ir::Operation>();
  o->op = op;
  o->operands = std::move(operands);
  o->parent = block_;
  o->loc = {loc.file_name(), loc.line()};
  g_columns[o.get()] = loc.column();
  block_->ops.push_back(std::move(o));
  return block_->ops.back().get();
}

// The region of a tl::reduce / tl::associative_scan combine function (dsl/src/combine.cpp).
bool is_combine_region(const ir::Block* b) {
  return b && b->parent && !b->parent->regions.empty() && (b->parent->op == Op::reduce || b->parent->op == Op::scan);
}

// A combine function is traced once and inlined wherever the target combines two
// partial results (a CPU loop, a GPU's registers, lanes and warps), any number of times
// and in an order of the target's: only pure elementwise work on scalars can be.
// What it makes stays inside it.
void Trace::check_combine(Op op, const std::vector<ir::Value*>& operands, const Loc& loc) const {
  for (const ir::Value* v : operands) {
    const ir::Block* home = v->def ? v->def->parent : v->owner;
    if (home != block_ && is_combine_region(home))
      throw trace_error(fmt::format("{}: this reads a value made inside the combine function of the {} at {}:{}, "
                                    "which exists only there (a tile assigned inside the combine?); take the "
                                    "combined value from the operation's result",
                                    op_name(op), home->parent->op == Op::reduce ? "tl::reduce" : "tl::associative_scan",
                                    home->parent->loc.file, home->parent->loc.line),
                        loc);
  }
  if (!is_combine_region(block_)) return;
  for (const ir::Value* v : operands)
    if (!v->type.is_scalar())
      throw trace_error(fmt::format("{} of a {} inside a combine function, which combines scalars: it "
                                    "may read only its scalar arguments, literals and scalars of the kernel, not a "
                                    "tile from outside it",
                                    op_name(op), v->type.str()),
                        loc);
  if (op == Op::yield || op == Op::constant) return;
  if (op == Op::load || op == Op::store || op == Op::atomic_rmw || op == Op::atomic_cas || op == Op::shared_load ||
      op == Op::shared_store || op == Op::global_load_to_shared)
    throw trace_error(fmt::format("{} inside a combine function: a combine must be free of side effects (no loads, "
                                  "stores or atomics): it runs any number of times, in an order of the target's",
                                  op_name(op)),
                      loc);
  if (op == Op::for_ || op == Op::if_ || op == Op::while_)
    throw trace_error("a combine function cannot contain tl::range, tl::while_ or tl::if_ (it is inlined at every "
                      "combining step); write a choice with tl::where",
                      loc);
  if (!ir::has_trait(op, ir::kPure) || !ir::has_trait(op, ir::kElementwise) || op == Op::addptr)
    throw trace_error(fmt::format("{} inside a combine function, which may only combine its scalar arguments with "
                                  "elementwise operations (arithmetic, comparisons, tl::where, casts, math)",
                                  op_name(op)),
                      loc);
}

// Tiles are checked as they are made, so that the error names the line that made one too
// large, whichever operation it is (an arange, a broadcast, a reshape, a load).
void Trace::check_tile_size(Op op, const ir::Type& t, const Loc& loc) const {
  if (t.is_scalar()) return;
  const int64_t n = t.numel();
  // Triton's TRITON_MAX_TENSOR_NUMEL, on every target (a kernel that traces on the CPU
  // must trace on a GPU). Above it compiles run for minutes: 2^20 f32 took 21 s for gfx942.
  if (n > max_tile_elements)
    throw trace_error(fmt::format("{}: a tile of {} elements ({}) is larger than the {} (2^20) a tile may have; "
                                  "split the work over more programs or a tl::range loop",
                                  op_name(op), n, t.str(), max_tile_elements),
                      loc);
  if (t.is_shared() || registers_per_lane_ == 0 || lanes_ == 0) return;
  // 64-bit elements (pointers included) take two 32-bit registers; narrower ones are
  // counted as one each, what a lane needs for the elements it holds.
  const int64_t per_lane = (n + lanes_ - 1) / lanes_;
  const int64_t regs = per_lane * (bit_width(t.dtype) > 32 ? 2 : 1);
  if (regs > registers_per_lane_)
    throw trace_error(
        fmt::format("{}: a tile of {} elements ({}) is {} {}-bit elements per lane at num_warps={} ({} lanes), more "
                    "than the {} registers a lane has on {}; use more warps or a smaller tile",
                    op_name(op), n, t.str(), per_lane, bit_width(t.dtype) > 32 ? 64 : 32, num_warps_, lanes_,
                    registers_per_lane_, register_target_),
        loc);
}

ir::Value* Trace::emit1(Op op, std::vector<ir::Value*> operands, ir::Type result, const Loc& loc) {
  check_tile_size(op, result, loc);
  return emit(op, std::move(operands), loc)->add_result(std::move(result));
}

ir::Value* Trace::add_argument(ir::Type t, std::string name, bool divisible_by_16, bool pointer_range_32) {
  fn_->arg_info.push_back({std::move(name), divisible_by_16, pointer_range_32 && t.is_ptr()});
  return fn_->body.add_arg(std::move(t));
}

// --------------------------------------------------------------------- cells

TileBase::TileBase() {
  born(this);
  if (Trace* t = Trace::current_or_null()) level_ = t->depth();
}

TileBase::TileBase(ir::Value* v) : v_(v) {
  born(this);
  if (Trace* t = Trace::current_or_null()) {
    level_ = t->depth();
    if (v_) t->track(this);
  }
}

TileBase::TileBase(const TileBase& o) : v_(o.v_ ? o.get() : nullptr) {
  born(this);
  if (Trace* t = Trace::current_or_null()) {
    level_ = t->depth();
    if (v_) t->track(this);
  }
}

TileBase& TileBase::operator=(const TileBase& o) {
  if (this != &o) set(o.get());
  return *this;
}

TileBase::~TileBase() {
  if (!g_births.of.empty()) g_births.of.erase(this);
  Trace* t = Trace::current_or_null();
  if (t) t->forget(this);
  if (!t || level_ == 0 || level_ == kStale) return;
  // A cell can only be in the frames up to its level; forget it there.
  for (auto& f : t->frames())
    f.cells.erase(std::remove_if(f.cells.begin(), f.cells.end(), [&](const CellEntry& e) { return e.cell == this; }),
                  f.cells.end());
}

ir::Value* TileBase::get() const {
  if (!v_) {
    // The use's line is known to the operation that reads this value, not here: give it
    // a placeholder that Trace::emit reports at its line. An operation that refuses the
    // placeholder's type first throws at its line too, and the launch (build() in
    // runtime/launch.cpp) says why, seeing `unassigned_read`.
    Trace* t = Trace::current_or_null();
    if (!t) throw error("tl: use of a tile that was never given a value");
    t->unassigned_read = true;
    return unassigned_placeholder();
  }
  // A stale cell's ghost: the op that takes it reports the use (Trace::emit).
  if (level_ == kStale) return v_;
  Trace* t = Trace::current_or_null();
  if (!t) return v_;
  auto& frames = t->frames();
  int depth = int(frames.size());
  if (level_ > depth) {
    // Made inside a body that has ended (kept in a std::optional, a container, a
    // reference). The use's line is known to the operation that reads it: a stand-in of
    // the same type (its checks pass) that Trace::emit reports at that line, naming the
    // line that made the tile. Kept for good, like a stale cell's ghost.
    Ghosts& g = ghosts();
    std::lock_guard lock(g.m);
    auto stand_in = std::make_unique<ir::Value>();
    stand_in->type = v_->type;
    g.made_at[stand_in.get()] = v_->def ? v_->def->loc : v_->owner && v_->owner->parent ? v_->owner->parent->loc
                                                                                         : t->function().loc;
    g.escaped.insert(stand_in.get());
    g.values.push_back(std::move(stand_in));
    return g.values.back().get();
  }
  for (int d = level_; d < depth; ++d) {
    Frame& f = frames[d];
    auto* self = const_cast<TileBase*>(this);
    if (f.kind == Frame::Loop) {
      ir::Operation* loop = f.op;
      ir::Value* arg = loop->regions[0]->add_arg(v_->type);
      loop->operands.push_back(v_);
      f.cells.push_back({self, arg, v_});
      v_ = arg;
    } else if (f.kind == Frame::While) {
      // Both regions take every carried value; a cell first read in the body passes
      // through the condition region unchanged.
      ir::Operation* loop = f.op;
      ir::Value* before = loop->regions[0]->add_arg(v_->type);
      ir::Value* after = loop->regions[1]->add_arg(v_->type);
      loop->operands.push_back(v_);
      CellEntry e{self, before, v_};
      e.after = after;
      if (f.in_else) e.then_value = before;
      f.cells.push_back(e);
      v_ = f.in_else ? after : before;
    } else {
      f.cells.push_back({self, v_, v_, nullptr, !f.in_else});
    }
  }
  level_ = depth;
  return v_;
}

void TileBase::set(ir::Value* v) {
  Trace* t = Trace::current_or_null();
  if (t && v == unassigned_placeholder()) {
    // `y = x` with x never given a value. y without a value stays so: its uses report
    // themselves. One with a value would silently keep it: reported where it was given.
    if (!v_ || level_ == kStale) return;
    ir::SrcLoc at = v_->def ? v_->def->loc : v_->owner && v_->owner->parent ? v_->owner->parent->loc : t->function().loc;
    throw trace_error("tl: this tile (given its value here) is later assigned a tile that was never given a value "
                      "(declared without one, as `tl::f32 x;`); assign that tile first",
                      at.file, at.line);
  }
  if (!v_ && t && level_ < t->depth() && level_ != kStale) {
    // Inside tl::if_ branches only, the branch defines the tile (Triton's `if c: val = a
    // else: val = b`): each branch entered since its declaration records it without a
    // value; assigned in both branches it has the branch's value after it (end_if), in
    // one only it has none.
    size_t outermost_loop = size_t(level_);
    while (outermost_loop < t->frames().size() && t->frames()[outermost_loop].kind == Frame::Branch) ++outermost_loop;
    if (outermost_loop == t->frames().size()) {
      for (size_t d = size_t(level_); d < t->frames().size(); ++d) {
        Frame& f = t->frames()[d];
        f.cells.push_back({this, nullptr, nullptr, nullptr, !f.in_else});
      }
      v_ = v;
      level_ = t->depth();
      t->track(this);
      return;
    }
    // A loop would have to carry the cell out: the outermost loop entered since the tile
    // was declared. The assignment's own line is not known here; the line that made the
    // assigned value is, when it was made inside that loop (`x = a + b;`); else the loop's.
    const Frame& f = t->frames()[outermost_loop];
    const char* what = f.kind == Frame::Branch ? "a tl::if_ branch" : f.kind == Frame::Loop ? "a tl::range loop"
                                                                                            : "a tl::while_ loop";
    const ir::SrcLoc& opened = f.op->loc;
    ir::SrcLoc at = v && v->def && ir::is_inside(v->def->parent, f.op) ? v->def->loc : opened;
    const char* kind = f.kind == Frame::Branch ? "branch" : "loop";
    throw trace_error(fmt::format("tl: a tile declared without a value cannot be assigned inside {} (the one at "
                                  "{}:{}); give it an initial value (for example tl::zeros) before the {}",
                                  what, opened.file, opened.line, kind),
                      at.file, at.line);
  }
  if (v_ && level_ != kStale) get();  // make the enclosing loops carry this cell (a stale one: just replace it)
  v_ = v;
  if (t) {
    level_ = t->depth();
    t->track(this);
  } else if (level_ == kStale) {
    level_ = 0;
  }
}

std::vector<int> TileBase::shape(const Loc& loc) const {
  if (!v_) throw trace_error(unassigned_message("shape()"), loc);
  return get()->type.shape;
}
DType TileBase::dtype(const Loc& loc) const {
  if (!v_) throw trace_error(unassigned_message("dtype()"), loc);
  return get()->type.dtype;
}

// --------------------------------------------------------------------- loops

ir::Value* begin_for(ir::Value* lb, ir::Value* ub, ir::Value* step, int num_stages, bool stages_given, const Loc& loc) {
  Trace& t = Trace::current(loc);
  for (ir::Value* v : {lb, ub, step})
    if (!v->type.is_scalar() || v->type.dtype != DType::i32)
      throw trace_error(fmt::format("tl::range: bounds and step must be scalar i32, got {}", v->type.str()), loc);
  if (stages_given && (num_stages < 1 || num_stages > 8))
    throw trace_error(fmt::format("tl::range: num_stages must be 1 to 8, got {}", num_stages), loc);
  if (!stages_given) num_stages = 0;  // the launch option's
  if (step->def && step->def->op == Op::constant && step->def->i0 == 0)
    throw trace_error("tl::range: step must not be zero", loc);
  ir::Operation* loop = t.emit(Op::for_, {lb, ub, step}, loc);
  loop->i0 = num_stages;
  ir::Block* body = loop->add_region();
  ir::Value* iv = body->add_arg(lb->type);
  t.frames().push_back({Frame::Loop, loop, t.block(), {}});
  t.set_block(body);
  return iv;
}

void end_for() {
  Trace& t = Trace::current(Loc::current());
  Frame f = std::move(t.frames().back());
  t.frames().pop_back();
  order_by_birth(f.cells);
  ir::Operation* loop = f.op;
  ir::Block* body = loop->regions[0].get();
  Loc loop_loc = Loc::current();

  std::vector<ir::Value*> yields;
  std::vector<std::unique_ptr<ir::Value>> kept_args;
  kept_args.push_back(std::move(body->args[0]));  // the induction variable
  std::vector<ir::Value*> operands(loop->operands.begin(), loop->operands.begin() + 3);
  std::vector<CellEntry> carried;
  for (auto& e : f.cells) {
    TileBase* c = e.cell;
    ir::Value* now = c->v_;
    if (now == e.entry) {
      ir::replace_all_uses(*body, e.entry, e.init);
      c->v_ = e.init;
      continue;
    }
    if (now->type != e.entry->type) {
      const ir::SrcLoc& at = now->def ? now->def->loc : loop->loc;
      throw trace_error(fmt::format("tl::range: a loop-carried tile changes from {} to {} in the loop body",
                              e.entry->type.str(), now->type.str()),
                  at.file, at.line);
    }
    yields.push_back(now);
    operands.push_back(e.init);
    carried.push_back(e);
  }
  // Keep the block arguments of carried cells, in the order the cells were made.
  for (auto& e : carried)
    for (auto& a : body->args)
      if (a.get() == e.entry) kept_args.push_back(std::move(a));
  // (The others are kept alive until the trace ends: a copy of a cell may point at one.)
  for (auto& a : body->args)
    if (a) t.retired_values.push_back(std::move(a));
  body->args = std::move(kept_args);
  for (size_t i = 0; i < body->args.size(); ++i) body->args[i]->index = int(i);
  loop->operands = std::move(operands);

  t.set_block(body);
  t.emit(Op::yield, yields, Loc::current());
  body->ops.back()->loc = loop->loc;
  t.set_block(f.outer);
  for (auto& e : carried) e.cell->v_ = loop->add_result(e.entry->type);
  for (auto& e : f.cells) e.cell->level_ = t.depth();
  (void)loop_loc;
}

// A tl::range destroyed with its loop still open: its body was left by break, return or
// goto, and the range-for's `++`, which closes the loop, never ran. The body is traced
// once, into a loop that runs on the device: it cannot end early. Reported at the range's
// line, unless an error from the body is already on its way out (then that one is).
void loop_left(const Loc& loc) {
  if (std::uncaught_exceptions() > 0 || !Trace::current_or_null()) return;
  throw trace_error("tl::range: the loop body was left by break or return; a tl::range body is traced once into a "
                    "loop that runs on the device and cannot end early (continue is fine): use a mask or tl::if_ for "
                    "the part that should not run",
                    loc);
}

// --------------------------------------------------------------------- while loops

void begin_while(const Loc& loc) {
  Trace& t = Trace::current(loc);
  ir::Operation* loop = t.emit(Op::while_, {}, loc);
  ir::Block* before = loop->add_region();
  loop->add_region();
  t.frames().push_back({Frame::While, loop, t.block(), {}});
  t.set_block(before);
}

void begin_while_body(ir::Value* cond, const Loc& loc) {
  Trace& t = Trace::current(loc);
  Frame& f = t.frames().back();
  // (tl::while_ opens the frame and calls this once; anything else is a tracer bug.)
  if (f.kind != Frame::While || f.in_else) throw trace_error("tl::while_: the condition region is not open", loc);
  if (!cond->type.is_scalar() || cond->type.dtype != DType::i1)
    throw trace_error(fmt::format("tl::while_: the condition must be a scalar i1, got {}", cond->type.str()), loc);
  // The condition is a value of the condition region or from before the loop (reading the
  // cell it came from has already made any outer tile a block argument). end_while adds
  // the carried values after it.
  t.emit(Op::yield, {cond}, loc);
  for (auto& e : f.cells) {  // what the condition region leaves; the body starts from its arguments
    e.then_value = e.cell->v_;
    e.cell->v_ = e.after;
  }
  f.in_else = true;
  t.set_block(f.op->regions[1].get());
}

void end_while() {
  Trace& t = Trace::current(Loc::current());
  Frame f = std::move(t.frames().back());
  t.frames().pop_back();
  order_by_birth(f.cells);
  ir::Operation* loop = f.op;
  ir::Block* before = loop->regions[0].get();
  ir::Block* after = loop->regions[1].get();
  ir::Operation* cond_yield = before->ops.back().get();  // begin_while_body's yield

  std::vector<CellEntry> carried;
  std::vector<ir::Value*> inits, before_yields{cond_yield->operands[0]}, body_yields;
  for (auto& e : f.cells) {
    ir::Value* cond_end = e.then_value;
    ir::Value* body_end = e.cell->v_;
    if (cond_end == e.entry && body_end == e.after) {  // read, never assigned: the value from before the loop
      ir::replace_all_uses(*before, e.entry, e.init);
      ir::replace_all_uses(*after, e.after, e.init);
      e.cell->v_ = e.init;
      continue;
    }
    for (ir::Value* now : {cond_end, body_end})
      if (now->type != e.entry->type) {
        const ir::SrcLoc& at = now->def ? now->def->loc : loop->loc;
        throw trace_error(fmt::format("tl::while_: a loop-carried tile changes from {} to {} in the loop",
                                      e.entry->type.str(), now->type.str()),
                          at.file, at.line);
      }
    inits.push_back(e.init);
    before_yields.push_back(cond_end);
    body_yields.push_back(body_end);
    carried.push_back(e);
  }
  // Keep the block arguments of carried cells, in the order the cells were made.
  auto keep = [&](ir::Block* b, bool body) {
    std::vector<std::unique_ptr<ir::Value>> kept;
    for (auto& e : carried)
      for (auto& a : b->args)
        if (a && a.get() == (body ? e.after : e.entry)) kept.push_back(std::move(a));
    for (auto& a : b->args)
      if (a) t.retired_values.push_back(std::move(a));
    b->args = std::move(kept);
    for (size_t i = 0; i < b->args.size(); ++i) b->args[i]->index = int(i);
  };
  keep(before, false);
  keep(after, true);
  loop->operands = std::move(inits);
  cond_yield->operands = std::move(before_yields);

  t.set_block(after);
  t.emit(Op::yield, body_yields, Loc::current());
  after->ops.back()->loc = loop->loc;
  t.set_block(f.outer);
  for (auto& e : carried) e.cell->v_ = loop->add_result(e.entry->type);
  for (auto& e : f.cells) e.cell->level_ = t.depth();
}

// --------------------------------------------------------------------- branches

void begin_if(ir::Value* cond, const Loc& loc) {
  Trace& t = Trace::current(loc);
  if (!cond->type.is_scalar() || cond->type.dtype != DType::i1)
    throw trace_error(fmt::format("tl::if_: the condition must be a scalar i1, got {}", cond->type.str()), loc);
  ir::Operation* op = t.emit(Op::if_, {cond}, loc);
  ir::Block* then_block = op->add_region();
  op->add_region();
  t.frames().push_back({Frame::Branch, op, t.block(), {}});
  t.set_block(then_block);
}

void begin_else() {
  Trace& t = Trace::current(Loc::current());
  Frame& f = t.frames().back();
  if (f.kind != Frame::Branch || f.in_else) throw error("tl::if_: else_ without a matching if_");
  for (auto& e : f.cells) {
    e.then_value = e.cell->v_;
    e.cell->v_ = e.entry;
  }
  f.in_else = true;
  t.set_block(f.op->regions[1].get());
}

void end_if() {
  Trace& t = Trace::current(Loc::current());
  Frame f = std::move(t.frames().back());
  t.frames().pop_back();
  order_by_birth(f.cells);
  ir::Operation* op = f.op;
  std::vector<ir::Value*> then_yields, else_yields;
  std::vector<TileBase*> changed;
  for (auto& e : f.cells) {
    ir::Value* then_v = e.seen_in_then ? e.then_value : e.entry;
    ir::Value* else_v = e.cell->v_;
    if (then_v == e.entry && else_v == e.entry) continue;
    if (!then_v || !else_v) continue;  // declared without a value, assigned in one branch: none after
    if (then_v->type != else_v->type) {
      throw trace_error(fmt::format("tl::if_: a tile is {} after one branch and {} after the other",
                              then_v->type.str(), else_v->type.str()),
                  op->loc.file, op->loc.line);
    }
    then_yields.push_back(then_v);
    else_yields.push_back(else_v);
    changed.push_back(e.cell);
  }
  for (int r = 0; r < 2; ++r) {
    t.set_block(op->regions[r].get());
    t.emit(Op::yield, r == 0 ? then_yields : else_yields, Loc::current());
    op->regions[r]->ops.back()->loc = op->loc;
  }
  t.set_block(f.outer);
  for (size_t i = 0; i < changed.size(); ++i) changed[i]->v_ = op->add_result(then_yields[i]->type);
  for (auto& e : f.cells) {
    if (std::find(changed.begin(), changed.end(), e.cell) == changed.end()) e.cell->v_ = e.entry;
    e.cell->level_ = t.depth();
  }
}

}  // namespace tl::detail
