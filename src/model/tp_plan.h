#pragma once
// One tensor-parallel rank's slice of the whole model, derived once from the model spec
// (docs/tensor-parallel.md). Every sharded layer reads its shard from here; the all-reduce points are
// explicit: after o_proj, after the dense MLP's down_proj and after the MoE combine. Embeddings, norms,
// router gates and lm_head are replicated.
//
//   attention: q heads split evenly; kv heads split evenly, or replicated when kv_heads < TP (vLLM: each rank
//   holds
//              the one kv head its q heads read); q/k/v column-parallel (rows), o_proj row-parallel (columns)
//   dense MLP: gate/up column-parallel, down row-parallel over the intermediate dim
//   MoE:       layout::plan_moe_layer per rank: TP splits every expert's intermediate dim (padded, FP8 scale
//   blocks
//              kept on the checkpoint grid); EP gives each rank E/N whole experts
//
// FP8 block linears split along a dim that is not a multiple of 128 keep the checkpoint's scale blocks: the
// weight is dequantised on the checkpoint grid, and the input slice of a row-parallel linear is quantised on
// the checkpoint's 1x128 grid too (act_group_phase = the slice's offset into its first group). A group that
// straddles two ranks gets one scale per rank instead of one for the whole group; that is the only difference
// from TP 1.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layout/plan.h"
#include "model/model_spec.h"

namespace moe::model {

enum class MoeParallel : uint8_t { Tensor, Expert };

struct TpOptions {
  int tp_size = 1;
  MoeParallel moe = MoeParallel::Tensor;
};

// A contiguous slice [begin, begin + count) of one dimension.
struct DimSlice {
  int64_t begin = 0, count = 0;
  int64_t end() const { return begin + count; }
};

struct AttentionShard {
  int64_t heads = 0, kv_heads = 0;  // local head counts
  DimSlice q_heads, kv_head_range;  // which checkpoint heads this rank holds
  int kv_replicas = 1;              // ranks that hold each kv head (> 1 when kv_heads < TP)
};

struct ModelShardPlan {
  int tp_rank = 0, tp_size = 1;
  MoeParallel moe_parallel = MoeParallel::Tensor;
  AttentionShard attn;
  DimSlice q_rows, kv_rows;  // rows of q_proj and of k_proj / v_proj (column-parallel)
  DimSlice o_cols;           // input columns of o_proj (row-parallel) = q_rows
  std::optional<DimSlice>
      dense_inter;  // dense MLP intermediate slice (absent when the model has no dense layer)
  // Per layer: the MoE layout plan of this rank (absent for dense layers).
  std::vector<std::optional<layout::MoeLayerPlan>> moe;

  bool is_tp1() const { return tp_size == 1; }
  std::string describe() const;
};

// Throws InputError naming the dimension when the model cannot be split over `opts.tp_size` ranks: heads not
// divisible, kv heads neither divisible nor a divisor of TP, intermediate sizes not divisible, mxfp4 scale
// groups split, experts not divisible by EP, or a whole-projection q/k norm (OLMoE), whose RMS spans every
// rank's heads.
ModelShardPlan plan_model_shard(const ModelSpec& spec, int tp_rank, const TpOptions& opts);

std::string moe_parallel_name(MoeParallel p);
MoeParallel parse_moe_parallel(const std::string& name);  // "tp" or "ep"; InputError otherwise

}  // namespace moe::model
