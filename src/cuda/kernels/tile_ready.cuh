#pragma once
// The swapped grouped GEMM's stage boundary per tile (MmaKernelArgs::tile_ready): stage 1's consumer warps
// each arrive on a tile's count after a run's stores of its h, and stage 2's copier warps wait for the count
// before their first reads of an item's rows of h. A warp, not the block, is the unit on both sides: the
// warp barrier orders its lanes' stores before lane 0's release, and lane 0's acquire before its lanes' reads
// (cp.async of h's rows and scales, generic-proxy reads), so neither side stops its whole block.
#include <cuda_runtime.h>

#include "cuda/kernels/chain_count.cuh"
#include "cuda/kernels/globaltimer.cuh"

namespace moe::cuda {

__device__ __forceinline__ void tile_ready_arrive(unsigned* count, int lane) {
  __syncwarp();
  if (lane == 0) count_arrive(count);
}

// Over two seconds means a stage-1 run never arrived: trap rather than hang.
__device__ __forceinline__ void tile_ready_wait(const unsigned* count, unsigned target, int lane) {
  if (lane == 0) {
    const unsigned long long t0 = globaltimer();
    for (int spin = 0; load_acquire_gpu(count) < target; ++spin) {
      __nanosleep(64);
      if ((spin & 1023) == 1023 && globaltimer() - t0 > 2000000000ull) __trap();
    }
  }
  __syncwarp();
}

}  // namespace moe::cuda
