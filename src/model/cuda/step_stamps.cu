#include "model/cuda/step_stamps.h"

#include <cstdio>
#include <cstring>

#include "core/env_flag.h"
#include "core/error.h"
#include "cuda/cuda_check.h"

namespace moe::model::gpu {
namespace {

__global__ void stamp_kernel(uint64_t* out) {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  *out = t;
}

}  // namespace

StepStamps::StepStamps(int capacity) : stamps_(sizeof(uint64_t) * capacity), capacity_(capacity) {}

bool StepStamps::requested() {
  return env_flag("MOE_STEP_STAMPS");
}

void StepStamps::begin(cudaStream_t s) {
  parts_.clear();
  mark("(start)", s);
}

void StepStamps::mark(const char* part, cudaStream_t s) {
  require(static_cast<int>(parts_.size()) < capacity_, "step stamps: more than ", capacity_,
          " marks in a step");
  stamp_kernel<<<1, 1, 0, s>>>(stamps_.as<uint64_t>() + parts_.size());
  MOE_CUDA_CHECK_LAUNCH();
  parts_.push_back(part);
}

std::string StepStamps::report() {
  std::vector<uint64_t> t(parts_.size());
  MOE_CUDA_CHECK(cudaMemcpy(t.data(), stamps_.get(), t.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  std::vector<const char*> names;
  std::vector<double> us;
  std::vector<int> count;
  for (size_t i = 1; i < t.size(); ++i) {
    size_t k = 0;
    while (k < names.size() && std::strcmp(names[k], parts_[i]) != 0) ++k;
    if (k == names.size()) {
      names.push_back(parts_[i]);
      us.push_back(0);
      count.push_back(0);
    }
    us[k] += static_cast<double>(t[i] - t[i - 1]) / 1e3;
    ++count[k];
  }
  std::string out = "step stamps (us per step, summed over marks; stamps end each part's overlap):\n";
  double total = 0;
  char line[160];
  for (size_t k = 0; k < names.size(); ++k) {
    std::snprintf(line, sizeof(line), "  %-18s %10.1f us  %4d marks  %8.2f us each\n", names[k], us[k],
                  count[k], us[k] / count[k]);
    out += line;
    total += us[k];
  }
  std::snprintf(line, sizeof(line), "  %-18s %10.1f us\n", "total", total);
  return out + line;
}

}  // namespace moe::model::gpu
