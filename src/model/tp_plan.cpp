#include "model/tp_plan.h"

#include "core/error.h"
#include "layout/moe_loader.h"

namespace moe::model {
namespace {

AttentionShard split_heads(const ModelSpec& s, int rank, int tp) {
  require_input(s.heads % tp == 0, "tensor parallel: num_attention_heads (", s.heads,
                ") is not divisible by TP ", tp);
  AttentionShard a;
  a.heads = s.heads / tp;
  a.q_heads = {rank * a.heads, a.heads};
  if (s.kv_heads >= tp) {
    require_input(s.kv_heads % tp == 0, "tensor parallel: num_key_value_heads (", s.kv_heads,
                  ") is not divisible by TP ", tp, " (nor a divisor of it, which would replicate kv heads)");
    a.kv_heads = s.kv_heads / tp;
    a.kv_head_range = {rank * a.kv_heads, a.kv_heads};
  } else {
    // Fewer kv heads than ranks: every rank keeps the single kv head its q heads read (vLLM's replication).
    // The q heads of one rank then all fall in one GQA group, because TP / kv_heads ranks share each group.
    require_input(tp % s.kv_heads == 0, "tensor parallel: num_key_value_heads (", s.kv_heads,
                  ") is below TP ", tp, " but does not divide it, so kv heads cannot be replicated evenly");
    a.kv_replicas = tp / static_cast<int>(s.kv_heads);
    a.kv_heads = 1;
    a.kv_head_range = {rank / a.kv_replicas, 1};
  }
  return a;
}

}  // namespace

std::string moe_parallel_name(MoeParallel p) {
  return p == MoeParallel::Tensor ? "tp" : "ep";
}

MoeParallel parse_moe_parallel(const std::string& name) {
  if (name == "tp") return MoeParallel::Tensor;
  if (name == "ep") return MoeParallel::Expert;
  fail_input("--moe-parallel '", name, "': expected tp (split every expert) or ep (split the experts)");
}

ModelShardPlan plan_model_shard(const ModelSpec& s, int rank, const TpOptions& opts) {
  const int tp = opts.tp_size;
  require_input(tp >= 1 && rank >= 0 && rank < tp, "tensor parallel: rank ", rank, " outside TP ", tp);
  ModelShardPlan p;
  p.tp_rank = rank;
  p.tp_size = tp;
  p.moe_parallel = opts.moe;
  if (tp > 1)
    require_input(
        s.qk_norm != QkNorm::WholeProjection, "tensor parallel: ", family_name(s.family),
        " normalises q and k over the whole projection, which spans every rank's heads; TP > 1 would "
        "need an all-reduce of the sum of squares, which is not implemented");
  p.attn = split_heads(s, rank, tp);
  const int64_t D = s.head_dim;
  p.q_rows = {p.attn.q_heads.begin * D, p.attn.heads * D};
  p.kv_rows = {p.attn.kv_head_range.begin * D, p.attn.kv_heads * D};
  p.o_cols = p.q_rows;
  const HfModelConfig& cfg = s.hf;
  for (int64_t l = 0; l < s.layers; ++l) {
    if (s.mlp[static_cast<size_t>(l)] == MlpKind::Dense) {
      require_input(cfg.intermediate_size % tp == 0, "tensor parallel: intermediate_size (",
                    cfg.intermediate_size, ") of the dense MLP is not divisible by TP ", tp);
      const int64_t per = cfg.intermediate_size / tp;
      p.dense_inter = DimSlice{rank * per, per};
      p.moe.emplace_back();
      continue;
    }
    layout::Parallelism par;
    if (opts.moe == MoeParallel::Tensor) {
      par.tp_rank = rank;
      par.tp_size = tp;
    } else {
      par.ep_rank = rank;
      par.ep_size = tp;
    }
    p.moe.emplace_back(layout::plan_moe_layer(layout::moe_layer_spec(cfg, l), par));
  }
  return p;
}

std::string ModelShardPlan::describe() const {
  std::string d =
      str("rank ", tp_rank, "/", tp_size, ": q heads [", attn.q_heads.begin, ", ", attn.q_heads.end(),
          ") kv heads [", attn.kv_head_range.begin, ", ", attn.kv_head_range.end(), ")");
  if (attn.kv_replicas > 1) d += str(" (each kv head on ", attn.kv_replicas, " ranks)");
  if (dense_inter) d += str("; dense inter [", dense_inter->begin, ", ", dense_inter->end(), ")");
  for (const auto& m : moe)
    if (m) {
      d += str("; moe (", moe_parallel_name(moe_parallel), ") ", m->describe());
      break;  // every MoE layer of these models has the same plan
    }
  return d;
}

}  // namespace moe::model
