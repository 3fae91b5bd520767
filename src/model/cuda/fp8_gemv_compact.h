#pragma once
// The fp8 decode GEMV with compact code (fp8_gemv_compact.cu), which fp8_gemv runs instead of its
// register-resident kernel when fp8_gemv_compact_on(): the same bits, from smaller code after the
// programmatic wait.
#include <cuda_runtime.h>

#include <cstdint>

#include "model/cuda/launch.h"

namespace moe::model::gpu {

// On unless MOE_GEMV_COMPACT=0 (the default since session 20, measured faster at batch 1);
// set_fp8_gemv_compact overrides it.
bool fp8_gemv_compact_on();
void set_fp8_gemv_compact(bool on);
// Launches of the compact kernel so far (tests check that it ran).
int64_t fp8_gemv_compact_launches();

// Its 16-warp blocks where the 8-warp grid would exceed 96 blocks (fp8_gemv_compact.cu says why): on unless
// MOE_GEMV_WIDE=0; set_fp8_gemv_wide overrides it. The same bits (each warp's rows and order unchanged).
bool fp8_gemv_wide_on();
void set_fp8_gemv_wide(bool on);
int64_t fp8_gemv_wide_launches();

// Whether the compact kernel takes this call: no pending combine (norm.combine.y null), and x 16-byte aligned
// when it is read as it is (no norm).
inline bool fp8_gemv_compact_takes(const float* x, const NormInput& norm) {
  return !norm.combine.y && (norm.weight || reinterpret_cast<uintptr_t>(x) % 16 == 0);
}

// y = fake_quantize(x or the norm) · dequant(W)ᵀ as fp8_gemv, with R rows per warp (rows_per_warp(cols)), for
// a call it takes (fp8_gemv_compact_takes).
void fp8_gemv_compact(const uint8_t* w, const float* scale, int rows, int cols, const float* x, int M, int R,
                      float* y, cudaStream_t s, const NormInput& norm);

}  // namespace moe::model::gpu
