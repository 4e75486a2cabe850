// NVIDIA's capability table by sm (codegen/gpu/capabilities.hpp).
#pragma once

#include <string>

#include "codegen/gpu/capabilities.hpp"

namespace tl::nvptx {

// The table of `arch` ("sm_80", "sm_90a"); below sm_80, or a name that is not sm_<n>,
// gets the conservative default: 48 KiB of static shared memory, no cp.async, no FP8.
gpu::TargetCapabilities capabilities(const std::string& arch);

}  // namespace tl::nvptx
