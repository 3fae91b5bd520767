#pragma once
// Small device helpers shared by the model kernels: warp reductions and the launch check.
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/block_reduce.cuh"

namespace moe::model::gpu {

// The fused MoE's deterministic reductions (fixed shuffle trees, warps combined in order), shared.
using cuda::block_sum;
using cuda::warp_max;
using cuda::warp_sum;

inline unsigned blocks_for(int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace moe::model::gpu
