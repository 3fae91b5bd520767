#pragma once
// The work list of a grouped GEMM: every active expert's sorted pairs cut into tiles of kRows, listed as
// (expert, first pair index) in the order of `active`. One block of up to 1024 threads (E <= 1024), one
// active expert per thread, a block-wide exclusive scan of the tile counts. Each tile's count in tile_ready
// (where set: MmaKernelArgs::tile_ready) is zeroed with it, and the done count and the runs taken after the
// last tile's.
#include <cuda_runtime.h>

#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/tile_ready.cuh"
#include "cuda/moe_params.h"

namespace moe::cuda {

constexpr int kTileListThreads = 1024;

template <int kRows>
__global__ void __launch_bounds__(kTileListThreads)
    mma_tiles_kernel(GroupingDev g, int2* tiles, int* num_tiles, unsigned* tile_ready) {
  __shared__ int warp_totals[kTileListThreads / 32];
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int n = *g.num_active;
  int expert = -1, begin = 0, count = 0;
  if (t < n) {
    expert = g.active[t];
    begin = g.offsets[expert];
    count = (g.offsets[expert + 1] - begin + kRows - 1) / kRows;
  }
  int incl = count;  // inclusive scan inside the warp
  for (int off = 1; off < 32; off *= 2) {
    const int o = __shfl_up_sync(kFullMask, incl, off);
    if (lane >= off) incl += o;
  }
  if (lane == 31) warp_totals[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    int w = warp_totals[lane];
    for (int off = 1; off < 32; off *= 2) {
      const int o = __shfl_up_sync(kFullMask, w, off);
      if (lane >= off) w += o;
    }
    warp_totals[lane] = w;  // inclusive totals per warp
  }
  __syncthreads();
  const int first = (warp > 0 ? warp_totals[warp - 1] : 0) + incl - count;
  for (int i = 0; i < count; ++i) {
    tiles[first + i] = make_int2(expert, begin + i * kRows);
    if (tile_ready) tile_ready[first + i] = 0;
  }
  if (t == kTileListThreads - 1) {
    *num_tiles = warp_totals[31];
    if (tile_ready) zero_counts_after_tiles(tile_ready, warp_totals[31]);
  }
}

}  // namespace moe::cuda
