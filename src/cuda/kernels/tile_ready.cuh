#pragma once
// The swapped grouped GEMM's stage boundary per tile (MmaKernelArgs::tile_ready): stage 1's consumer warps
// each arrive on a tile's count after a run's stores of its h (the kernel defers it past the warp's next
// run's K steps, so the release does not wait on those stores), and on the "done" count (the one after the
// tiles') once they have no run left; stage 2's copier warps wait for an item's tile count before their
// first reads of its rows of h, until they see the done count complete, after which nothing is left to wait
// for. A warp, not the block, is the unit on both sides: the warp barrier orders its lanes' stores before
// lane 0's release, and lane 0's acquire before its lanes' reads (cp.async of h's rows and scales,
// generic-proxy reads), so neither side stops its whole block.
#include <cuda_runtime.h>

#include "cuda/kernels/chain_count.cuh"
#include "cuda/kernels/globaltimer.cuh"

namespace moe::cuda {

__device__ __forceinline__ void tile_ready_arrive(unsigned* count, int lane) {
  __syncwarp();
  if (lane == 0) count_arrive(count);
}

// Waits for `target` arrivals on `count` or `done_target` on `done`; returns (to every lane) whether `done`
// was complete, so the warp stops asking. Both loads go out together: the done count's relaxed, then the
// tile's acquire; a complete done count is made an acquire by a fence, once per warp. Over two seconds means
// a stage-1 run never arrived: trap rather than hang.
__device__ __forceinline__ bool tile_ready_wait(const unsigned* count, unsigned target, const unsigned* done,
                                                unsigned done_target, int lane) {
  int all = 0;
  if (lane == 0) {
    const unsigned long long t0 = globaltimer();
    for (int spin = 0;; ++spin) {
      const unsigned d = load_relaxed_gpu(done);
      const unsigned c = load_acquire_gpu(count);
      if (d >= done_target) {
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        all = 1;
        break;
      }
      if (c >= target) break;
      __nanosleep(64);
      if ((spin & 1023) == 1023 && globaltimer() - t0 > 2000000000ull) __trap();
    }
  }
  all = __shfl_sync(0xffffffffu, all, 0);
  __syncwarp();  // (the memory order of lane 0's acquire for the other lanes' reads: the shuffle gives none)
  return all != 0;
}

}  // namespace moe::cuda
