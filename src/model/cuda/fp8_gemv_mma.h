#pragma once
// The fp8 decode GEMV on tensor cores (fp8_gemv_mma.cu), which fp8_gemv runs instead of the compact kernel
// when fp8_gemv_mma_on() and the call fits. Not the compact kernel's bits: its own fixed order (below), and
// the same inputs give the same bits run after run.
#include <cuda_runtime.h>

#include <cstdint>

#include "model/cuda/launch.h"

namespace moe::model::gpu {

// On unless MOE_GEMV_MMA=0 (measured faster than the compact kernel: H200 decode batch 1 2.466 against
// 2.693 ms a step, session 23); set_fp8_gemv_mma overrides it.
bool fp8_gemv_mma_on();
void set_fp8_gemv_mma(bool on);
// The most tokens the model's decode step hands the tensor-core kernel: MOE_GEMV_MMA_TOKENS (1 to
// kFp8GemvMmaMaxM), kFp8GemvMaxM by default (past that the step measured slower; fp8_gemv_mma.cu).
int fp8_gemv_mma_model_tokens();
// Launches of the tensor-core kernel so far (tests check that it ran).
int64_t fp8_gemv_mma_launches();

// Tokens the tensor-core kernel takes at most: the 8 columns of its m16n8k32 products (the other fp8 GEMV
// kernels take kFp8GemvMaxM).
constexpr int kFp8GemvMmaMaxM = 8;

// Whether the tensor-core kernel fits rows x cols at M tokens, with a norm (normed: its fp32 rows staged in
// shared memory) or without: M <= kFp8GemvMmaMaxM, cols a multiple of 128 split evenly over its warps, and
// its shared memory fits.
bool fp8_gemv_mma_fits(int rows, int cols, int M, bool normed);
// Whether it takes this call: it fits, and no combine is pending (that stays with the compact kernel).
bool fp8_gemv_mma_takes(int rows, int cols, int M, const NormInput& norm);

// y [M, rows] = x (or the norm of x), quantised per 1x128 group to e4m3 codes and scales as fp8_gemv
// quantises it, times dequant(W)ᵀ: for each row and 128-column group the exact-product tensor-core sum of
// the codes, times the weight block's scale and the group's x scale, added over the groups of a warp's K
// range in order, then the warps' ranges added in order.
void fp8_gemv_mma(const uint8_t* w, const float* scale, int rows, int cols, const float* x, int M, float* y,
                  cudaStream_t s, const NormInput& norm);

}  // namespace moe::model::gpu
