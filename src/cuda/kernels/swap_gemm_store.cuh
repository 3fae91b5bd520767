#pragma once
// The swapped grouped GEMM's epilogue (expert_wgmma_swap.cu): a finished item's outputs, h (bf16) for stage
// 1 or y for stage 2, to its pairs' rows.
#include <cuda_runtime.h>

#include <cstdint>

#include "core/codecs.h"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/expert_mma_tile.cuh"
#include "cuda/kernels/swap_tile_loader.cuh"

namespace moe::cuda::swap_gemm {

// A finished item's outputs: this thread's weight rows r0 and r0 + 8 (stage 1: the gate and up rows of
// output n0 + r0 / 16 * 8 + r0 % 8), its pairs 8j + 2 tig (+1).
template <int kN>
struct PairIds {
  int id[kN / 4];  // pair 8j + 2 tig + c's id at 2j + c (0 past the item's pairs)
};

// This thread's output pairs' ids (store_item's rows), loaded where the caller wants their latency spent.
template <int kN>
__device__ __forceinline__ PairIds<kN> load_pair_ids(const MmaKernelArgs& a, const WorkItem& w, int tig) {
  PairIds<kN> ids;
#pragma unroll
  for (int j = 0; j < kN / 8; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int p = w.m0 + 8 * j + 2 * tig + c;
      ids.id[2 * j + c] = p < w.m_end ? a.sorted_pairs[p] : 0;
    }
  return ids;
}

template <int kStage, int kN>
__device__ __forceinline__ void store_item(const MmaKernelArgs& a, const WorkItem& w, int r0, int tig,
                                           const float (&acc)[kN / 2], const PairIds<kN>& ids) {
  const int H = a.w.hidden, P = a.w.inter;
#pragma unroll
  for (int j = 0; j < kN / 8; ++j)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int p = w.m0 + 8 * j + 2 * tig + c;
      if (p >= w.m_end) continue;
      const size_t pair = static_cast<size_t>(ids.id[2 * j + c]);
      if (kStage == 1) {
        const int n = w.n0 + r0 / 16 * 8 + r0 % 8;
        if (n >= P) continue;
        a.h[pair * P + n] = h_bits(a, w.e, n, acc[4 * j + c], acc[4 * j + 2 + c]);
      } else {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int n = w.n0 + r0 + 8 * half;
          if (n >= H) continue;
          float v = acc[4 * j + 2 * half + c];
          if (a.w.w2_bias) v += a.w.w2_bias[static_cast<size_t>(w.e) * H + n];
          if (a.y_bf16)
            a.y_bf16[pair * H + n] = f32_to_bf16(v);
          else
            a.y[pair * H + n] = v;
        }
      }
    }
}

}  // namespace moe::cuda::swap_gemm
