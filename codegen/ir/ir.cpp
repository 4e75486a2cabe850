// The tile IR's data structures and its textual form.
#include "codegen/ir/ir.hpp"

#include <bit>
#include <fmt/format.h>

#include <cmath>
#include <unordered_map>

#include "codegen/ir/op_properties.hpp"

namespace tl {

const char* op_name(Op op) {
  switch (op) {
    case Op::constant: return "constant"; case Op::program_id: return "program_id";
    case Op::num_programs: return "num_programs"; case Op::arange: return "arange";
    case Op::splat: return "splat"; case Op::broadcast: return "broadcast";
    case Op::expand_dims: return "expand_dims"; case Op::reshape: return "reshape";
    case Op::trans: return "trans"; case Op::join: return "join"; case Op::split: return "split";
    case Op::cat: return "cat"; case Op::flip: return "flip"; case Op::gather: return "gather";
    case Op::sort: return "sort"; case Op::histogram: return "histogram";
    case Op::add: return "add"; case Op::sub: return "sub";
    case Op::mul: return "mul"; case Op::div: return "div"; case Op::rem: return "rem";
    case Op::min: return "min"; case Op::max: return "max"; case Op::band: return "and";
    case Op::bor: return "or"; case Op::bxor: return "xor"; case Op::shl: return "shl";
    case Op::shr: return "shr"; case Op::neg: return "neg"; case Op::bnot: return "not";
    case Op::exp: return "exp"; case Op::exp2: return "exp2"; case Op::log: return "log";
    case Op::log2: return "log2"; case Op::sqrt: return "sqrt"; case Op::rsqrt: return "rsqrt";
    case Op::abs: return "abs"; case Op::sin: return "sin"; case Op::cos: return "cos";
    case Op::erf: return "erf"; case Op::floor: return "floor"; case Op::ceil: return "ceil";
    case Op::fma: return "fma"; case Op::cmp: return "cmp"; case Op::select: return "select";
    case Op::cast: return "cast"; case Op::bitcast: return "bitcast"; case Op::addptr: return "addptr";
    case Op::load: return "load"; case Op::store: return "store";
    case Op::atomic_rmw: return "atomic_rmw"; case Op::atomic_cas: return "atomic_cas";
    case Op::shared_alloc: return "shared_alloc";
    case Op::shared_load: return "shared_load"; case Op::shared_store: return "shared_store";
    case Op::global_load_to_shared: return "global_load_to_shared"; case Op::async_wait: return "async_wait";
    case Op::tensor_map_load: return "tensor_map_load";
    case Op::mbarrier: return "mbarrier";
    case Op::tensor_map_store: return "tensor_map_store";
    case Op::barrier: return "barrier";
    case Op::reduce: return "reduce"; case Op::scan: return "scan"; case Op::dot: return "dot";
    case Op::convert_layout: return "convert_layout";
    case Op::dot_wait: return "dot_wait"; case Op::fence_async_shared: return "fence_async_shared"; case Op::for_: return "for";
    case Op::if_: return "if"; case Op::yield: return "yield"; case Op::assert_: return "assert";
    case Op::print: return "print"; case Op::while_: return "while"; case Op::hint: return "hint";
    case Op::assume: return "assume"; case Op::inline_asm_elementwise: return "inline_asm_elementwise";
    case Op::gdc_wait: return "gdc_wait"; case Op::gdc_launch_dependents: return "gdc_launch_dependents";
  }
  return "?";
}

namespace ir {

std::string Type::str() const {
  std::string e = std::string(name(dtype));
  if (dtype == DType::ptr) e = fmt::format("ptr<{}>", pointee == DType::ptr ? pointee_type().str() : name(pointee));
  if (shape.empty() && !is_shared()) return e;
  std::string s = "tile<";
  for (int d : shape) s += fmt::format("{}x", d);
  s += e + ">";
  return is_shared() ? fmt::format("smem<{} x {}>", stages, s) : s;
}

Value* Block::add_arg(Type t) {
  auto v = std::make_unique<Value>();
  v->type = std::move(t);
  v->owner = this;
  v->index = int(args.size());
  args.push_back(std::move(v));
  return args.back().get();
}

Operation* Block::terminator() const {
  if (ops.empty() || ops.back()->op != Op::yield) return nullptr;
  return ops.back().get();
}

Value* Operation::add_result(Type t) {
  auto v = std::make_unique<Value>();
  v->type = std::move(t);
  v->def = this;
  v->index = int(results.size());
  results.push_back(std::move(v));
  return results.back().get();
}

Block* Operation::add_region() {
  regions.push_back(std::make_unique<Block>());
  regions.back()->parent = this;
  return regions.back().get();
}

void replace_all_uses(Block& scope, Value* from, Value* to) {
  walk(scope, [&](Operation& op) {
    for (auto& v : op.operands)
      if (v == from) v = to;
  });
}

namespace {

const char* pred_name(int64_t p) {
  static const char* names[] = {"lt", "le", "gt", "ge", "eq", "ne"};
  return p >= 0 && p < 6 ? names[p] : "?";
}
const char* reduce_name(int64_t k) {
  static const char* names[] = {"sum", "max", "min", "argmax", "argmin", "xor_sum", "prod"};
  return k >= 0 && k < 7 ? names[k] : "?";
}
const char* atomic_name(int64_t k) {
  static const char* names[] = {"add", "max", "min", "xchg", "and", "or", "xor"};
  return k >= 0 && k < 7 ? names[k] : "?";
}
const char* sem_name(int64_t s) {
  static const char* names[] = {"relaxed", "acquire", "release", "acq_rel"};
  return s >= 0 && s < 4 ? names[s] : "?";
}
const char* scope_name(int64_t s) {
  static const char* names[] = {"cta", "gpu", "sys"};
  return s >= 0 && s < 3 ? names[s] : "?";
}

// Values are numbered in definition order, so that the text (and so the hash) of two
// traces of the same program is identical.
class Printer {
 public:
  explicit Printer(bool locs) : locs_(locs) {}

