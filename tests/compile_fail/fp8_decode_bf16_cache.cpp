// expect: KvFormat
// The FP8 decode sample takes an e4m3 KV cache (OCP or FNUZ); a bf16 one does not compile.
#include <vector>
#include "samples/fp8_decode/decode.hpp"
void f(tl::device dev) {
  std::vector<int32_t> lens = {1};
  auto w = fp8_decode::make_workspace<tl::bf16>(dev, fp8_decode::Problem{}, lens);
}
