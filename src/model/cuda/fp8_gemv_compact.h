#pragma once
// The fp8 decode GEMV with compact code (fp8_gemv_compact.cu), which fp8_gemv runs instead of its
// register-resident kernel when fp8_gemv_compact_on(): the same bits, from smaller code after the
// programmatic wait.
#include <cuda_runtime.h>

#include <cstdint>

#include "model/cuda/launch.h"

namespace moe::model::gpu {

// Off unless MOE_GEMV_COMPACT=1 (written in session 17 without a GPU; measure before making it the default);
// set_fp8_gemv_compact overrides it.
bool fp8_gemv_compact_on();
void set_fp8_gemv_compact(bool on);
// Launches of the compact kernel so far (tests check that it ran).
int64_t fp8_gemv_compact_launches();

// y = fake_quantize(x or the norm) · dequant(W)ᵀ as fp8_gemv, with R rows per warp (rows_per_warp(cols)).
// Takes no pending combine (norm.combine.y must be null).
void fp8_gemv_compact(const uint8_t* w, const float* scale, int rows, int cols, const float* x, int M, int R,
                      float* y, cudaStream_t s, const NormInput& norm);

}  // namespace moe::model::gpu
