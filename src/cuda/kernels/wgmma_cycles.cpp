// The wgmma kernels' cycle tables printed (wgmma_cycles.h).
#include "cuda/kernels/wgmma_cycles.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/kernels/stamp_buffer.h"

namespace moe::cuda {

void report_wgmma_cycles(const char* kernel, void* device) {
  constexpr size_t kWords = sizeof(CycleTable) / sizeof(unsigned long long);
  const std::vector<unsigned long long> all =
      fetch_stamps(static_cast<const unsigned long long*>(device), kWords);
  const auto c = reinterpret_cast<const unsigned long long(*)[kCyBlocks][kCyWarps][kCyKinds]>(all.data());
  std::printf("%s cycles (MOE_WGMMA_CYCLES; summed over launches and blocks, lane 0 of each warp)\n", kernel);
  for (int stage = 0; stage < 2; ++stage) {
    double sum[kCyWarps][kCyKinds] = {};
    for (int b = 0; b < kCyBlocks; ++b)
      for (int w = 0; w < kCyWarps; ++w)
        for (int k = 0; k < kCyKinds; ++k) sum[w][k] += static_cast<double>(c[stage][b][w][k]);
    double cons[kCyKinds] = {};
    for (int w = 0; w < kCyWarps - 1; ++w)  // the consumer warps
      for (int k = 0; k < kCyKinds; ++k) cons[k] += sum[w][k];
    if (cons[kCyTotal] == 0) continue;
    const double steps = cons[kCySteps], total = cons[kCyTotal];
    std::printf(
        "  stage %d consumers: %.0f steps; per step %.0f cycles: wait for the slot %.0f, wgmma %.0f, "
        "promotion and "
        "release %.0f, epilogues and item set-up %.0f (%% of time: %.1f / %.1f / %.1f / %.1f)\n",
        stage + 1, steps / 8, total / steps, cons[kCyWait] / steps, cons[kCyMma] / steps,
        cons[kCyPromote] / steps, cons[kCyEpilogue] / steps, 100 * cons[kCyWait] / total,
        100 * cons[kCyMma] / total, 100 * cons[kCyPromote] / total, 100 * cons[kCyEpilogue] / total);
    const double* cp = sum[kCyWarps - 1];
    if (cp[kCySteps] > 0) {
      const double n = cp[kCySteps], split = cp[kCyTensorCopy] + cp[kCyItemSetUp];
      std::printf("  stage %d copier: per step %.0f cycles: waiting for an empty slot %.0f, issuing %.0f",
                  stage + 1, cp[kCyTotal] / n, cp[kCyWait] / n, (cp[kCyIssue] + split) / n);
      if (split > 0)
        std::printf(" (item set-up %.0f, tensor-map copy %.0f, cp.async and arrival %.0f)",
                    cp[kCyItemSetUp] / n, cp[kCyTensorCopy] / n, cp[kCyIssue] / n);
      std::printf("\n");
    }
  }
  MOE_CUDA_CHECK(cudaMemset(device, 0, sizeof(CycleTable)));
}

}  // namespace moe::cuda
