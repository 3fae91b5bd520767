#pragma once
// Small device helpers shared by the model kernels: warp reductions, the fp8 1x128 quantisation formula and
// the launch check.
#include <cuda_runtime.h>

#include <type_traits>

#include "core/codecs.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/block_reduce.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"

namespace moe::model::gpu {

// The fused MoE's deterministic reductions (fixed shuffle trees, warps combined in order), shared.
using cuda::block_sum;
using cuda::fp8_code;
using cuda::fp8_group_scale;
using cuda::warp_max;
using cuda::warp_sum;

// Programmatic dependent launch for every model kernel: a decode step is a chain of small kernels, and
// letting each start (and read its weights) while the previous one drains removes most of the gaps between
// them. Every kernel launched this way calls pdl_wait() in every block before it reads anything an earlier
// kernel wrote (and before it exits): a kernel's completion then implies its predecessors', which later
// kernels rely on.
using cuda::pdl_trigger;
using cuda::pdl_wait;
template <typename... KernelArgs, typename... Args>
void launch_pdl(void (*kernel)(KernelArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                Args&&... args) {
  cuda::launch_overlapped(kernel, grid, block, smem, s, std::forward<Args>(args)...);
}

// f(std::integral_constant<int, head_dim>{}) for the head dims the attention kernels are built for; any other
// is a clear input error (one message for every attention kernel).
template <typename F>
void with_head_dim(int head_dim, F&& f) {
  switch (head_dim) {
    case 32:
      return f(std::integral_constant<int, 32>{});
    case 64:
      return f(std::integral_constant<int, 64>{});
    case 128:
      return f(std::integral_constant<int, 128>{});
    case 256:
      return f(std::integral_constant<int, 256>{});
    default:
      fail_input("cuda attention: head_dim ", head_dim, " is not supported (32, 64, 128, 256)");
  }
}

inline unsigned blocks_for(int64_t n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace moe::model::gpu
