#pragma once
// The tensor-core prefill attention (attention_prefill_tc.cu), for the head dims it supports; the caller
// (attention_prefill.cu) keeps the fp32 CUDA-core kernel for the others.
#include <cuda_runtime.h>

#include <cstdint>

#include "model/cuda/launch.h"

namespace moe::model::gpu {

bool prefill_tc_supports(int head_dim);
void attention_prefill_tc(const float* q, const StepMetaDev& meta, const int32_t* tiles, int num_tiles,
                          const KvCacheDev& kv, int layer, int heads, float* ctx_f32, uint16_t* ctx_bf16,
                          cudaStream_t s);

}  // namespace moe::model::gpu
