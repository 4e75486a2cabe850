// tl's side of the AMD code-quality suite (bench/amd_quality/run.sh puts Triton beside it).
//
//   tl-amd-quality --target gfx942 [--target gfx950] [--only NAME] [--out FILE]
//       compiles every case (kernels.hpp, cases.hpp) for each target without a GPU and
//       writes one JSON record per case: its configuration, the code object's resources
//       (VGPRs, AGPRs, SGPRs, spills, LDS, scratch, occupancy), compile time, and the
//       disassembly (run.sh counts instructions in it and in Triton's the same way);
//   tl-amd-quality --bench [--repeats N] [--only NAME] [--out FILE]
//       on the GPU machine: runs every case at its benchmark problem on the default
//       device, checks it against the double-precision reference, and times it (device
//       events around batches, median of N), GB/s from the bytes it must move;
//   tl-amd-quality --target gfx942 --target gfx950 --ceiling bench/amd_quality/vgpr_ceiling.json
//       also writes each target's VGPRs per case: the record amd_quality_test holds
//       the lowering to (lower it when a change saves registers);
//   tl-amd-quality --list
//       the cases and their Triton configuration (params), as JSON.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "bench/amd_quality/cases.hpp"
#include "codegen/amdgpu/code_object.hpp"
#include "runtime/cache.hpp"
#include "runtime/cuda_api.hpp"

namespace {

nlohmann::json describe(const amd_quality::Case& c) {
  return {{"name", c.name}, {"family", c.family}, {"num_warps", c.num_warps}, {"params", c.params},
          {"problem", c.problem}};
}

nlohmann::json compile_case(const amd_quality::Case& c, const std::string& target) {
  auto j = describe(c);
  j["target"] = target;
  auto meta = nlohmann::json::parse(c.compile(target));
  j["report"] = meta["report"];
  j["compile_ms"] = meta.value("compile_ms", 0.0);
  // What the compiler chose (the AMD machine schedule among them: "schedule: ...").
  j["remarks"] = meta.value("remarks", nlohmann::json::array());
  auto entry = tl::cache::DiskCache::global().load(meta["key"].get<std::string>());
  if (!entry || !entry->artifacts.count("code")) throw std::runtime_error("no cache entry for " + c.name);
  const auto& code = entry->artifacts["code"];
  // AMD: the disassembly; NVIDIA: the PTX itself.
  j["isa"] = target.rfind("gfx", 0) == 0 ? tl::amd::disassemble(code) : std::string(code.begin(), code.end());
  return j;
}

// Milliseconds per call of f: device events around `inner` calls, median of `repeats`.
amd_quality::Timer cuda_timer(const tl::cuda::Api* cu, int repeats) {
  return [cu, repeats](const std::function<void()>& f) {
    tl::cuda::CUevent a, b;
    cu->check(cu->cuEventCreate(&a, 0), "cuEventCreate");
    cu->check(cu->cuEventCreate(&b, 0), "cuEventCreate");
    for (int i = 0; i < 3; ++i) f();
    cu->check(cu->cuCtxSynchronize(), "sync");
    // Enough calls per batch to cover ~1 ms, so that event resolution does not matter.
    cu->check(cu->cuEventRecord(a, nullptr), "cuEventRecord");
    f();
    cu->check(cu->cuEventRecord(b, nullptr), "cuEventRecord");
    cu->check(cu->cuEventSynchronize(b), "cuEventSynchronize");
    float once = 0;
    cu->check(cu->cuEventElapsedTime(&once, a, b), "cuEventElapsedTime");
    int inner = std::clamp(int(1.0 / std::max(once, 1e-3f)), 1, 100);
    std::vector<double> t;
    for (int r = 0; r < repeats; ++r) {
      cu->check(cu->cuEventRecord(a, nullptr), "cuEventRecord");
      for (int i = 0; i < inner; ++i) f();
      cu->check(cu->cuEventRecord(b, nullptr), "cuEventRecord");
      cu->check(cu->cuEventSynchronize(b), "cuEventSynchronize");
      float ms = 0;
      cu->check(cu->cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime");
      t.push_back(ms / inner);
    }
    cu->cuEventDestroy(a);
    cu->cuEventDestroy(b);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> targets;
  std::string only, out, ceiling;
  bool bench = false, list = false;
  int repeats = 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--target") targets.push_back(next());
    else if (a == "--only") only = next();
    else if (a == "--out") out = next();
    else if (a == "--ceiling") ceiling = next();
    else if (a == "--bench") bench = true;
    else if (a == "--list") list = true;
    else if (a == "--repeats") repeats = std::stoi(next());
    else {
      fmt::print(stderr, "usage: tl-amd-quality (--target ARCH... | --bench [--repeats N] | --list) [--only NAME] "
                         "[--out FILE]\n");
      return 2;
    }
  }
  auto all = amd_quality::cases();
  std::vector<amd_quality::Case> picked;
  for (auto& c : all)
    if (only.empty() || c.name == only || c.family == only) picked.push_back(c);
  nlohmann::json result = nlohmann::json::array();
  int failed = 0;
  try {
    if (list) {
      for (auto& c : picked) result.push_back(describe(c));
    } else if (bench) {
      tl::device dev = tl::default_device();
      const tl::cuda::Api* cu = dev.kind() == tl::device_kind::cuda ? tl::cuda::Api::get() : nullptr;
      auto timer = cu ? cuda_timer(cu, repeats) : amd_quality::Timer{};
      for (auto& c : picked) {
        auto j = describe(c);
        j["device"] = dev.name();
        amd_quality::Result r;
        try {
          r = c.run(dev, true, cu ? &timer : nullptr);
        } catch (const std::exception& e) {  // recorded, and the other cases still run
          r.error = std::string("exception: ") + e.what();
        }
        j["error"] = r.error;
        j["ms"] = r.ms;
        j["bytes"] = r.bytes;
        j["gbps"] = r.ms > 0 ? r.bytes / (r.ms * 1e6) : 0.0;
        failed += !r.error.empty();
        fmt::print(stderr, "{:32} {:9.4f} ms {:8.1f} GB/s {}\n", c.name, r.ms, j["gbps"].get<double>(),
                   r.error.empty() ? "ok" : "WRONG: " + r.error);
        result.push_back(j);
      }
    } else {
      if (targets.empty()) targets = {"gfx942"};
      nlohmann::json record = nlohmann::json::object();
      for (auto& t : targets)
        for (auto& c : picked) {
          auto j = compile_case(c, t);
          record[t][c.name] = j["report"].value("vgpr", -1);
          std::string schedule;
          for (auto& r : j["remarks"])
            if (r.get<std::string>().rfind("schedule: ", 0) == 0) schedule = r.get<std::string>().substr(10);
          fmt::print(stderr, "{:7} {:32} vgpr {:3} spill {} occupancy {}  {}\n", t, c.name,
                     j["report"].value("vgpr", -1), j["report"].value("spill_vgpr", -1),
                     j["report"].value("occupancy", -1), schedule);
          result.push_back(j);
        }
      if (!ceiling.empty()) std::ofstream(ceiling) << record.dump(1) << "\n";
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "tl-amd-quality: {}\n", e.what());
    return 1;
  }
  std::string text = result.dump(1);
  if (out.empty()) {
    std::cout << text << "\n";
  } else {
    std::ofstream(out) << text << "\n";
  }
  return failed ? 1 : 0;
}
