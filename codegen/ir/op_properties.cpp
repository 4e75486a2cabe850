// The op-properties table (see op_properties.hpp). The switch has no default, so a new
// Op that is not described here is a compiler warning (-Wswitch), and the table test
// (tests/codegen/ir_test.cpp) checks every op kind has an entry.
#include "codegen/ir/op_properties.hpp"

#include "codegen/ir/ir.hpp"

namespace tl::ir {
namespace {

constexpr uint16_t kPureElementwise = kPure | kElementwise;

OpProperties describe(Op op) {
  switch (op) {
    case Op::constant: return {kPure, kAttrI0 | kAttrF};
    case Op::program_id: case Op::num_programs: return {kPure, kAttrI0};
    case Op::arange: return {kPure, kAttrI0 | kAttrI1};
    case Op::splat: case Op::broadcast: case Op::reshape: return {kPure, 0};
    case Op::expand_dims: return {kPure, kAttrI0};
    case Op::trans: return {kPure, kAttrInts};
    // split: i0 the half (0 or 1); flip: i0 the dim.
    case Op::join: case Op::cat: return {kPure, 0};
    case Op::split: case Op::flip: return {kPure, kAttrI0};
    case Op::gather: return {kPure, kAttrI0};  // i0: the axis
    case Op::sort: return {kPure, kAttrI0 | kAttrI1};  // i0: the dim; i1: descending
    case Op::histogram: return {kPure, 0};  // the bins are the result's shape
    // i1: kIndexArithmetic (op_properties.hpp), set by mark_index_arithmetic.
    case Op::add: case Op::sub: case Op::mul: case Op::shl: return {kPureElementwise, kAttrI1};
    case Op::div: return {kPureElementwise, kAttrI0};  // i0: 1 approximate (tl::fast_dividef), 2 rcp (math library)
    case Op::exp2: return {kPureElementwise, kAttrI0};  // i0: 2 raw (the target's instruction alone: math library)
    case Op::rem: case Op::min: case Op::max:
    case Op::band: case Op::bor: case Op::bxor: case Op::shr: case Op::neg: case Op::bnot:
    case Op::exp: case Op::log: case Op::log2: case Op::sqrt: case Op::rsqrt: case Op::abs:
    case Op::sin: case Op::cos: case Op::erf: case Op::floor: case Op::ceil: case Op::fma: case Op::select:
    case Op::cast: case Op::bitcast: case Op::addptr:
      return {kPureElementwise, 0};
    case Op::cmp: return {kPureElementwise, kAttrI0};
    // A load is elementwise in its pointer (and mask, other) but not pure: what it
    // returns depends on the stores before it.
    // i0: kBufferAccess for an AMD buffer access (op_properties.hpp), else 0.
    // i1: the access's cache modifier, eviction policy and volatile (AccessFlags).
    case Op::load: return {kReadsMemory | kElementwise, kAttrI0 | kAttrI1};
    case Op::store: return {kWritesMemory | kElementwise, kAttrI0 | kAttrI1};
    case Op::atomic_rmw: return {kReadsMemory | kWritesMemory | kElementwise, kAttrI0 | kAttrI1};
    case Op::atomic_cas: return {kReadsMemory | kWritesMemory | kElementwise, kAttrI1};
    // Not pure (CSE would fold two buffers into one) and no effect (DCE may drop an
    // unused one); its result type says what it holds, it has no attributes.
    case Op::shared_alloc: return {kAllocates, 0};
    // Reads and writes of shared memory order like global ones: CSE never merges two
    // shared_loads with a write (or a barrier) between them, DCE never drops a store.
    // i0 = 1: load_shared_relaxed (the user's async_wait synchronized it).
    case Op::shared_load: return {kReadsMemory, kAttrI0 | kAttrI1};  // i1: kReadByDot
    // The copy writes a stage (asynchronously, complete at an async_wait); the wait
    // reads and writes nothing but orders the copies before it against what follows.
    // i0: kCopyIntoLastReadStage; i1: kBufferAccess (tl::amd::buffer_load_to_shared).
    case Op::global_load_to_shared: return {kWritesMemory, kAttrI0 | kAttrI1};
    case Op::async_wait: return {kSideEffects, kAttrI0 | kAttrI1};  // i1: kWaitCountsCopies
    // Writes its stage (and waits for the copy itself): ordered as a shared_store is.
    // i0: kCopyIntoLastReadStage; i1: kTensorMapIssue (the copy only, completed at an
    // mbarrier wait).
    case Op::tensor_map_load: return {kWritesMemory, kAttrI0 | kAttrI1};
    case Op::mbarrier: return {kSideEffects, kAttrI0 | kAttrI1};  // i0: which; i1: init's arrivals
    case Op::tensor_map_store: return {kWritesMemory, 0};  // (global memory; it reads its stage)
    case Op::shared_store: return {kWritesMemory, 0};
    case Op::reduce: case Op::scan: return {kPure, kAttrI0 | kAttrI1};
    // dot: GPU planning records its matrix instruction (str) and kpack, warps_m, warps_n
    // (ints); the CPU ignores them.
    // i1: kAsyncDot (plan_async_dots).
    case Op::dot: return {kPure, kAttrI0 | kAttrInts | kAttrStr | kAttrI1};  // i0: ieee
    // A wait and a fence order work the IR cannot see (the warpgroup's dots in flight, the
    // async proxy): never moved, merged or dropped.
    case Op::dot_wait: return {kSideEffects, kAttrI0};
    case Op::fence_async_shared: return {kSideEffects, 0};
    // i0: the ConvertPath a pass chose (op_properties.hpp); i1: kTransposedRead.
    case Op::convert_layout: return {kPure, kAttrI0 | kAttrI1};
    case Op::for_: return {kHasRegions, kAttrI0 | kAttrI1};  // i0: num_stages; i1: kAsyncDotStage
    case Op::if_: return {kHasRegions, 0};
    case Op::while_: return {kHasRegions, 0};
    // i0: HintKind; ints: the fact per dimension. Pure: it is its operand; elementwise
    // (the identity), so that layouts, CSE and the CPU's fusion pass through it.
    case Op::hint: return {kPureElementwise, kAttrI0 | kAttrInts};
    // A promise the optimizer builds on: kept (never dropped as unused), ordered like a
    // side effect so it is never moved above what it is about.
    case Op::assume: return {kSideEffects, 0};
    case Op::yield: return {kTerminator, 0};
    // i0 = 1: inserted by insert_barriers, for shared memory only (tl::barrier() also
    // promises global memory).
    case Op::barrier: return {kSideEffects, kAttrI0};
    // Programmatic dependent launch: orders this program against other grids' memory
    // (gdc_wait) or the next grid's start: never moved, merged or dropped.
    case Op::gdc_wait: case Op::gdc_launch_dependents: return {kSideEffects, 0};
    case Op::assert_: case Op::print: return {kSideEffects, kAttrStr};
    // The assembly may read memory (Triton's is_pure speaks of effects only), so two equal
    // calls merge only with no write between them, like loads; a pure one (i1 = 1) may be
    // dropped when unused, one that is not is an effect (writes_or_has_effects): kept,
    // never merged. str: constraints, newline, asm; i0: pack.
    case Op::inline_asm_elementwise: return {kReadsMemory | kElementwise, kAttrI0 | kAttrI1 | kAttrStr};
  }
  return {kSideEffects, 0};  // unreachable with a valid Op; the safe answer
}

struct Table {
  OpProperties entries[256];
  Table() {
    for (int i = 0; i < 256; ++i) entries[i] = describe(Op(i));
  }
};

}  // namespace

const OpProperties& properties(Op op) {
  static const Table table;
  return table.entries[uint8_t(op)];
}

const char* convert_path_name(ConvertPath p) {
  switch (p) {
    case ConvertPath::undecided: return "undecided";
    case ConvertPath::registers: return "registers";
    case ConvertPath::warp_shuffle: return "warp_shuffle";
    case ConvertPath::shared: return "shared";
  }
  return "?";
}

int64_t encode_access(const AccessFlags& a) {
  return int64_t(a.modifier) | (int64_t(a.eviction) << 4) | (a.is_volatile ? kAccessVolatile : 0);
}

AccessFlags access_flags(const Operation& op) {
  if (op.op != Op::load && op.op != Op::store) return {};
  return {cache_modifier(op.i1 & 0xf), evict((op.i1 >> 4) & 0x3), (op.i1 & kAccessVolatile) != 0};
}

const char* cache_name(cache_modifier c) {
  switch (c) {
    case cache_modifier::none: return "none";
    case cache_modifier::ca: return "ca";
    case cache_modifier::cg: return "cg";
    case cache_modifier::cs: return "cs";
    case cache_modifier::lu: return "lu";
    case cache_modifier::cv: return "cv";
    case cache_modifier::wb: return "wb";
    case cache_modifier::wt: return "wt";
  }
  return "?";
}

const char* evict_name(evict e) {
  switch (e) {
    case evict::normal: return "evict_normal";
    case evict::first: return "evict_first";
    case evict::last: return "evict_last";
  }
  return "?";
}

std::string access_error(const AccessFlags& a, bool load) {
  if (int(a.modifier) > int(cache_modifier::wt)) return "an unknown cache modifier";
  if (int(a.eviction) > int(evict::last)) return "an unknown eviction policy";
  const cache_modifier c = a.modifier;
  // PTX's sets, which Triton's keywords take: a store's modifier on a load is a mistake.
  if (load && (c == cache_modifier::wb || c == cache_modifier::wt))
    return std::string("cache modifier .") + cache_name(c) + " is for stores; a load takes .ca, .cg, .cs, .lu or .cv";
  if (!load && (c == cache_modifier::ca || c == cache_modifier::lu || c == cache_modifier::cv))
    return std::string("cache modifier .") + cache_name(c) + " is for loads; a store takes .wb, .cg, .cs or .wt";
  // A volatile access reads or writes memory itself every time; PTX's ld.volatile / st.volatile
  // take no cache operator or eviction priority, and a hint beside it would mean nothing.
  if (a.is_volatile && (c != cache_modifier::none || a.eviction != evict::normal))
    return "a volatile access takes no cache modifier or eviction policy (it goes to memory every time)";
  return {};
}

bool is_pure(const Operation& op) {
  return has_trait(op.op, kPure) || (op.op == Op::inline_asm_elementwise && op.i1 == 1);
}

bool writes_or_has_effects(const Operation& op) {
  const OpProperties& p = properties(op.op);
  if (p.has(kWritesMemory) || p.has(kSideEffects)) return true;
  if (op.op == Op::load && access_flags(op).is_volatile) return true;
  if (op.op == Op::inline_asm_elementwise && op.i1 == 0) return true;
  for (auto& r : op.regions)
    for (auto& inner : r->ops)
      if (writes_or_has_effects(*inner)) return true;
  return false;
}

BufferOperands buffer_operands(const Operation& op) {
  const bool copy = op.op == Op::global_load_to_shared;
  if (copy ? op.i1 != kBufferAccess || op.operands.size() < 3
           : (op.op != Op::load && op.op != Op::store) || op.i0 != kBufferAccess || op.operands.empty())
    return {};
  const Operation* add = op.operands[copy ? 2 : 0]->def;
  if (!add || add->op != Op::addptr || add->operands.size() != 2) return {};
  const Operation* splat = add->operands[0]->def;
  if (!splat || splat->op != Op::splat || splat->operands.size() != 1) return {};
  const Value* base = splat->operands[0];
  const Value* offsets = add->operands[1];
  if (!base->type.is_scalar() || !base->type.is_ptr() || offsets->type.dtype != DType::i32) return {};
  return {base, offsets};
}

namespace {
bool uniform_scalar(const Value* v, int depth) {
  if (!v->type.is_scalar() || depth > 32) return false;
  const Operation* d = v->def;
  if (!d) {
    const Block* owner = v->owner;
    if (!owner) return false;
    if (!owner->parent) return true;  // a kernel argument
    const Operation* loop = owner->parent;
    return loop->op == Op::for_ && v->index == 0 && uniform_scalar(loop->operands[0], depth + 1) &&
           uniform_scalar(loop->operands[2], depth + 1);
  }
  switch (d->op) {
    case Op::constant: case Op::program_id: case Op::num_programs: return true;
    case Op::load: case Op::atomic_rmw: case Op::atomic_cas: case Op::reduce: case Op::scan: return false;
    default: break;
  }
  if (!has_trait(d->op, kPure) || !d->regions.empty()) return false;
  for (const Value* o : d->operands)
    if (!uniform_scalar(o, depth + 1)) return false;
  return true;
}
}  // namespace

bool is_uniform_scalar(const Value* v) { return uniform_scalar(v, 0); }

bool is_removable_if_unused(const Operation& op) {
  if (has_trait(op.op, kTerminator)) return false;
  return !writes_or_has_effects(op);
}

}  // namespace tl::ir
