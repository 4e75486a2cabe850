// See compile_profile.hpp.
#include "codegen/compile_profile.hpp"

namespace tl::codegen {

namespace {
thread_local PhaseProfile* t_profile = nullptr;
}  // namespace

void add_phase_time(PhaseTimes& times, const std::string& phase, double ms) {
  for (auto& [name, t] : times)
    if (name == phase) {
      t += ms;
      return;
    }
  times.emplace_back(phase, ms);
}

PhaseProfile::PhaseProfile() : outer_(t_profile) { t_profile = this; }
PhaseProfile::~PhaseProfile() { t_profile = outer_; }

PhaseTimer::PhaseTimer(const char* phase)
    : phase_(phase), profile_(t_profile), start_(profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point()) {}

PhaseTimer::~PhaseTimer() {
  if (!profile_) return;
  add_phase_time(profile_->times_, phase_,
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count());
}

}  // namespace tl::codegen
