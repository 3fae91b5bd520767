// moe inspect: what the engine would do with a checkpoint at a given TP, before loading it onto a GPU. For
// every layer: its MoE plan per rank (shapes, padding, scale blocks, kernel inter_dim, tuned-config key) and
// whether a tuned config exists for that key; then every MoE layer's tensors are validated against the plan.
// Exit 2 names the first mis-shaped tensor.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "io/hf_checkpoint.h"
#include "layout/moe_loader.h"
#include "layout/plan.h"

#if __has_include("moe/tuned_config.h")
#include "moe/tuned_config.h"
#define MOE_INSPECT_HAS_TUNED_CONFIGS 1
#endif

namespace moe::cli {
namespace {

std::string quant_name(const QuantizationConfig& q) {
  switch (q.method) {
    case QuantizationConfig::Method::None:
      return "none (bf16)";
    case QuantizationConfig::Method::Fp8Block:
      return str("fp8 block ", q.block_n, "x", q.block_k);
    case QuantizationConfig::Method::QuarkMxfp4:
      return "quark mxfp4";
    case QuantizationConfig::Method::GptOssMxfp4:
      return "gpt-oss mxfp4";
  }
  return "?";
}

// Ranks are alike when everything but the checkpoint rows they read is equal.
bool same_shapes(const layout::MoeLayerPlan& a, const layout::MoeLayerPlan& b) {
  auto eq = [](const layout::ProjectionShapes& x, const layout::ProjectionShapes& y) {
    return x.w13 == y.w13 && x.w13_scale == y.w13_scale && x.w2 == y.w2 && x.w2_scale == y.w2_scale;
  };
  return eq(a.experts, b.experts) && a.inter.raw == b.inter.raw && a.inter.padded == b.inter.padded &&
         a.inter.block_phase == b.inter.block_phase && a.inter.ckpt_blocks == b.inter.ckpt_blocks &&
         a.shared.has_value() == b.shared.has_value() && (!a.shared || eq(*a.shared, *b.shared)) &&
         a.kernel_inter_dim == b.kernel_inter_dim;
}

// "tuned config: ..." for a plan's key; counts the fallbacks.
std::string tuned_config_line(const std::string& key, int* fallbacks) {
#ifdef MOE_INSPECT_HAS_TUNED_CONFIGS
  if (find_tuned_config(key)) return str("tuned config: found for ", key);
#else
  (void)key;
#endif
  ++*fallbacks;
  return "tuned config: none (fallback to defaults)";
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  Args a(argc, argv, {"model", "tp"}, {});
  const std::string dir = a.required("model");
  const int64_t tp = a.integer("tp", 1);
  require_input(tp >= 1 && tp <= 64, "--tp must be in [1, 64], got ", tp);

  const auto ck = HfCheckpoint::open(dir, /*verbose=*/true);
  const HfModelConfig& cfg = ck->config();
  std::printf("model %s\n", dir.c_str());
  std::printf("  architecture %s (%s), %ld layers, hidden %ld, vocab %ld, %zu tensors\n",
              cfg.architecture.c_str(), cfg.model_type.c_str(), static_cast<long>(cfg.num_hidden_layers),
              static_cast<long>(cfg.hidden_size), static_cast<long>(cfg.vocab_size),
              ck->tensor_names().size());
  std::printf(
      "  experts %ld, top-%ld, moe_intermediate %ld, shared expert intermediate %ld, quantization %s\n",
      static_cast<long>(cfg.num_experts), static_cast<long>(cfg.num_experts_per_tok),
      static_cast<long>(cfg.moe_intermediate_size),
      static_cast<long>(cfg.shared_expert_intermediate_size +
                        cfg.n_shared_experts * cfg.moe_intermediate_size),
      quant_name(cfg.quant).c_str());
  std::printf("  tensor parallel %ld\n", static_cast<long>(tp));

  int moe_layers = 0, fallbacks = 0;
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
    if (!cfg.is_moe_layer(l)) {
      std::printf("layer %ld: dense MLP\n", static_cast<long>(l));
      continue;
    }
    ++moe_layers;
    try {
      const layout::MoeLayerSpec spec = layout::moe_layer_spec(cfg, l);
      std::printf("layer %ld: MoE %s\n", static_cast<long>(l),
                  describe(layout::moe_config_of(cfg, l)).c_str());
      std::vector<layout::MoeLayerPlan> plans;
      for (int rank = 0; rank < tp; ++rank) {
        layout::Parallelism par;
        par.tp_rank = rank;
        par.tp_size = static_cast<int>(tp);
        plans.push_back(layout::plan_moe_layer(spec, par));
      }
      bool alike = true;
      for (const auto& p : plans) alike = alike && same_shapes(p, plans[0]);
      for (size_t r = 0; r < (alike ? 1 : plans.size()); ++r)
        std::printf("  %s\n", plans[r].describe().c_str());
      if (alike && tp > 1)
        std::printf("  ranks 1..%ld: alike rank 0 (same shapes; each reads its own checkpoint rows)\n",
                    static_cast<long>(tp - 1));
      std::printf("  %s\n", tuned_config_line(plans[0].tuned_config_key, &fallbacks).c_str());
      // Every tensor of the layer against the plan, rank by rank, exactly as the engine loads it.
      for (const auto& p : plans) layout::load_moe_layer(*ck, cfg, l, p);
      std::printf("  tensors: valid for all %ld rank(s)\n", static_cast<long>(tp));
    } catch (const InputError& e) {
      fail_input("layer ", l, ": ", e.what());
    }
  }
  std::printf(
      "summary: %d MoE layer(s) validated at TP %ld; %d of %d tuned-config lookups fell back to defaults\n",
      moe_layers, static_cast<long>(tp), fallbacks, moe_layers);
  return 0;
}

}  // namespace moe::cli
