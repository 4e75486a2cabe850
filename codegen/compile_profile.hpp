// Where a compile's time goes, by phase (issue 44): the tile passes, the GPU planning, the
// lowering to LLVM IR, LLVM's middle end, the backend's code generation (on AMD every
// schedule alternative it compiles) and the link. compile() collects the phases of the
// kernel it compiles into CodeObject::phase_ms; the launch path adds the trace before them,
// prints them with TL_DEBUG and stores them in the cache entry (`tl-cache show`).
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace tl::codegen {

// Phase names, in pipeline order.
inline constexpr const char* kPhaseTrace = "trace";
inline constexpr const char* kPhaseTilePasses = "tile passes";
inline constexpr const char* kPhaseGpuPlanning = "gpu planning";
inline constexpr const char* kPhaseLowering = "lowering";
inline constexpr const char* kPhaseMiddleEnd = "llvm middle end";
inline constexpr const char* kPhaseCodegen = "backend codegen";
inline constexpr const char* kPhaseLink = "link";

using PhaseTimes = std::vector<std::pair<std::string, double>>;  // (phase, milliseconds), in order

// Adds `ms` to `phase` in `times` (a phase met again, as on a compile planned again with
// fewer stages, accumulates).
void add_phase_time(PhaseTimes& times, const std::string& phase, double ms);

// This thread's profile while compile() runs: installed for the compile's lifetime, the one
// before it (a compile nested in a trace) put back after.
class PhaseProfile {
 public:
  PhaseProfile();
  ~PhaseProfile();
  PhaseProfile(const PhaseProfile&) = delete;
  PhaseProfile& operator=(const PhaseProfile&) = delete;
  const PhaseTimes& times() const { return times_; }

 private:
  friend class PhaseTimer;
  PhaseTimes times_;
  PhaseProfile* outer_;
};

// Times its scope into `phase` of this thread's profile; nothing where no compile() runs.
class PhaseTimer {
 public:
  explicit PhaseTimer(const char* phase);
  ~PhaseTimer();
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  const char* phase_;
  PhaseProfile* profile_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tl::codegen
