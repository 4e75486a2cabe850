// tl::inline_asm_elementwise as the tracer records it (tl/inline_asm.hpp): the checks that
// need no target, each naming the user's line. The backend only sees the assembly when it
// assembles the module, so what can be checked here (the operand count the packing makes
// against the constraint string) is: LLVM's own check would be an error with no line.
#include <fmt/format.h>

#include <algorithm>

#include "dsl/src/trace.hpp"
#include "tl/inline_asm.hpp"

namespace tl::detail {
namespace {

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// Elements of `t` one 32-bit register carries into or out of the asm (Triton's rule):
// narrower ones pack up to the invocation's `pack`; 32 bits and wider travel alone.
int per_register(DType t, int pack) {
  const int bits = t == DType::ptr ? 64 : bit_width(t);
  return bits < 32 ? std::min(32 / bits, pack) : 1;
}

// The constraint string's operand entries (clobbers "~{...}" left out).
std::vector<std::string> operand_constraints(const std::string& c) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= c.size()) {
    size_t end = c.find(',', start);
    if (end == std::string::npos) end = c.size();
    std::string e = c.substr(start, end - start);
    e.erase(0, e.find_first_not_of(" \t"));
    if (!e.empty() && e[0] != '~') out.push_back(e);
    start = end + 1;
  }
  return out;
}

}  // namespace

bool tracing_for_cpu(const Loc& loc) { return Trace::current(loc).cpu_target(); }

std::vector<ir::Value*> inline_asm_elementwise(const std::string& asm_text, const std::string& constraints,
                                               const std::vector<ir::Value*>& args, const std::vector<DType>& results,
                                               bool is_pure, int pack, const Loc& loc) {
  const char* fn = "tl::inline_asm_elementwise";
  Trace& t = Trace::current(loc);
  if (t.cpu_target())
    throw trace_error(fmt::format("{}: the CPU has no assembly to run; pass a fallback lambda (tl operations on the "
                                  "same tiles, traced on the CPU instead of the asm)", fn), loc);
  if (asm_text.empty()) throw trace_error(fmt::format("{}: the assembly is empty", fn), loc);
  if (constraints.find('\n') != std::string::npos)  // (the op keeps them before the asm, a newline between)
    throw trace_error(fmt::format("{}: the constraints contain a newline", fn), loc);
  if (args.empty())
    throw trace_error(fmt::format("{}: give at least one argument tile (its shape is the results')", fn), loc);
  if (pack < 1 || pack > 16 || (pack & (pack - 1)) != 0)
    throw trace_error(fmt::format("{}: pack must be 1, 2, 4, 8 or 16, got {}", fn, pack), loc);
  for (DType r : results)
    if (r == DType::i1 || r == DType::ptr)
      throw trace_error(fmt::format("{}: a result of type {} is not supported (give an integer or float type)", fn,
                                    name(r)), loc);
  // The arguments broadcast to one shape, numpy's way (ranks aligned on the right).
  Shape shape;
  for (ir::Value* a : args) {
    if (a->type.dtype == DType::i1)
      throw trace_error(fmt::format("{}: an i1 argument has no register form in assembly; convert it "
                                    "(.to<tl::i32>())", fn), loc);
    const Shape& s = a->type.shape;
    if (s.empty()) continue;
    if (shape.empty()) {
      shape = s;
      continue;
    }
    const size_t n = std::max(shape.size(), s.size());
    Shape r(n);
    for (size_t i = 0; i < n; ++i) {
      int da = i < n - shape.size() ? 1 : shape[i - (n - shape.size())];
      int db = i < n - s.size() ? 1 : s[i - (n - s.size())];
      if (da != db && da != 1 && db != 1)
        throw trace_error(fmt::format("{}: argument shapes {} and {} do not broadcast", fn, shape_str(shape),
                                      shape_str(s)), loc);
      r[i] = std::max(da, db);
    }
    shape = std::move(r);
  }
  int64_t numel = 1;
  for (int d : shape) numel *= d;
  if (numel % pack != 0)
    throw trace_error(fmt::format("{}: pack={} does not divide the {} elements of the arguments' shape {}", fn, pack,
                                  numel, shape_str(shape)), loc);

  // The asm's operands: each result's pack / n outputs, then each argument's pack / n inputs.
  size_t outputs = 0, inputs = 0;
  for (DType r : results) outputs += size_t(pack / per_register(r, pack));
  for (ir::Value* a : args) inputs += size_t(pack / per_register(a->type.dtype, pack));
  std::vector<std::string> c = operand_constraints(constraints);
  if (c.size() != outputs + inputs)
    throw trace_error(fmt::format("{}: the constraints \"{}\" name {} operands; this call has {}: {} outputs ($0..) "
                                  "then {} inputs (elements under 32 bits are packed into 32-bit registers, pack={})",
                                  fn, constraints, c.size(), outputs + inputs, outputs, inputs, pack), loc);
  for (size_t i = 0; i < c.size(); ++i)
    if ((c[i][0] == '=') != (i < outputs))
      throw trace_error(fmt::format("{}: constraint {} (\"{}\") should {}: the {} outputs come first, each \"=...\"",
                                    fn, i, c[i], i < outputs ? "be an output" : "not be an output", outputs), loc);

  std::vector<ir::Value*> operands;
  for (ir::Value* a : args) operands.push_back(broadcast_to(a, shape, loc));
  ir::Operation* op = t.emit(Op::inline_asm_elementwise, operands, loc);
  op->str = constraints + "\n" + asm_text;
  op->i0 = pack;
  op->i1 = is_pure ? 1 : 0;
  std::vector<ir::Value*> out;
  for (DType r : results) out.push_back(op->add_result(ir::Type{r, r, shape}));
  return out;
}

}  // namespace tl::detail
