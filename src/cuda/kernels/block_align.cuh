#pragma once
// Groups (token, slot) pairs by expert inside one block of at least E threads (kAlignThreads at most):
// counts, offsets, the pairs of each expert and the list of active experts. Counters start from zero inside
// the kernel. Positions inside an expert come from integer atomics: the order can vary, but each pair's
// result never depends on its position, so outputs are bitwise stable.
#include <cuda_runtime.h>

#include "cuda/kernels/launchers.h"
#include "cuda/kernels/tile_ready.cuh"

namespace moe::cuda {

constexpr int kAlignThreads = 1024;

struct AlignShared {
  int counts[kAlignThreads];
  int cursor[kAlignThreads];
  int warp_sums[33];
};

// Exclusive scan of one value per thread (blockDim.x a multiple of 32, at most kAlignThreads); returns the
// prefix, *total the sum.
__device__ __forceinline__ int block_exclusive_scan(int v, int* warp_sums, int* total) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int incl = v;
  for (int off = 1; off < 32; off *= 2) {
    const int o = __shfl_up_sync(0xffffffffu, incl, off);
    if (lane >= off) incl += o;
  }
  __syncthreads();
  if (lane == 31) warp_sums[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    const int w = lane < static_cast<int>(blockDim.x / 32) ? warp_sums[lane] : 0;  // smaller blocks' tail
    int wincl = w;
    for (int off = 1; off < 32; off *= 2) {
      const int o = __shfl_up_sync(0xffffffffu, wincl, off);
      if (lane >= off) wincl += o;
    }
    warp_sums[lane] = wincl - w;
    if (lane == 31) warp_sums[32] = wincl;
  }
  __syncthreads();
  *total = warp_sums[32];
  return warp_sums[warp] + incl - v;
}

// The grouping's per-expert arrays from thread e's count c of expert e (every thread of the block calls it;
// blockDim.x >= E): offsets, the active list and each active slot's first pair, the number
// active, and with a.tiles the grouped GEMM's tile list. Returns expert e's first position in sorted_pairs.
__device__ __forceinline__ int write_expert_grouping(const AlignArgs& a, int c, int* warp_sums) {
  const int E = a.num_experts, e = threadIdx.x;
  int total = 0, active_total = 0;
  const int start = block_exclusive_scan(c, warp_sums, &total);
  const int active_pos = block_exclusive_scan(c > 0 ? 1 : 0, warp_sums, &active_total);
  if (e < E) {
    a.offsets[e] = start;
    if (c > 0) {
      a.active[active_pos] = e;
      a.slot_begin[active_pos] = start;
    }
    if (e >= active_total) a.active[e] = -1;  // every slot is written: stage blocks past the active ones exit
  }
  for (int i = e; i <= E; i += blockDim.x)  // E + 1 entries: one more than the threads when E = 1024
    if (i >= active_total) a.slot_begin[i] = total;
  if (e == 0) {
    a.offsets[E] = total;
    *a.num_active = active_total;
  }
  if (a.tiles) {
    // In expert order, which is the active list's order: mma_tiles_kernel's list.
    const int n_tiles = e < E ? (c + a.tile_rows - 1) / a.tile_rows : 0;
    int tiles_total = 0;
    const int first = block_exclusive_scan(n_tiles, warp_sums, &tiles_total);
    for (int i = 0; i < n_tiles; ++i) {
      a.tiles[first + i] = make_int2(e, start + i * a.tile_rows);
      if (a.tile_ready) a.tile_ready[first + i] = 0;
    }
    if (e == 0) {
      *a.num_tiles = tiles_total;
      if (a.tile_ready) zero_counts_after_tiles(a.tile_ready, tiles_total);
    }
  }
  return start;
}

// `ids` may be in global or shared memory and must be complete (a __syncthreads() after writing it).
__device__ __forceinline__ void block_align(const int* ids, const AlignArgs& a, AlignShared& s) {
  const int E = a.num_experts, e = threadIdx.x;
  s.counts[e] = 0;
  __syncthreads();
  for (int p = threadIdx.x; p < a.n_pairs; p += blockDim.x) {
    const int id = ids[p];
    if (id >= 0 && id < E) atomicAdd(&s.counts[id], 1);
  }
  __syncthreads();
  const int c = e < E ? s.counts[e] : 0;
  const int start = write_expert_grouping(a, c, s.warp_sums);
  if (e < E) s.cursor[e] = start;
  __syncthreads();
  for (int p = threadIdx.x; p < a.n_pairs; p += blockDim.x) {
    const int id = ids[p];
    if (id >= 0 && id < E) a.sorted_pairs[atomicAdd(&s.cursor[id], 1)] = p;
  }
}

}  // namespace moe::cuda