  std::string function(const Function& f) {
    out_ = fmt::format("tl.func @{}(", f.name);
    for (size_t i = 0; i < f.body.args.size(); ++i) {
      const Value* a = f.body.args[i].get();
      out_ += fmt::format("{}{}: {}", i ? ", " : "", name(a), a->type.str());
      if (i < f.arg_info.size() && f.arg_info[i].divisible_by_16) out_ += " {div16}";
      if (i < f.arg_info.size() && f.arg_info[i].pointer_range_32) out_ += " {range32}";
      if (i < f.arg_info.size() && f.arg_info[i].tensor_map) out_ += " {tensor_map}";
    }
    out_ += ")";
    if (f.num_warps) out_ += fmt::format(" attributes {{num_warps = {}}}", f.num_warps);
    out_ += " {\n";
    block(f.body, 1);
    out_ += "}\n";
    // GPU planning's layouts, each printed once (Triton's #blocked / #mma aliases).
    for (size_t i = 0; i < layouts_.size(); ++i) out_ += fmt::format("#l{} = {}\n", i, layouts_[i].str());
    return std::move(out_);
  }

 private:
  std::string name(const Value* v) {
    auto it = ids_.find(v);
    if (it == ids_.end()) it = ids_.emplace(v, int(ids_.size())).first;
    return fmt::format("%{}", it->second);
  }

  std::string layout_alias(const Layout& l) {
    for (size_t i = 0; i < layouts_.size(); ++i)
      if (layouts_[i] == l) return fmt::format("#l{}", i);
    layouts_.push_back(l);
    return fmt::format("#l{}", layouts_.size() - 1);
  }
  // A value's type, and where GPU planning put it.
  std::string typed(const Value* v) {
    std::string s = v->type.str();
    if (v->rematerialized) s += " #remat";
    else if (v->layout) s += " " + layout_alias(*v->layout);
    return s;
  }

  void block(const Block& b, int depth) {
    for (auto& op : b.ops) operation(*op, depth);
  }

