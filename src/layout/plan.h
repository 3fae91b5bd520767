#pragma once
// One layout plan per MoE layer (BACKGROUND.md section 2). From the model's dims, the weight format, the rank
// and the kernels' alignment it derives every per-rank shape: weights, scales, padding, checkpoint offsets,
// the kernel's inter_dim and the tuned-config key. Allocation, loading, kernels and config lookup all read
// it.
#include <cstdint>
#include <optional>
#include <string>

#include "core/tensor.h"
#include "moe/moe_config.h"

namespace moe::layout {

struct MoeLayerSpec {
  int64_t hidden = 0, inter = 0, num_experts = 0;
  int top_k = 0;
  int64_t shared_inter = 0;  // 0: no shared expert
  WeightFormat format = WeightFormat::Bf16;
};

struct Parallelism {
  int tp_rank = 0, tp_size = 1;
  int ep_rank = 0, ep_size = 1;
};

// What the kernels need of the per-rank intermediate dim: a multiple of this many elements.
int64_t kernel_inter_alignment(WeightFormat f);

// One rank's slice of an intermediate dimension (routed experts or the shared expert).
struct InterShard {
  int64_t ckpt = 0;        // checkpoint intermediate size I
  int64_t raw = 0;         // I / TP: rows this rank owns
  int64_t src_offset = 0;  // rank * raw: first checkpoint row it reads
  int64_t padded = 0;      // raw rounded up to the kernel alignment; rows [raw, padded) are zero
  // FP8 block scales along this dim. The rank's rows start block_phase into checkpoint block first_block; it
  // reads ckpt_blocks of them and stores scale_blocks (covering the padding too; the extra scale entries are
  // zero).
  int64_t first_block = 0, block_phase = 0, ckpt_blocks = 0, scale_blocks = 0;
};

InterShard plan_inter_shard(int64_t ckpt_inter, int tp_rank, int tp_size, WeightFormat format,
                            int64_t alignment);

struct ProjectionShapes {
  Shape w13, w13_scale, w2, w2_scale;  // engine layout: w13 = gate rows then up rows, each half `padded` rows
};

struct MoeLayerPlan {
  MoeLayerSpec spec;
  Parallelism par;
  int64_t alignment = 0;
  int64_t experts_local = 0, expert_begin = 0;  // expert parallelism: this rank's experts
  InterShard inter;
  std::optional<InterShard> shared_inter;
  ProjectionShapes experts;                // stacked over experts_local
  std::optional<ProjectionShapes> shared;  // no expert axis
  int64_t kernel_inter_dim = 0;            // what kernels and tuned configs are keyed on: inter.padded
  std::string tuned_config_key;

  std::string describe() const;
};

// Throws InputError for shapes no rank layout exists for (I not divisible by TP; an mxfp4 scale group split
// by ranks; E not divisible by EP).
MoeLayerPlan plan_moe_layer(const MoeLayerSpec& spec, const Parallelism& par,
                            std::optional<int64_t> alignment = std::nullopt);

}  // namespace moe::layout
