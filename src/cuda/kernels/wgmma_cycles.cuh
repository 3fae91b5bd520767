#pragma once
// Cycle accounting of the two persistent wgmma kernels (expert_wgmma.cu: 128-pair tiles;
// expert_wgmma_swap.cu: the swapped 16- to 64-pair tiles), compiled in only by a measuring build
// (scripts/build-measuring MOE_WGMMA_CYCLES): lane 0 of each consumer warp and of the copier's first warp
// adds, per launch, the SM clock cycles it spent in each part of its loop to its kernel's table (summed over
// launches; each kernel's report prints and clears it, wgmma_cycles.h). For finding what keeps the tensor
// cores or the copies idle without changing the kernels' instructions in the normal build, where every member
// is empty.
#include <cuda_runtime.h>

#include "cuda/kernels/wgmma_cycles.h"

namespace moe::cuda {

#ifdef MOE_WGMMA_CYCLES
// clock64 exists only in the device pass.
__device__ __forceinline__ long long sm_clock() {
#ifdef __CUDA_ARCH__
  return clock64();
#else
  return 0;
#endif
}
struct Cycles {
  unsigned long long v[kCyKinds] = {};
  long long t0, t;
  __device__ Cycles() : t0(sm_clock()), t(t0) {}
  __device__ void mark(int kind) {
    const long long now = sm_clock();
    v[kind] += static_cast<unsigned long long>(now - t);
    t = now;
  }
  __device__ void step() { ++v[kCySteps]; }
  __device__ void flush(CycleTable* table, int stage, int warp) {
    v[kCyTotal] = static_cast<unsigned long long>(sm_clock() - t0);
    if (threadIdx.x % 32 != 0 || blockIdx.x >= kCyBlocks) return;
    for (int k = 0; k < kCyKinds; ++k) (*table)[stage - 1][blockIdx.x][warp][k] += v[k];
  }
};
#else
struct Cycles {
  __device__ void mark(int) {}
  __device__ void step() {}
  __device__ void flush(CycleTable*, int, int) {}
};
#endif

// Each kernel's table (kKernel: kCyPairKernel or kCySwapKernel), defined only in the translation unit
// that uses it and only in a measuring build; cycle_table is null in a normal build, where flush ignores it.
enum CycleKernel : int { kCyPairKernel, kCySwapKernel };
#ifdef MOE_WGMMA_CYCLES
template <int kKernel>
__device__ CycleTable g_cycle_table;
#endif
template <int kKernel>
__device__ __forceinline__ CycleTable* cycle_table() {
#ifdef MOE_WGMMA_CYCLES
  return &g_cycle_table<kKernel>;
#else
  return nullptr;
#endif
}

}  // namespace moe::cuda
