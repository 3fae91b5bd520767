#pragma once
// The swapped wgmma kernel's fp8 stage 1 with h quantised in its epilogue (expert_wgmma_swap.cu,
// grouped_gemm_swap_quantises_h), so fp8_rows does not run between the stages. A block takes both 64-output
// column blocks of a 128-wide group of h (run_of), one after the other, and keeps the first one's values in
// registers. In the swapped layout a pair's 64 outputs of one column block lie across the 8 consumer warps (a
// warp's 16 weight rows are 8 outputs) and, within a warp, across the 8 lanes of one tig, so a pair's amax is
// reduced by shuffles within each warp and through shared memory across the warps (one named barrier of
// the 256 consumer threads). The amax is exact, so the scales and codes are fp8_rows': the same bits.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/codecs.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/expert_mma_tile.cuh"
#include "cuda/kernels/smem_ring.cuh"

namespace moe::cuda {

// The named barrier of the swapped kernel's two consumer warpgroups (0 is __syncthreads').
constexpr int kSwapConsumerBarrier = 1, kSwapConsumerThreads = 256;

// One column block's h values of this thread (output n, pairs 8j + 2 tig + c at 2j + c), rounded to bf16 and
// held as floats, 0 past the outputs.
template <int kN>
struct SwapHBlock {
  float v[kN / 4];
};

// Output n's values for this thread's pairs from its accumulators (gate rows at acc[4j + c], up rows at
// acc[4j + 2 + c]): h_bits, as store_item writes h.
template <int kN>
__device__ __forceinline__ SwapHBlock<kN> swap_h_block(const MmaKernelArgs& a, int e, int n,
                                                       const float (&acc)[kN / 2]) {
  SwapHBlock<kN> b;
#pragma unroll
  for (int j = 0; j < kN / 8; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c)
      b.v[2 * j + c] =
          n < a.w.inter ? bf16_to_f32(h_bits(a, e, n, acc[4 * j + c], acc[4 * j + 2 + c])) : 0.0f;
  return b;
}

// The group's scale for each of this thread's pairs: the amax of the run's one or two column blocks over all
// 8 consumer warps (warp 4 cw + wq). `red` is [8][kN] floats of shared memory that no consumer thread reads
// or writes between this call and the previous one's barrier (the caller alternates two).
template <int kN>
__device__ __forceinline__ void swap_group_scales(const SwapHBlock<kN>& first, const SwapHBlock<kN>& last,
                                                  bool two, int warp8, int lane, float* red,
                                                  float (&scale)[kN / 4]) {
  const int gid = lane / 4, tig = lane % 4;
  float amax[kN / 4];
#pragma unroll
  for (int q = 0; q < kN / 4; ++q) {
    amax[q] = fabsf(last.v[q]);
    if (two) amax[q] = fmaxf(amax[q], fabsf(first.v[q]));
    // The 8 lanes of this tig (gid 0-7) hold the same pairs for 8 outputs.
    amax[q] = fmaxf(amax[q], __shfl_xor_sync(0xffffffffu, amax[q], 4));
    amax[q] = fmaxf(amax[q], __shfl_xor_sync(0xffffffffu, amax[q], 8));
    amax[q] = fmaxf(amax[q], __shfl_xor_sync(0xffffffffu, amax[q], 16));
  }
  if (gid == 0) {
#pragma unroll
    for (int j = 0; j < kN / 8; ++j)
#pragma unroll
      for (int c = 0; c < 2; ++c) red[warp8 * kN + 8 * j + 2 * tig + c] = amax[2 * j + c];
  }
  named_barrier_sync(kSwapConsumerBarrier, kSwapConsumerThreads);
#pragma unroll
  for (int j = 0; j < kN / 8; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      float m = 0.0f;
#pragma unroll
      for (int w = 0; w < 8; ++w) m = fmaxf(m, red[w * kN + 8 * j + 2 * tig + c]);
      scale[2 * j + c] = fp8_group_scale(m);
    }
}

// One column block's codes (output n) under the pairs' scales, to h_codes' rows of the pairs `ids` (those
// before m_end).
template <int kN>
__device__ __forceinline__ void store_swap_h_codes(const MmaKernelArgs& a, int m0, int m_end, int n, int tig,
                                                   const SwapHBlock<kN>& b, const int (&ids)[kN / 4],
                                                   const float (&scale)[kN / 4]) {
  if (n >= a.w.inter) return;
#pragma unroll
  for (int j = 0; j < kN / 8; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      if (m0 + 8 * j + 2 * tig + c >= m_end) continue;
      a.h_codes[static_cast<size_t>(ids[2 * j + c]) * a.w.inter + n] =
          fp8_code(b.v[2 * j + c], scale[2 * j + c]);
    }
}

// The pairs' scales of group `group` to h_scales (those before m_end): by one thread of each tig.
template <int kN>
__device__ __forceinline__ void store_swap_h_scales(const MmaKernelArgs& a, int m0, int m_end, int group,
                                                    int tig, const int (&ids)[kN / 4],
                                                    const float (&scale)[kN / 4]) {
#pragma unroll
  for (int j = 0; j < kN / 8; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c)
      if (m0 + 8 * j + 2 * tig + c < m_end)
        a.h_scales[static_cast<size_t>(ids[2 * j + c]) * a.h_groups + group] = scale[2 * j + c];
}

}  // namespace moe::cuda
