#pragma once
// One linear layer on the CPU: y = x · Wᵀ with W dequantised to fp32 once at load time. An fp8 block-scale
// weight also quantises its input dynamically per token per 1x128 group (FORMATS.md section 6), so the
// product is fake_quantize(x) · dequant(W)ᵀ, accumulated in fp32.
#include <cstdint>
#include <string>
#include <vector>

#include "io/hf_config.h"
#include "io/tensor_source.h"
#include "moe/moe_config.h"

namespace moe::model {

struct Linear {
  std::string name;            // module name, for messages
  int64_t rows = 0, cols = 0;  // [out, in]
  WeightFormat format = WeightFormat::Bf16;
  ActQuant act_quant = ActQuant::None;
  std::vector<float> weight;  // [rows, cols] fp32
  // Where this linear's input starts inside the checkpoint's 1x128 activation-quant grid: 0, except for a
  // row-parallel TP shard whose first input column is not on a group boundary (model/tp_plan.h).
  int64_t act_group_phase = 0;
  // Where a tensor-parallel shard sits in its checkpoint tensor (the GPU backend cuts the fp8 codes from
  // there): rows [row_origin, row_origin + rows) and columns [col_origin, col_origin + cols) of a [full_rows,
  // full_cols] tensor; full_rows / full_cols 0 mean unsharded (the tensor is rows x cols).
  int64_t row_origin = 0, col_origin = 0, full_rows = 0, full_cols = 0;

  // y [M, rows] = x [M, cols] · Wᵀ; every output row is computed the same way whatever M is (batch
  // invariant).
  void forward(const float* x, int64_t M, float* y) const;

  // Tensor-parallel shards: output rows [begin, begin + count) (column-parallel), or input columns
  // (row-parallel; keeps the checkpoint's activation-quant grid through act_group_phase).
  Linear slice_rows(int64_t begin, int64_t count) const;
  Linear slice_cols(int64_t begin, int64_t count) const;
};

// How a module may be stored: quantisable linears follow quantization_config (fp8 unless excluded); router
// gates, embeddings and lm_head are taken as stored (bf16/f16/f32, or fp8 with weight_scale_inv if the
// checkpoint did so).
enum class StorageRule : uint8_t { FollowQuantConfig, AsStored };

// Loads `<module>.weight` (+ `.weight_scale_inv`) of shape [rows, cols]; throws InputError naming the tensor,
// the expected and the actual dtype or shape.
Linear load_linear(const TensorSource& src, const HfModelConfig& cfg, const std::string& module, int64_t rows,
                   int64_t cols, StorageRule rule);

// A plain float vector (norm weights, biases): bf16 / f16 / f32 of exactly `shape`.
std::vector<float> load_vector(const TensorSource& src, const std::string& name, const Shape& shape);

// Dot product with eight running sums in a fixed order.
float dot(const float* a, const float* b, int64_t n);

}  // namespace moe::model
