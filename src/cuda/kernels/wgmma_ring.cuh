#pragma once
// What the two persistent wgmma kernels share around their ring of shared-memory slots (expert_wgmma.cu:
// 128-pair tiles; expert_wgmma_swap.cu: 16- to 64-pair tiles with the operands swapped): the swizzle-aligned
// start of the ring, its barriers, the runs of work items, the overlapped launch's wait, and the tensor-map
// copy of a stage-1 weight tile whose gate and up rows interleave.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/bulk_copy.cuh"
#include "cuda/kernels/expert_mma.h"
#include "cuda/kernels/expert_mma_tile.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/smem_ring.cuh"

namespace moe::cuda {

// wgmma's 128-byte swizzle is a function of the shared address: every slot's tiles start on 1024-byte
// boundaries.
constexpr int kSwizzleAlign = 1024;

// The first kSwizzleAlign-aligned shared address from the dynamic shared memory's start (launches ask for
// kSwizzleAlign bytes beyond the ring for it).
__device__ __forceinline__ uint32_t swizzle_aligned_base(const void* smem_raw) {
  return (shared_addr(smem_raw) + kSwizzleAlign - 1) & ~static_cast<uint32_t>(kSwizzleAlign - 1);
}

// A block (of either kernel) takes runs of work items: one row tile's column blocks [begin, end). A run is
// one column block, except when stage 1 quantises h (a.h_codes): then it is the column blocks of one 128-wide
// group of h (64 outputs each, the grid's phase a multiple of 64: one or two blocks), so one block sees the
// whole group.
struct Run {
  int tile, group, begin, end;
};

template <int kStage>
__device__ __forceinline__ Run run_of(const MmaKernelArgs& a, int run, int n_runs, int n_blocks) {
  const int tile = run / n_runs, j = run % n_runs;
  if (kStage != 1 || !a.h_codes) return {tile, j, j, j + 1};
  const ColumnBlocks blocks = h_group_column_blocks(j, a.w.phase, n_blocks);
  return {tile, j, blocks.begin, blocks.end};
}

// Thread 0 sets up the ring's barriers, then the whole block syncs: full[s] completes once every copier
// thread's (warpgroup 0's 128) cp.async copies into slot s have landed, and for fp8 also thread 0's
// tensor-map bytes (one more arrival, with its transaction count); empty[s] once each of the two consumer
// warpgroups' 8 warps is done with the slot. With `take_runs` (the swapped stage 2 taking its runs,
// tile_ready.cuh) full[s] takes one more arrival, thread 0's after it named the run the slot starts.
template <int kStages>
__device__ __forceinline__ void init_ring_barriers(uint64_t (&full)[kStages], uint64_t (&empty)[kStages],
                                                   bool fp8, bool take_runs = false) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], (fp8 ? 129 : 128) + (take_runs ? 1 : 0));
      mbar_init(&empty[s], 8);
    }
    mbar_init_fence();
  }
  __syncthreads();
}

// A kernel launched overlapped (grouped_gemm_overlapped, or the swapped stage 1 prefetching) has set up its
// ring while its predecessor finished; here it waits for it (nothing the predecessor writes, the tile count
// included, is read before) and, with `trigger`, lets its successor launch, whose blocks then wait on the SMs
// this kernel's blocks leave as they finish.
__device__ __forceinline__ void overlapped_start(bool wait, bool trigger) {
  if (wait) pdl_wait();
  if (trigger) pdl_trigger();
}

