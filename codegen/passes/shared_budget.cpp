#include "codegen/passes/shared_budget.hpp"

#include <algorithm>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "codegen/passes/shared_buffers.hpp"

namespace tl::passes {
namespace {

// The alignment the allocator gives a buffer of at least a bank row (gpu::buffer_alignment:
// 32 banks of 4 bytes on every GPU tl targets).
constexpr int64_t kBankRow = 128;

struct Points {
  // op -> [its number in pre-order, the last number inside it]
  std::unordered_map<const ir::Operation*, std::pair<int64_t, int64_t>> span;
  std::unordered_map<const ir::Value*, std::vector<const ir::Operation*>> users;
  int64_t next = 0;

  void number(const ir::Block& b) {
    for (auto& op : b.ops) {
      const int64_t at = next++;
      for (const ir::Value* v : op->operands) users[v].push_back(op.get());
      for (auto& r : op->regions) number(*r);
      span[op.get()] = {at, next - 1};
    }
  }
  bool contains(const ir::Operation* op, int64_t point) const {
    auto [s, e] = span.at(op);
    return s <= point && point <= e;
  }
};

}  // namespace

int64_t live_shared_bytes(const ir::Function& f, const ir::Operation* within, const SharedBytesOf& bytes_of) {
  Points p;
  p.number(f.body);
  const SharedBuffers shared(f);
  std::unordered_map<const ir::Operation*, std::pair<int64_t, int64_t>> live;  // alloc -> [first, last]
  for (const ir::Operation* alloc : shared.allocations()) {
    const int64_t def = p.span.at(alloc).first;
    live[alloc] = {def, def};
  }
  for (auto& [v, allocs] : shared.all()) {
    // The loop `v` is a carried argument of: the buffer is live over all of it.
    const ir::Operation* carrier = !v->def && v->owner && v->owner->parent && v->index > 0 &&
                                           v->owner->parent->op == Op::for_
                                       ? v->owner->parent
                                       : nullptr;
    auto it = p.users.find(v);
    for (const ir::Operation* alloc : allocs) {
      auto& [first, last] = live.at(alloc);
      if (carrier) {
        first = std::min(first, p.span.at(carrier).first);
        last = std::max(last, p.span.at(carrier).second);
      }
      if (it == p.users.end()) continue;
      for (const ir::Operation* u : it->second) {
        int64_t point = p.span.at(u).second;  // (an op with regions: to its end)
        // A use inside a loop that does not allocate the buffer is one every iteration:
        // the buffer lives to the loop's end.
        for (const ir::Operation* l = u->parent ? u->parent->parent : nullptr; l;
             l = l->parent ? l->parent->parent : nullptr)
          if ((l->op == Op::for_ || l->op == Op::while_) && !p.contains(l, p.span.at(alloc).first))
            point = std::max(point, p.span.at(l).second);
        last = std::max(last, point);
      }
    }
  }
  int64_t lo = 0, hi = p.next - 1;
  if (within) std::tie(lo, hi) = p.span.at(within);
  std::vector<std::tuple<int64_t, int64_t, int64_t>> ranges;  // first, last, bytes
  for (const ir::Operation* alloc : shared.allocations()) {
    auto [first, last] = live.at(alloc);
    if (last < lo || first > hi) continue;
    const ir::Type& t = alloc->result()->type;
    const int64_t bytes = bytes_of ? bytes_of(*alloc) : t.numel() * byte_width(t.dtype) * std::max(1, t.stages);
    ranges.emplace_back(std::max(first, lo), last, (bytes + kBankRow - 1) / kBankRow * kBankRow);
  }
  // The most bytes live together are live at some range's start.
  int64_t most = 0;
  for (const auto& r : ranges) {
    const int64_t at = std::get<0>(r);
    int64_t sum = 0;
    for (auto [first, last, bytes] : ranges)
      if (first <= at && at <= last) sum += bytes;
    most = std::max(most, sum);
  }
  return most;
}

}  // namespace tl::passes