  std::string attrs(const Operation& op) {
    switch (op.op) {
      case Op::constant:
        return is_float(op.result()->type.dtype) ? fmt::format(" {}", op.f) : fmt::format(" {}", op.i0);
      case Op::program_id: case Op::num_programs: case Op::expand_dims:
        return fmt::format(" axis={}", op.i0);
      case Op::arange: return fmt::format(" {}..{}", op.i0, op.i1);
      case Op::add: case Op::sub: case Op::mul: case Op::shl:
        // " rn": a float op of the math library, never fused into an fma (enable_fp_fusion)
        return op.i1 ? " index" : op.op != Op::shl && op.i0 == 1 && is_float(op.result()->type.dtype) ? " rn" : "";
      case Op::cmp: return fmt::format(" {}", pred_name(op.i0));
      case Op::trans: return fmt::format(" perm=[{}]", fmt::join(op.ints, ","));
      case Op::split: return op.i0 ? " hi" : " lo";
      case Op::flip: return fmt::format(" dim={}", op.i0);
      case Op::gather: return fmt::format(" axis={}", op.i0);
      case Op::sort: {  // (" k=8": a top-k, the first 8 of the sorted order kept)
        std::string k;
        const size_t d = size_t(op.i0);
        if (!op.operands.empty() && !op.results.empty() && d < op.operands[0]->type.shape.size() &&
            d < op.result()->type.shape.size() && op.result()->type.shape[d] < op.operands[0]->type.shape[d])
          k = fmt::format(" k={}", op.result()->type.shape[d]);
        return fmt::format(" dim={}{}{}", op.i0, op.i1 ? " descending" : "", k);
      }
      case Op::reduce: case Op::scan:  // (a combine region: the user's combine function)
        return fmt::format(" {} axis={}", op.regions.empty() ? reduce_name(op.i1) : "combine", op.i0);
      case Op::atomic_rmw:
        return fmt::format(" {} {} {}", atomic_name(op.i0), sem_name(op.i1 & 0xff), scope_name(op.i1 >> 8));
      case Op::atomic_cas: return fmt::format(" {} {}", sem_name(op.i1 & 0xff), scope_name(op.i1 >> 8));
      case Op::load: case Op::store: {
        std::string s = op.i0 ? " buffer" : "";
        const AccessFlags a = access_flags(op);
        if (a.modifier != cache_modifier::none) s += fmt::format(" cache={}", cache_name(a.modifier));
        if (a.eviction != evict::normal) s += fmt::format(" {}", evict_name(a.eviction));
        if (a.is_volatile) s += " volatile";
        return s;
      }
      case Op::inline_asm_elementwise: {  // str: constraints, newline, asm
        const size_t nl = op.str.find('\n');
        const std::string asm_text = nl == std::string::npos ? op.str : op.str.substr(nl + 1);
        return fmt::format(" \"{}\" constraints=\"{}\" pack={}{}", asm_text, op.str.substr(0, nl), op.i0,
                           op.i1 ? " pure" : "");
      }
      case Op::for_:
        return fmt::format("{}{}", op.i0 > 0 ? fmt::format(" num_stages={}", op.i0) : "",
                           op.i1 == kAsyncDotStage ? " async_dot_stage" : "");
      case Op::div: return op.i0 == 2 ? " rcp" : op.i0 ? " approx" : "";  // math library / tl::fast_dividef
      case Op::exp2: return op.i0 == 2 ? " raw" : "";  // math library (tl::tanh)
      case Op::hint: {
        const char* kinds[] = {"multiple_of", "max_contiguous", "max_constancy"};
        return fmt::format(" {}=[{}]", op.i0 >= 0 && op.i0 < 3 ? kinds[op.i0] : "?", fmt::join(op.ints, ","));
      }
      case Op::assert_: case Op::print: return fmt::format(" \"{}\"", op.str);
      case Op::shared_load:
        return fmt::format("{}{}", op.i0 ? " relaxed" : "", op.i1 == kReadByDot ? " read_by_dot" : "");
      case Op::dot:  // i0: Triton's input_precision "ieee" (no TF32 products)
        return fmt::format("{}{}", op.i0 ? " ieee" : "",
                           op.str.empty() || op.ints.size() < 3
                               ? ""
                               : fmt::format(" {} kpack={} warps={}x{}{}", op.str, op.ints[0], op.ints[1],
                                             op.ints[2], op.i1 == kAsyncDot ? " async" : ""));
      case Op::dot_wait: return fmt::format(" pending={}", op.i0);
      case Op::convert_layout:
        return fmt::format(" path={}{}{}", convert_path_name(ConvertPath(op.i0)),
                           op.i1 & kTransposedRead ? " read=transposed" : "",
                           op.i1 & kConversionReadByDot ? " read_by_dot" : "");
      case Op::global_load_to_shared:
        return fmt::format("{}{}{}", op.i0 ? " into_last_read_stage" : "",
                           op.i1 == kBufferAccess ? " buffer" : op.i1 == kCompilerCopy ? " compiler" : "",
                           !op.copy ? ""
                           : op.copy->chunk_bytes == 0
                               ? std::string(" loaded_and_stored")
                               : fmt::format(" chunk={}B{}", op.copy->chunk_bytes,
                                             op.copy->through_resource ? " through_resource" : ""));
      case Op::barrier: return op.i0 ? " shared" : "";
      case Op::tensor_map_load:
        return fmt::format("{}{}", op.i0 == kCopyIntoLastReadStage ? " into_last_read_stage" : "",
                           op.i1 == kTensorMapIssue ? " issue" : "");
      case Op::mbarrier:
        return op.i0 == kMbarrierInit   ? fmt::format(" init arrivals={}", op.i1)
               : op.i0 == kMbarrierWait ? std::string(" wait")
                                        : std::string(" inval");
      case Op::async_wait:
        return fmt::format(" num_outstanding={}{}", op.i0,
                           op.i1 == kWaitCountsCopies ? " copies" : op.i1 == kWaitCountsLoads ? " loads" : "");
      default: return "";
    }
  }

