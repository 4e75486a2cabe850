// One op order for a traced program whatever compiled the user's C++. The tracer records
// ops in the order the host compiler evaluates the user's expressions, and C++ leaves the
// order of a call's arguments (an overloaded operator's operands too) to the compiler:
// GCC on x86-64 evaluates them right to left, clang left to right, so
// `tl::dot(tl::load(a), tl::load(b))` traced b's load first built by GCC and a's first built
// by clang, and the two programs got other registers (the tutorial matmul 64x64x32 on
// gfx950: 44 VGPRs and 50; cross_entropy on gfx942: 28 and 36; cumsum on gfx950: 31 and 34).
//
// What C++ does sequence is kept: statements, and a call's own work after its arguments.
// Each block is cut into statements from its end: a statement is its last op (a store,
// the op whose result a variable takes) and the ops before it that only it uses, directly
// or not, traced from its line or a later one (an op from an earlier line is an earlier
// statement's, one the root happens to be the only user of), with nothing that writes
// memory or has an effect among them (so that a load never crosses a store, a barrier or
// an atomic, and those keep their order). Statements stay in their traced order; inside
// one, from its last op backwards, each op gets right before it
//   - the ops its own call traced after its arguments (right before it, from its source
//     location, line and column, used by nothing else: a load's `other` made a tile), and
//     the constants it reads itself (a number argument converted to a tile: GCC gives the
//     conversion the call's location, clang the argument's), its last operand's first;
//   - before those, its arguments, each placed the same way, the last argument first and
//     the first right before it: GCC's order, which the recorded VGPR ceilings were measured
//     with and which gave the fewer registers in each kernel above (B's tile loaded before
//     A's, the cumsum's result computed before the 64-bit address it is stored to, which
//     then does not live across the scan).
// An op several of the statement's ops read is placed from the last of them placed; ops
// of a statement nothing reaches (unused) go first, in their traced order. A loop's
// terminator has the loop's line and is no statement.
//
// Limits (docs/ir.md): a statement is told by its lines, so a helper function defined
// above its call, called for two arguments of one call (`tl::dot(h(a), h(b))`), has its
// ops in statements of their own, in the compiler's order; GCC gives an operator spanning
// lines the location of its end, which cuts such a statement short under GCC.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "codegen/ir/op_properties.hpp"
#include "codegen/passes/passes.hpp"
#include "tl/error.hpp"

