// direct_copy.hpp: the chunk widths a direct-to-shared copy may use.
#include "codegen/passes/direct_copy.hpp"

#include <algorithm>

namespace tl::passes {

std::vector<int> direct_copy_widths(const AxisAnalysis& axis, const DirectCopyQuery& q) {
  const ir::Type& t = q.ptr->type;
  const int along = q.dim < 0 ? t.rank() - 1 : q.dim;
  std::vector<int> out;
  if (along < 0 || along >= t.rank()) return out;
  const int eb = byte_width(t.pointee);
  if (eb == 0) return out;  // (packed 4-bit elements: not copied as chunks of elements)
  const int contiguous = axis.vector_width(q.ptr, along);  // elements, aligned to the access (16 bytes at most)
  const int64_t constancy = q.mask ? axis.mask_constancy(q.mask, along) : INT64_MAX;
  const int vec = q.vec_elements > 0 ? q.vec_elements : std::max(1, 16 / eb);
  const int64_t tile_bytes = t.numel() * eb;
  for (int w : q.target_widths) {
    if (w < 4 || (w & (w - 1)) || w % eb) continue;
    const int per = w / eb;
    if (per > vec || per > contiguous || per > constancy || per > t.shape[size_t(along)] ||
        tile_bytes < int64_t(w) * q.wave_size)
      continue;
    out.push_back(w);
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

}  // namespace tl::passes
