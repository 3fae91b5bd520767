#pragma once
// One output element of the weighted combine from fp32 per-slot rows y [pairs, H]: the slots of token t in
// slot order, fmaf(weight, y, acc) from zero, skipping slots with no local expert (id < 0). The order of
// combine.cu, shared by the kernels that combine in their last block or warp, so all give the same bits.
#include <cuda_runtime.h>

#include <cstddef>

namespace moe::cuda {

__device__ __forceinline__ float slot_sum(const int* topk_ids, const float* topk_weights, const float* y,
                                          int top_k, int hidden, int t, int hrow) {
  float acc = 0.0f;
  for (int k = 0; k < top_k; ++k) {
    const int p = t * top_k + k;
    if (__ldcg(topk_ids + p) >= 0)
      acc = fmaf(__ldcg(topk_weights + p), __ldcg(y + static_cast<size_t>(p) * hidden + hrow), acc);
  }
  return acc;
}

}  // namespace moe::cuda