namespace tl::passes {
namespace {

bool reads_memory(const ir::Operation& op) {
  if (ir::has_trait(op.op, ir::kReadsMemory)) return true;
  for (auto& r : op.regions)
    for (auto& o : r->ops)
      if (reads_memory(*o)) return true;
  return false;
}

// Ops of the first kind above: they keep their place among themselves.
bool fixed(const ir::Operation& op) {
  return ir::writes_or_has_effects(op) || ir::has_trait(op.op, ir::kTerminator) ||
         ir::has_trait(op.op, ir::kAllocates);
}

// Every value `op` reads, its regions' reads of values from outside included, in operand
// order and then the regions' walk order.
void reads_of(const ir::Operation& op, std::vector<ir::Value*>& out) {
  for (ir::Value* v : op.operands) out.push_back(v);
  for (auto& r : op.regions)
    ir::walk(*r, [&](ir::Operation& inner) {
      for (ir::Value* v : inner.operands) out.push_back(v);
    });
}

struct Node {
  ir::Operation* op = nullptr;
  bool fixed = false;
  std::vector<size_t> operands;  // producers in this block, in reading order (repeats kept)
  std::vector<size_t> users;     // distinct
  std::vector<size_t> users_of_operands;  // the distinct producers among `operands`
  int users_left = 0;            // users not placed yet
  bool placed = false, in_statement = false;
  unsigned group = 0, seen = 0;  // the visit (order_block's) that grouped it, that saw it
};

// A `for` carries its values in the order its body, in the canonical order, first reads
// them (an op reading two: its first operand first); those it never reads stay after, as
// the tracer gave them (in the order their tiles were made). The tracer's order was the
// order the body touched the tiles as the compiler evaluated it. Returns whether the
// order changed.
bool order_carried(ir::Operation& loop) {
  ir::Block& body = *loop.regions[0];
  const size_t carried = loop.results.size();
  if (carried < 2 || body.args.size() != carried + 1 || loop.operands.size() != carried + 3) return false;
  std::unordered_map<const ir::Value*, size_t> first;
  size_t at = 0;
  ir::walk(body, [&](ir::Operation& op) {
    for (ir::Value* v : op.operands) first.emplace(v, at++);
  });
  std::vector<size_t> order(carried);
  for (size_t j = 0; j < carried; ++j) order[j] = j;
  auto key = [&](size_t j) {
    auto it = first.find(body.args[j + 1].get());
    return it == first.end() ? SIZE_MAX : it->second;
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return key(x) < key(y); });
  bool moved = false;
  for (size_t j = 0; j < carried; ++j) moved |= order[j] != j;
  if (!moved) return false;
  ir::Operation* yield = body.ops.empty() ? nullptr : body.ops.back().get();
  if (!yield || !ir::has_trait(yield->op, ir::kTerminator) || yield->operands.size() != carried) return false;
  std::vector<ir::Value*> operands(loop.operands.begin(), loop.operands.begin() + 3), yields;
  std::vector<std::unique_ptr<ir::Value>> args, results;
  args.push_back(std::move(body.args[0]));
  for (size_t j : order) {
    operands.push_back(loop.operands[3 + j]);
    yields.push_back(yield->operands[j]);
    args.push_back(std::move(body.args[1 + j]));
    results.push_back(std::move(loop.results[j]));
  }
  loop.operands = std::move(operands);
  yield->operands = std::move(yields);
  body.args = std::move(args);
  loop.results = std::move(results);
  for (size_t i = 0; i < body.args.size(); ++i) body.args[i]->index = int(i);
  for (size_t i = 0; i < loop.results.size(); ++i) loop.results[i]->index = int(i);
  return true;
}

bool order_block(ir::Block& b, const SameCall& same_call) {
  bool changed = false;
  for (auto& op : b.ops) {
    for (auto& r : op->regions) changed |= order_block(*r, same_call);
    if (op->op == Op::for_) changed |= order_carried(*op);
  }
  const size_t n = b.ops.size();
  if (n < 2) return changed;

  std::vector<Node> nodes(n);
  std::unordered_map<const ir::Value*, size_t> defined_by;
  for (size_t i = 0; i < n; ++i) {
    nodes[i].op = b.ops[i].get();
    nodes[i].fixed = fixed(*nodes[i].op);
    for (auto& r : nodes[i].op->results) defined_by[r.get()] = i;
  }
  std::vector<ir::Value*> reads;
  for (size_t i = 0; i < n; ++i) {
    reads.clear();
    reads_of(*nodes[i].op, reads);
    for (ir::Value* v : reads) {
      auto it = defined_by.find(v);
      if (it == defined_by.end() || it->second == i) continue;
      nodes[i].operands.push_back(it->second);
      auto& users = nodes[it->second].users;
      if (users.empty() || users.back() != i) {  // (i grows: a repeat is the last one)
        users.push_back(i);
        nodes[i].users_of_operands.push_back(it->second);
      }
    }
  }
  for (auto& node : nodes) node.users_left = int(node.users.size());

  // Statements, from the block's end: the last op of one (its root: a store, or the op
  // whose result a variable takes) and before it the ops only it uses, directly or not,
  // traced from lines at or after the root's (an earlier line is an earlier statement,
  // whose value the root happens to be the only user of). Nothing with an effect is
  // inside one, so that reads never cross an effect.
  std::vector<size_t> order;  // the new order, reversed
  order.reserve(n);
  unsigned visits = 0;
  size_t u = n;
  while (u-- > 0) {
    Node& root = nodes[u];
    const ir::SrcLoc& at = root.op->loc;
    size_t s = u;
    // (A terminator is no statement: it has the loop's line, and what it yields are the
    // values of the body's statements.)
    while (s > 0 && !ir::has_trait(root.op->op, ir::kTerminator)) {
      const Node& p = nodes[s - 1];
      if (p.fixed || p.op->loc.line < at.line || std::string_view(p.op->loc.file) != at.file) break;
      bool closed = true;
      for (size_t user : p.users) closed &= user >= s && user <= u;
      if (!closed) break;
      --s;
    }
    for (size_t i = s; i < u; ++i) nodes[i].in_statement = true;
    // visit(i), from the root: place i and before it the ops its own call traced (right
    // before it, from the same source location, used only by it and each other: a
    // load's `other` made a tile), then the arguments of these, each the same way, first
    // argument first, so that the last is computed first (GCC's order). An op several
    // use is placed from the last of them placed.
    std::function<void(size_t)> visit = [&](size_t i) {
      // (Marks by visit, so that a call of thousands of ops, a math function's, stays linear.)
      const unsigned id = ++visits;
      std::vector<size_t> group;
      auto in_group = [&](size_t k) { return nodes[k].group == id; };
      // A member of the group brings the constants it reads itself (used by nothing else):
      // they go right before it, its last operand's first, made where a number argument
      // converted to a tile (whose location GCC gives as the call's, clang as the
      // argument's) or by the call itself (`x * 8`, a load's `other`).
      auto join = [&](size_t k) {
        group.push_back(k);
        nodes[k].group = id;
        for (size_t p : nodes[k].operands) {
          Node& c = nodes[p];
          if (c.in_statement && !c.placed && c.op->operands.empty() && c.op->regions.empty() && c.users.size() == 1 &&
              !in_group(p)) {
            group.push_back(p);
            c.group = id;
          }
        }
      };
      join(i);
      for (size_t k = i; k-- > s;) {
        const Node& c = nodes[k];
        if (in_group(k)) continue;
        if (c.placed || !same_call(*c.op, *nodes[i].op)) break;
        bool own = true;
        for (size_t user : c.users) own &= in_group(user);
        if (!own) break;
        join(k);
      }
      for (size_t g : group) {
        nodes[g].placed = true;
        order.push_back(g);
        for (size_t p : nodes[g].users_of_operands) --nodes[p].users_left;
      }
      // The arguments in the order i reads them, through its call's own ops (an add's
      // operands through the broadcasts it made of them).
      std::vector<size_t> roots;
      auto arguments_of = [&](size_t from) {  // (depth first, each op once)
        if (nodes[from].seen == id) return;
        nodes[from].seen = id;
        std::vector<std::pair<size_t, size_t>> at{{from, 0}};
        while (!at.empty()) {
          auto& [g, next] = at.back();
          if (next == nodes[g].operands.size()) {
            at.pop_back();
            continue;
          }
          size_t p = nodes[g].operands[next++];
          if (nodes[p].seen == id) continue;
          nodes[p].seen = id;
          if (in_group(p)) at.push_back({p, 0});
          else if (nodes[p].in_statement && !nodes[p].placed) roots.push_back(p);
        }
      };
      arguments_of(i);
      for (size_t g : group) arguments_of(g);  // (own ops i does not read: none, or unused)
      for (size_t p : roots)
        if (!nodes[p].placed && nodes[p].users_left == 0) visit(p);
    };
    visit(u);
    // Ops of the statement nothing in it reaches (unused), first, in traced order.
    for (size_t i = u; i-- > s;)
      if (!nodes[i].placed) {
        nodes[i].placed = true;
        order.push_back(i);
      }
    for (size_t i = s; i < u; ++i) nodes[i].in_statement = false;
    u = s;
  }
  if (order.size() != n)
    throw compile_error("tl internal error: canonical op order: an op was placed twice or never",
                        b.ops.front()->loc.file, b.ops.front()->loc.line);

  std::vector<std::unique_ptr<ir::Operation>> ordered;
  ordered.reserve(n);
  for (size_t k = n; k-- > 0;) {
    if (order[k] != n - 1 - k) changed = true;
    ordered.push_back(std::move(b.ops[order[k]]));
  }
  b.ops = std::move(ordered);
  return changed;
}

}  // namespace

bool order_canonically(ir::Function& f, const SameCall& same_call) {
  SameCall same = same_call ? same_call : [](const ir::Operation& a, const ir::Operation& b) {
    return a.loc.line == b.loc.line && std::string_view(a.loc.file) == b.loc.file;
  };
  return order_block(f.body, same);
}

}  // namespace tl::passes