// Stage 1's weight tile at `dst` by the tensor map: kBoxes pairs of kBoxRows-row boxes, box q's gate rows
// row + kBoxRows q, ... then their up rows P further on, so the tile's rows interleave gate and up per
// kBoxRows (each consumer thread's accumulator rows then hold the gate and up rows of one output). K bytes
// from kc (negative: zeros before K); rows of kRowBytes.
template <int kBoxRows, int kBoxes, int kRowBytes>
__device__ __forceinline__ void tma_gate_up_tile(uint32_t dst, const void* map, int kc, int row, int P,
                                                 uint64_t* bar) {
#pragma unroll
  for (int q = 0; q < kBoxes; ++q) {
    tma_box_to_shared(dst + 2 * q * kBoxRows * kRowBytes, map, kc, row + kBoxRows * q, bar);
    tma_box_to_shared(dst + (2 * q + 1) * kBoxRows * kRowBytes, map, kc, row + P + kBoxRows * q, bar);
  }
}

// The same tile in one copy, by gate_up_tile_map's 5-D map (groups of kBoxRows rows): expert e's outputs
// from n0 (a multiple of kBoxRows). One copy instead of 2 x kBoxes: a thread issues tensor-map copies at
// ~50 cycles each (session 15), and 16 of them a 16 KB step is about what an H200 SM's share of the read
// bandwidth allows.
template <int kBoxRows>
__device__ __forceinline__ void tma_gate_up_box(uint32_t dst, const void* map, int kc, int e, int n0,
                                                uint64_t* bar) {
  tma_box5_to_shared(dst, map, kc, 0, 0, n0 / kBoxRows, e, bar);
}

// An fp8 K step's partial sums into the accumulators, times the scales of the thread's rows (s0 for row r,
// s1 for row r + 8) and of its columns (col_scales[8j + 2 tig] and the next, for each of the kJ 8-column
// groups): wgmma's m64nN accumulator fragment, 4 values per 8 columns.
template <int kJ>
__device__ __forceinline__ void add_scaled_partial(float (&acc)[4 * kJ], const float (&part)[4 * kJ],
                                                   float s0, float s1, const float* col_scales, int tig) {
#pragma unroll
  for (int j = 0; j < kJ; ++j) {
    const float2 c = *reinterpret_cast<const float2*>(col_scales + 8 * j + 2 * tig);
    acc[4 * j + 0] = fmaf(part[4 * j + 0], s0 * c.x, acc[4 * j + 0]);
    acc[4 * j + 1] = fmaf(part[4 * j + 1], s0 * c.y, acc[4 * j + 1]);
    acc[4 * j + 2] = fmaf(part[4 * j + 2], s1 * c.x, acc[4 * j + 2]);
    acc[4 * j + 3] = fmaf(part[4 * j + 3], s1 * c.y, acc[4 * j + 3]);
  }
}

// add_scaled_partial<16> where the tile's column scales take one value per kind of column: stage 2's 128
// columns lie in one scale block of w2's rows, and stage 1's gate columns (32w..32w+15) in one of w13's gate
// rows and its up columns (32w+16..32w+31) in one of its up rows when the rank's phase is a multiple of 64.
// Each value gets the same fmaf with the same product as add_scaled_partial gives it (s times the column's
// scale), so the same bits, with 4 multiplies and 2 shared loads a step instead of 64 and 16.
template <int kStage>
__device__ __forceinline__ void add_scaled_partial_uniform(float (&acc)[64], const float (&part)[64],
                                                           float s0, float s1, const float* col_scales) {
  const float cg = col_scales[0], cu = kStage == 1 ? col_scales[16] : cg;
  const float g0 = s0 * cg, g1 = s1 * cg, u0 = s0 * cu, u1 = s1 * cu;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const bool up = kStage == 1 && j % 4 >= 2;
    const float t0 = up ? u0 : g0, t1 = up ? u1 : g1;
    acc[4 * j + 0] = fmaf(part[4 * j + 0], t0, acc[4 * j + 0]);
    acc[4 * j + 1] = fmaf(part[4 * j + 1], t0, acc[4 * j + 1]);
    acc[4 * j + 2] = fmaf(part[4 * j + 2], t1, acc[4 * j + 2]);
    acc[4 * j + 3] = fmaf(part[4 * j + 3], t1, acc[4 * j + 3]);
  }
}

}  // namespace moe::cuda
