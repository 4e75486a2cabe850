// Triton tutorial 07 (python/tutorials/07-extern-functions.py): `asin_kernel`, 01's
// vector kernel applying `libdevice.asin` (from `triton.language.extra.libdevice`, also
// with a user-given `extern_libs` path). tl has no libdevice functions beyond its own math
// (gap "tl.extra.libdevice"); the kernel around the call is tutorial 01's.
#include "conformance/common.hpp"

namespace {

TEST(Tutorial07, ExternFunctionAsin) { CONFORMANCE_GAP("tl.extra.libdevice"); }

}  // namespace
