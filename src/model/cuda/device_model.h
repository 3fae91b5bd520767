#pragma once
// The whole model's weights in GPU memory, in the form the CUDA backend computes with: q/k/v fused into one
// [q_dim + 2 kv_dim, H] linear and gate/up into one [2I, H] linear, bf16 for GEMMs (an fp8 linear's
// dequantised copy), the fp8 bytes and block scales kept beside it for the decode GEMV, router gates in fp32,
// experts as cuda::DeviceMoeLayer. Built from host weights (a checkpoint) or made randomly on the device
// (benchmarks).
#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/device_buffer.h"
#include "cuda/moe_layer.h"
#include "io/tensor_source.h"
#include "model/model_spec.h"
#include "model/weights.h"

namespace moe::model::gpu {

struct DeviceLinear {
  int rows = 0, cols = 0;
  bool fp8 = false;
  cuda::DeviceBuffer bf16;       // [rows, cols]
  cuda::DeviceBuffer f32;        // fp8 with MOE_CUDA_FP8_GEMM=fp32 only: dequantised fp32
  cuda::DeviceBuffer fp8_codes;  // [rows, cols] e4m3
  cuda::DeviceBuffer fp8_scale;  // [ceil(rows / scale_row_div), ceil(cols / 128)] fp32
  int scale_row_div = 128;       // 1 when fused parts do not start on a 128-row block (scales then per row)
  const uint16_t* bf16_ptr =
      nullptr;  // bf16.as<uint16_t>(), or another buffer (lm_head tied to the embedding)

  // Bytes one pass over the weights reads on the path a GEMV of few rows takes.
  size_t decode_bytes() const;
};

struct DeviceLayer {
  cuda::DeviceBuffer input_norm, post_norm, q_norm, k_norm;  // fp32
  DeviceLinear qkv, o;
  DeviceLinear gate_up, down;  // dense MLP layers only
  cuda::DeviceBuffer router;   // fp32 [E, H]; MoE layers only
  std::unique_ptr<cuda::DeviceMoeLayer> moe;
};

struct DeviceModel {
  ModelSpec spec;  // the whole model's dims (also on a tensor-parallel rank)
  // This rank's attention heads (the whole model's at TP 1): q/k/v, attention and the KV pages use these.
  int64_t heads = 0, kv_heads = 0;
  int64_t q_dim() const { return heads * spec.head_dim; }
  int64_t kv_dim() const { return kv_heads * spec.head_dim; }
  cuda::DeviceBuffer embed, final_norm, inv_freq;  // bf16 [V, H]; fp32 [H]; fp32 [head_dim / 2]
  float attention_scaling = 1.0f;
  DeviceLinear lm_head;
  std::vector<DeviceLayer> layers;
};

// Uploads `w` (the whole model, or one tensor-parallel rank's shard: w.shard). For fp8 linears the raw codes
// and scales are read again from `ckpt` (w holds them dequantised).
DeviceModel upload_model(const ModelWeights& w, const TensorSource& ckpt);

// Random weights of `spec`'s shapes made on the GPU (nothing on the host): bf16 or fp8 block linears and
// experts.
DeviceModel random_device_model(const ModelSpec& spec, WeightFormat format, uint64_t seed);

}  // namespace moe::model::gpu
