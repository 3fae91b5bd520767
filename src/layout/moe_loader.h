#pragma once
// Loads one MoE layer of a Hugging Face checkpoint for one rank, through the layout plan. Every tensor is
// checked against the shape the plan's layer spec implies; a mismatch throws InputError naming the tensor,
// the expected and the actual shape. Formats: bf16, fp8 block (weight_scale_inv), Quark mxfp4 (weight +
// weight_scale) and gpt-oss mxfp4 (*_blocks, *_scales, *_bias with interleaved gate/up rows).
#include <string>

#include "io/hf_checkpoint.h"
#include "layout/plan.h"
#include "layout/shard.h"

namespace moe::layout {

// The weight format of the checkpoint's experts (from quantization_config and the exclude lists).
WeightFormat expert_format(const HfModelConfig& cfg, int64_t layer);

// The layer spec of MoE layer `layer` (dims, format, shared expert) as config.json describes it.
MoeLayerSpec moe_layer_spec(const HfModelConfig& cfg, int64_t layer);

// The whole layer in checkpoint form (views into the mmap'd shards), validated.
MoeWeights read_moe_layer(const TensorSource& src, const HfModelConfig& cfg, int64_t layer);

// read_moe_layer + shard_moe_weights for `plan`.
RankWeights load_moe_layer(const TensorSource& src, const HfModelConfig& cfg, int64_t layer,
                           const MoeLayerPlan& plan);

// The MoE routing config of the model (softmax top-k with norm_topk_prob, or DeepSeek's grouped sigmoid, or
// gpt-oss's top-k softmax).
MoeConfig moe_config_of(const HfModelConfig& cfg, int64_t layer);

}  // namespace moe::layout
