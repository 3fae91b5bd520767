#pragma once
// Small device helpers shared by the model kernels: warp reductions, the fp8 1x128 quantisation formula and
// the launch check.
#include <cuda_runtime.h>

#include "core/codecs.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/block_reduce.cuh"

namespace moe::model::gpu {

// The fused MoE's deterministic reductions (fixed shuffle trees, warps combined in order), shared.
using cuda::block_sum;
using cuda::fp8_code;
using cuda::fp8_group_scale;
using cuda::warp_max;
using cuda::warp_sum;

inline unsigned blocks_for(int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace moe::model::gpu
