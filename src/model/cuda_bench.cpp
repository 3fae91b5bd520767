// The whole-model GPU benchmark (model/cuda_bench.h). Floors count what a step must read at least: every
// non-expert weight once (fp8 bytes + scales for fp8 linears), the experts the step's routing touches (the
// last layer's distinct experts, taken for every layer), the router gates, lm_head, and the KV of every
// cached token.
#include "model/cuda_bench.h"

#include <cstdio>

#include "core/error.h"
#include "cuda/kernel_timeline.h"
#include "cuda/read_bandwidth.h"
#include "io/hf_checkpoint.h"
#include "model/cuda/cuda_model_backend.h"
#include "model/cuda/kernel_timeline_bind.h"
#include "model/cuda/tp_model_backend.h"
#include "model/gen_model.h"

namespace moe::model {
namespace {

using json = nlohmann::json;

ModelSpec random_spec(const std::string& shape, WeightFormat format, int layers) {
  const GenModelSpec g = gen_model_shape(shape);
  json c = {{"architectures", {"Qwen3MoeForCausalLM"}},
            {"model_type", "qwen3_moe"},
            {"vocab_size", g.vocab},
            {"hidden_size", g.hidden},
            {"intermediate_size", g.intermediate},
            {"num_hidden_layers", layers > 0 ? layers : g.layers},
            {"num_attention_heads", g.heads},
            {"num_key_value_heads", g.kv_heads},
            {"head_dim", g.head_dim},
            {"max_position_embeddings", g.max_position_embeddings},
            {"rms_norm_eps", g.rms_norm_eps},
            {"rope_theta", g.rope_theta},
            {"tie_word_embeddings", false},
            {"num_experts", g.experts},
            {"num_experts_per_tok", g.top_k},
            {"moe_intermediate_size", g.moe_intermediate},
            {"norm_topk_prob", g.norm_topk_prob},
            {"decoder_sparse_step", 1},
            {"mlp_only_layers", g.mlp_only_layers},
            {"eos_token_id", g.eos_token_ids[0]}};
  if (format == WeightFormat::Fp8Block)
    c["quantization_config"] = {{"quant_method", "fp8"},
                                {"fmt", "e4m3"},
                                {"activation_scheme", "dynamic"},
                                {"weight_block_size", {128, 128}}};
  return make_model_spec(parse_hf_config(c, "random " + shape));
}

struct Bytes {
  double dense = 0, per_expert = 0, all_experts = 0;  // per step, whole model
  int moe_layers = 0;
};

Bytes weight_bytes(const gpu::DeviceModel& m) {
  Bytes b;
  b.dense += static_cast<double>(m.lm_head.rows) * m.lm_head.cols * 2;
  for (const gpu::DeviceLayer& l : m.layers) {
    b.dense += static_cast<double>(l.qkv.decode_bytes() + l.o.decode_bytes());
    if (l.moe) {
      b.dense += static_cast<double>(l.router.bytes() + l.moe->shared_bytes());
      b.per_expert = static_cast<double>(l.moe->bytes_per_expert());
      b.all_experts += static_cast<double>(l.moe->bytes_per_expert()) * l.moe->num_experts();
      ++b.moe_layers;
    } else {
      b.dense += static_cast<double>(l.gate_up.decode_bytes() + l.down.decode_bytes());
    }
  }
  return b;
}

}  // namespace

int run_model_bench(const ModelBenchOptions& o) {
  require_input(cuda_model_backend_available(), "moe bench: no CUDA device");
  require_input(!o.model_dir.empty() || !o.random_shape.empty(),
                "moe bench: --model DIR or --random-shape NAME");
  int max_batch = 1;
  for (int b : o.batches) max_batch = std::max(max_batch, b);
  BackendOptions bo;
  bo.page_size = 16;
  const int64_t pages_per_seq = (o.context + 1 + bo.page_size - 1) / bo.page_size;
  bo.num_pages =
      std::max<int64_t>(max_batch * pages_per_seq, (o.prefill_tokens + bo.page_size - 1) / bo.page_size);
  std::unique_ptr<gpu::CudaModelBackend> backend;
  std::unique_ptr<gpu::TpCudaBackend> tp;  // --tp N: every rank's backend; `lead` is rank 0
  std::string label;
  require_input(o.tp.tp_size == 1 || !o.model_dir.empty(), "moe bench: --tp needs --model DIR");
  if (o.tp.tp_size > 1) {
    BackendOptions tbo = o.tp;
    tbo.page_size = bo.page_size;
    tbo.num_pages = bo.num_pages;
    tbo.verbose = true;
    tp = std::make_unique<gpu::TpCudaBackend>(*HfCheckpoint::open(o.model_dir, true), tbo,
                                              CudaBackendOptions{});
    label = str(o.model_dir, " at ", tp->name(),
                tp->graph_capturable()
                    ? ""
                    : "; host-staged ranks share GPUs and wait on the host: not a speed figure");
  } else if (!o.model_dir.empty()) {
    const auto ckpt = HfCheckpoint::open(o.model_dir, true);
    const ModelWeights w = load_model_weights(*ckpt, true);
    backend = std::make_unique<gpu::CudaModelBackend>(gpu::upload_model(w, *ckpt), bo, CudaBackendOptions{});
    label = o.model_dir;
  } else {
    WeightFormat fmt{};
    require_input(parse_format(o.format, &fmt), "moe bench: unknown --format '", o.format, "'");
    const ModelSpec spec = random_spec(o.random_shape, fmt, o.layers);
    std::fprintf(stderr, "moe bench: making a random %s (%s, %ld layers) in GPU memory...\n",
                 o.random_shape.c_str(), o.format.c_str(), static_cast<long>(spec.layers));
    backend = std::make_unique<gpu::CudaModelBackend>(gpu::random_device_model(spec, fmt, 1), bo,
                                                      CudaBackendOptions{});
    label = o.random_shape + " " + o.format + " (random)";
  }
  if (tp)
    tp->fill_kv_random(3);
  else
    backend->fill_kv_random(3);
  if (cuda::KernelTimelineBuffer* tl = cuda::kernel_timeline_buffer()) gpu::bind_kernel_timelines(tl);
  // Rank 0's backend, on its GPU (the bandwidth is measured there too).
  gpu::CudaModelBackend& lead = tp ? tp->rank(0) : *backend;
  const auto time_step = [&](const std::vector<StepSequence>& batch, int reps) {
    return tp ? tp->time_step_ms(batch, reps) : backend->time_step_ms(batch, reps);
  };
  std::fprintf(stderr, "moe bench: measuring read bandwidth...\n");
  const double bw = cuda::measure_read_bandwidth();
  const ModelSpec& s = lead.spec();
  const Bytes wb = weight_bytes(lead.model());
  const double kv_tok = static_cast<double>(lead.kv_bytes_per_token());
  std::printf("# %s: %ld layers; read bandwidth %.0f GB/s; non-expert weights %.2f GB, experts %.2f GB\n",
              label.c_str(), static_cast<long>(s.layers), bw / 1e9, wb.dense / 1e9, wb.all_experts / 1e9);
  std::printf("%-8s %6s %8s %12s %12s %7s %8s %12s\n", "step", "batch", "context", "ms/step", "floor_ms",
              "ratio", "experts", "tokens/s");
  for (int B : o.batches) {
    std::vector<StepSequence> batch(static_cast<size_t>(B));
    for (int b = 0; b < B; ++b) {
      StepSequence& q = batch[static_cast<size_t>(b)];
      q.tokens = {static_cast<int32_t>((17 + 131 * b) % s.vocab)};
      q.start_pos = o.context;
      for (int64_t i = 0; i < pages_per_seq; ++i)
        q.page_table.push_back(static_cast<int32_t>(b * pages_per_seq + i));
    }
    cuda::kernel_timeline_reset();
    const double ms = time_step(batch, o.reps);
    const int experts = lead.last_step_unique_experts();
    const double bytes = wb.dense + wb.per_expert * experts * wb.moe_layers + kv_tok * B * (o.context + 1);
    const double floor_ms = bytes / bw * 1e3;
    std::printf("%-8s %6d %8d %12.3f %12.3f %7.2f %8d %12.0f\n", "decode", B, o.context, ms, floor_ms,
                ms / floor_ms, experts, B / ms * 1e3);
    cuda::kernel_timeline_report(stdout);  // measuring builds with MOE_KERNEL_TIMELINE=1
    std::fflush(stdout);
  }
  if (o.prefill_tokens > 0) {
    StepSequence q;
    for (int t = 0; t < o.prefill_tokens; ++t)
      q.tokens.push_back(static_cast<int32_t>((7 + 97 * t) % s.vocab));
    for (int64_t i = 0; i < (o.prefill_tokens + bo.page_size - 1) / bo.page_size; ++i)
      q.page_table.push_back(static_cast<int32_t>(i));
    const double ms = time_step({q}, 3);
    const int experts = lead.last_step_unique_experts();
    const double bytes = wb.dense + wb.per_expert * experts * wb.moe_layers + kv_tok * o.prefill_tokens;
    const double floor_ms = bytes / bw * 1e3;
    std::printf("%-8s %6d %8d %12.3f %12.3f %7.2f %8d %12.0f\n", "prefill", 1, o.prefill_tokens, ms, floor_ms,
                ms / floor_ms, experts, o.prefill_tokens / ms * 1e3);
  }
  return 0;
}

}  // namespace moe::model