  // The canonical form (the cache key's text) also spells out every attribute field
  // that is not at its default, whether or not the readable form above shows it: two
  // programs that differ in any attribute must never share a cached kernel.
  static std::string raw_attrs(const Operation& op) {
    std::string s;
    if (op.i0) s += fmt::format(" i0={}", op.i0);
    if (op.i1) s += fmt::format(" i1={}", op.i1);
    // A NaN's payload is part of the constant (a bitcast shows it): its bits, not "nan".
    if (std::isnan(op.f)) s += fmt::format(" f=nan:{:016x}", std::bit_cast<uint64_t>(op.f));
    else if (op.f != 0.0 || std::signbit(op.f)) s += fmt::format(" f={}", op.f);
    if (!op.ints.empty()) s += fmt::format(" ints=[{}]", fmt::join(op.ints, ","));
    if (!op.str.empty()) s += fmt::format(" str={}:{}", op.str.size(), op.str);
    return s.empty() ? s : " #" + s;
  }

  void operation(const Operation& op, int depth) {
    std::string ind(depth * 2, ' ');
    std::string line = ind;
    if (!op.results.empty()) {
      for (size_t i = 0; i < op.results.size(); ++i) line += (i ? ", " : "") + name(op.results[i].get());
      line += " = ";
    }
    line += op_name(op.op);
    line += attrs(op);
    if (op.layout) line += " layout=" + layout_alias(*op.layout);
    if (op.shared) line += " shared=[" + op.shared->str() + "]";
    if (op.smem) line += fmt::format(" smem=[{}, +{}]", op.smem->offset, op.smem->bytes);
    for (size_t i = 0; i < op.operands.size(); ++i) line += (i ? ", " : " ") + name(op.operands[i]);
    if (!op.results.empty()) {
      line += " :";
      for (size_t i = 0; i < op.results.size(); ++i) line += (i ? ", " : " ") + typed(op.results[i].get());
    }
    if (!op.regions.empty()) {
      out_ += line;
      for (size_t r = 0; r < op.regions.size(); ++r) {
        const Block& b = *op.regions[r];
        out_ += r ? " else" : "";
        out_ += " {";
        if (!b.args.empty()) {
          out_ += " ^(";
          for (size_t i = 0; i < b.args.size(); ++i)
            out_ += fmt::format("{}{}: {}", i ? ", " : "", name(b.args[i].get()), typed(b.args[i].get()));
          out_ += ")";
        }
        out_ += "\n";
        block(b, depth + 1);
        out_ += ind + "}";
      }
      line.clear();
    }
    out_ += line;
    if (!locs_) out_ += raw_attrs(op);
    if (locs_ && op.loc.line) out_ += fmt::format("  // {}:{}", op.loc.file, op.loc.line);
    out_ += "\n";
  }

  bool locs_;
  std::string out_;
  std::vector<Layout> layouts_;
  std::unordered_map<const Value*, int> ids_;
};

}  // namespace

std::string short_location(const SrcLoc& l) {
  std::string f = l.file ? l.file : "";
  size_t slash = f.find_last_of('/');
  return fmt::format("{}:{}", slash == std::string::npos ? f : f.substr(slash + 1), l.line);
}

std::string Function::str(bool with_locations) const { return Printer(with_locations).function(*this); }

}  // namespace ir
}  // namespace tl
