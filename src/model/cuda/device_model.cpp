#include "model/cuda/device_model.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/codecs.h"
#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/random_fill.h"
#include "layout/moe_loader.h"
#include "layout/plan.h"
#include "model/cuda/launch.h"
#include "model/fp8_shard.h"
#include "model/rope.h"

namespace moe::model::gpu {
namespace {

template <typename T>
cuda::DeviceBuffer upload_vector(const std::vector<T>& v) {
  cuda::DeviceBuffer b(v.size() * sizeof(T));
  if (!v.empty()) b.upload(v.data(), v.size() * sizeof(T));
  return b;
}

cuda::DeviceBuffer upload_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_bf16(v[i]);
  return upload_vector(h);
}

int64_t ceil_div64(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// MOE_CUDA_FP8_GEMM=fp32 keeps an fp32 copy of every fp8 linear for an fp32 prefill GEMM. Measured on an H200
// it did not bring the model closer to the CPU reference (the bf16 MoE input and bf16 KV dominate) and
// cuBLAS's fp32 GEMM was not bitwise reproducible under graph capture, so the bf16 GEMM is the default.
bool keep_fp32_copies() {
  const char* v = std::getenv("MOE_CUDA_FP8_GEMM");
  return v && std::strcmp(v, "fp32") == 0;
}

// Several linears with the same input stacked along their outputs (q/k/v, gate/up) into one.
DeviceLinear stack_linears(const std::vector<const Linear*>& parts, const TensorSource& ckpt) {
  DeviceLinear d;
  d.cols = static_cast<int>(parts[0]->cols);
  d.fp8 = parts[0]->format == WeightFormat::Fp8Block;
  std::vector<float> all;
  for (const Linear* p : parts) {
    require(p->cols == d.cols && (p->format == WeightFormat::Fp8Block) == d.fp8,
            "cuda backend: cannot stack '", p->name, "' with '", parts[0]->name,
            "' (input size or format differ)");
    // Only fp8 linears quantise their input in 1x128 groups; a bf16 shard may start anywhere.
    require_input(
        p->format != WeightFormat::Fp8Block || p->act_group_phase == 0, "cuda backend: '", p->name,
        "' is a tensor-parallel fp8 shard whose input starts inside a 1x128 activation group (phase ",
        p->act_group_phase, "): not supported on the GPU yet");
    d.rows += static_cast<int>(p->rows);
    all.insert(all.end(), p->weight.begin(), p->weight.end());
  }
  d.bf16 = upload_bf16(all);
  d.bf16_ptr = d.bf16.as<uint16_t>();
  if (!d.fp8) return d;
  if (keep_fp32_copies()) d.f32 = upload_vector(all);
  require_input(d.cols % 16 == 0, "cuda backend: fp8 linear '", parts[0]->name, "' has ", d.cols,
                " input columns, not a multiple of 16");
  // Each part's codes and scales cut from its checkpoint tensor (the whole tensor, or a tensor-parallel
  // rank's shard: fp8_shard.h). One scale per 128-row block when every part starts on the block grid, else
  // one per row.
  bool aligned = true;
  for (size_t i = 0; i < parts.size(); ++i)
    aligned =
        aligned && parts[i]->row_origin % 128 == 0 && (i + 1 == parts.size() || parts[i]->rows % 128 == 0);
  d.scale_row_div = aligned ? 128 : 1;
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  for (const Linear* p : parts) {
    const int64_t R = p->full_rows ? p->full_rows : p->rows, C = p->full_cols ? p->full_cols : p->cols;
    const TensorView w = expect_tensor(ckpt, p->name + ".weight", {DType::F8_E4M3}, {R, C});
    const TensorView s = expect_tensor(ckpt, p->name + ".weight_scale_inv", {DType::F32},
                                       {ceil_div64(R, 128), ceil_div64(C, 128)});
    const Fp8Shard cut = slice_fp8_block(p->name, w.as<uint8_t>(), s.as<float>(), R, C, p->row_origin,
                                         p->rows, p->col_origin, p->cols, !aligned);
    codes.insert(codes.end(), cut.codes.begin(), cut.codes.end());
    scales.insert(scales.end(), cut.scales.begin(), cut.scales.end());
  }
  d.fp8_codes = upload_vector(codes);
  d.fp8_scale = upload_vector(scales);
  return d;
}

DeviceLinear random_linear(int64_t rows, int64_t cols, bool fp8, uint64_t seed) {
  DeviceLinear d;
  d.rows = static_cast<int>(rows);
  d.cols = static_cast<int>(cols);
  d.fp8 = fp8;
  d.bf16 = cuda::DeviceBuffer(static_cast<size_t>(rows * cols) * 2);
  d.bf16_ptr = d.bf16.as<uint16_t>();
  if (!fp8) {
    cuda::fill_random(d.bf16.get(), d.bf16.bytes(), cuda::RandomKind::Bf16, seed);
    return d;
  }
  d.fp8_codes = cuda::DeviceBuffer(static_cast<size_t>(rows * cols));
  d.fp8_scale = cuda::DeviceBuffer(static_cast<size_t>(ceil_div64(rows, 128) * ceil_div64(cols, 128)) * 4);
  cuda::fill_random(d.fp8_codes.get(), d.fp8_codes.bytes(), cuda::RandomKind::Fp8, seed);
  cuda::fill_random(d.fp8_scale.get(), d.fp8_scale.bytes(), cuda::RandomKind::Fp32Scale, seed + 1);
  if (keep_fp32_copies()) d.f32 = cuda::DeviceBuffer(static_cast<size_t>(rows * cols) * 4);
  fp8_block_dequantize(d.fp8_codes.as<uint8_t>(), d.fp8_scale.as<float>(), rows, cols, d.bf16.as<uint16_t>(),
                       d.f32.bytes() ? d.f32.as<float>() : nullptr, 0);
  return d;
}

cuda::DeviceBuffer ones(int64_t n) {
  return upload_vector(std::vector<float>(static_cast<size_t>(n), 1.0f));
}

void set_rope(DeviceModel& m) {
  const Rope rope(m.spec.hf, m.spec.head_dim);
  m.inv_freq = upload_vector(rope.inv_freq());
  m.attention_scaling = rope.attention_scaling();
}

}  // namespace

size_t DeviceLinear::decode_bytes() const {
  if (!fp8) return static_cast<size_t>(rows) * cols * 2;
  return fp8_codes.bytes() + fp8_scale.bytes();
}

DeviceModel upload_model(const ModelWeights& w, const TensorSource& ckpt) {
  DeviceModel m;
  m.spec = w.spec;
  m.heads = w.shard.attn.heads;
  m.kv_heads = w.shard.attn.kv_heads;
  const ModelSpec& s = m.spec;
  require(m.heads > 0 && m.kv_heads > 0 && !w.embed.empty(), "cuda backend: rank ", w.shard.tp_rank,
          " weights lack their head counts or the replicated embeddings");
  m.embed = upload_bf16(w.embed);
  m.final_norm = upload_vector(w.final_norm);
  set_rope(m);
  if (s.hf.tie_word_embeddings) {
    m.lm_head.rows = static_cast<int>(s.vocab);
    m.lm_head.cols = static_cast<int>(s.hidden);
    m.lm_head.bf16_ptr = m.embed.as<uint16_t>();
  } else {
    m.lm_head = stack_linears({&w.lm_head}, ckpt);
  }
  for (const LayerWeights& L : w.layers) {
    DeviceLayer d;
    d.input_norm = upload_vector(L.input_norm);
    d.post_norm = upload_vector(L.post_attention_norm);
    d.q_norm = upload_vector(L.attn.q_norm);
    d.k_norm = upload_vector(L.attn.k_norm);
    d.qkv = stack_linears({&L.attn.q, &L.attn.k, &L.attn.v}, ckpt);
    d.o = stack_linears({&L.attn.o}, ckpt);
    if (L.moe) {
      d.router = upload_vector(L.moe->router.weight);
      d.moe = std::make_unique<cuda::DeviceMoeLayer>(L.moe->config, L.moe->experts);
    } else {
      d.gate_up = stack_linears({&L.dense->gate, &L.dense->up}, ckpt);
      d.down = stack_linears({&L.dense->down}, ckpt);
    }
    m.layers.push_back(std::move(d));
  }
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
  return m;
}

DeviceModel random_device_model(const ModelSpec& spec, WeightFormat format, uint64_t seed) {
  require_input(format == WeightFormat::Bf16 || format == WeightFormat::Fp8Block,
                "cuda model: random models come in bf16 or fp8_block");
  const bool fp8 = format == WeightFormat::Fp8Block;
  DeviceModel m;
  m.spec = spec;
  m.heads = spec.heads;
  m.kv_heads = spec.kv_heads;
  const ModelSpec& s = m.spec;
  const HfModelConfig& cfg = s.hf;
  m.embed = cuda::DeviceBuffer(static_cast<size_t>(s.vocab * s.hidden) * 2);
  cuda::fill_random(m.embed.get(), m.embed.bytes(), cuda::RandomKind::Bf16, seed);
  m.final_norm = ones(s.hidden);
  set_rope(m);
  m.lm_head = random_linear(s.vocab, s.hidden, false, seed + 1);
  for (int64_t l = 0; l < s.layers; ++l) {
    const uint64_t ls = seed + 1000 * static_cast<uint64_t>(l + 1);
    DeviceLayer d;
    d.input_norm = ones(s.hidden);
    d.post_norm = ones(s.hidden);
    if (s.qk_norm == QkNorm::PerHead) d.q_norm = ones(s.head_dim), d.k_norm = ones(s.head_dim);
    d.qkv = random_linear(s.q_dim() + 2 * s.kv_dim(), s.hidden, fp8, ls + 1);
    d.o = random_linear(s.hidden, s.q_dim(), fp8, ls + 2);
    if (s.mlp[static_cast<size_t>(l)] == MlpKind::Moe) {
      d.router = cuda::DeviceBuffer(static_cast<size_t>(cfg.num_experts * s.hidden) * 4);
      cuda::fill_random(d.router.get(), d.router.bytes(), cuda::RandomKind::Fp32Small, ls + 3);
      const MoeConfig mc = layout::moe_config_of(cfg, l);
      const layout::MoeLayerPlan plan =
          layout::plan_moe_layer(layout::moe_layer_spec(cfg, l), layout::Parallelism{});
      d.moe = std::make_unique<cuda::DeviceMoeLayer>(cuda::DeviceMoeLayer::random(mc, plan, ls + 4));
    } else {
      d.gate_up = random_linear(2 * cfg.intermediate_size, s.hidden, fp8, ls + 5);
      d.down = random_linear(s.hidden, cfg.intermediate_size, fp8, ls + 6);
    }
    m.layers.push_back(std::move(d));
  }
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
  return m;
}

}  // namespace moe::model::gpu
