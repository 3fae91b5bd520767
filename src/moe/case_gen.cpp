#include "moe/case_gen.h"

#include <cmath>

#include "core/codecs.h"
#include "core/error.h"
#include "core/parallel.h"
#include "io/safetensors.h"
#include "moe/case_file.h"
#include "moe/reference.h"
#include "quant/fp8_block.h"
#include "quant/mxfp4.h"

namespace moe {
namespace {

uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Stores a random [experts, rows, cols] projection in `format` under `prefix` (hf naming).
void add_hf_linear(std::map<std::string, Tensor>& t, const std::string& prefix, WeightFormat format,
                   int64_t experts, int64_t rows, int64_t cols, bool stacked, uint64_t seed) {
  const float stddev = 1.0f / std::sqrt(static_cast<float>(cols));
  Shape lead = stacked ? Shape{experts} : Shape{};
  auto shape = [&](std::initializer_list<int64_t> s) {
    Shape r = lead;
    r.insert(r.end(), s);
    return r;
  };
  Tensor w, s;
  switch (format) {
    case WeightFormat::Bf16:
      w = Tensor(DType::BF16, shape({rows, cols}));
      break;
    case WeightFormat::Fp8Block:
      w = Tensor(DType::F8_E4M3, shape({rows, cols}));
      s = Tensor(DType::F32, shape({ceil_div(rows, 128), ceil_div(cols, 128)}));
      break;
    case WeightFormat::Mxfp4:
      require(cols % 32 == 0, "mxfp4 needs the input dim (", cols, ") to be a multiple of 32");
      w = Tensor(DType::U8, shape({rows, cols / 2}));
      s = Tensor(DType::U8, shape({rows, cols / 32}));
      break;
  }
  const int64_t per_w = static_cast<int64_t>(w.nbytes()) / experts,
                per_s = s.nbytes() ? static_cast<int64_t>(s.nbytes()) / experts : 0;
  parallel_for(experts, [&](int64_t b, int64_t e_end) {
    std::vector<float> dense(static_cast<size_t>(rows * cols));
    for (int64_t e = b; e < e_end; ++e) {
      fill_normal(dense.data(), rows * cols, seed * 1000003u + static_cast<uint64_t>(e), stddev);
      uint8_t* wp = static_cast<uint8_t*>(w.data()) + e * per_w;
      uint8_t* sp = s.nbytes() ? static_cast<uint8_t*>(s.data()) + e * per_s : nullptr;
      switch (format) {
        case WeightFormat::Bf16: {
          auto* o = reinterpret_cast<uint16_t*>(wp);
          for (int64_t i = 0; i < rows * cols; ++i) o[i] = f32_to_bf16(dense[static_cast<size_t>(i)]);
          break;
        }
        case WeightFormat::Fp8Block:
          quantize_fp8_block(dense.data(), rows, cols, wp, reinterpret_cast<float*>(sp));
          break;
        case WeightFormat::Mxfp4:
          quantize_mxfp4(dense.data(), rows, cols, wp, sp);
          break;
      }
    }
  });
  t[prefix + ".weight"] = std::move(w);
  if (format == WeightFormat::Fp8Block) t[prefix + ".weight_scale_inv"] = std::move(s);
  if (format == WeightFormat::Mxfp4) t[prefix + ".weight_scale"] = std::move(s);
}

Tensor random_f32(const Shape& shape, uint64_t seed, float stddev, bool bf16_values) {
  Tensor t(DType::F32, shape);
  fill_normal(t.as<float>(), t.numel(), seed, stddev);
  if (bf16_values)
    for (int64_t i = 0; i < t.numel(); ++i) t.as<float>()[i] = round_bf16(t.as<float>()[i]);
  return t;
}

Tensor random_bf16(const Shape& shape, uint64_t seed, float stddev) {
  Tensor f = random_f32(shape, seed, stddev, false);
  Tensor t(DType::BF16, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.as<uint16_t>()[i] = f32_to_bf16(f.as<float>()[i]);
  return t;
}

}  // namespace

void fill_normal(float* out, int64_t n, uint64_t seed, float stddev) {
  uint64_t s = seed * 0x2545f4914f6cdd1dull + 1;
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = (static_cast<double>(splitmix64(s) >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = static_cast<double>(splitmix64(s) >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(r * std::cos(2 * M_PI * u2)) * stddev;
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(2 * M_PI * u2)) * stddev;
  }
}

double default_tolerance(const MoeConfig& cfg) {
  // Output is compared after bf16 rounding of h and of the engine's output; quantised activations add
  // rounding flips at ties (FORMATS.md section 3: up to about 6e-3 for fp8).
  switch (cfg.act_quant) {
    case ActQuant::None:
      return 1e-2;
    case ActQuant::Fp8_1x128:
      return 2e-2;
    case ActQuant::Mxfp4:
      return 5e-2;
  }
  return 1e-2;
}

GeneratedCase generate_case(const CaseSpec& spec) {
  const MoeConfig& cfg = spec.config;
  require(spec.M > 0 && spec.E > 0 && spec.H > 0 && spec.I > 0, "gen-case: M, E, H and I must be positive");
  GeneratedCase g;
  g.tensors = std::make_shared<std::map<std::string, Tensor>>();
  auto& t = *g.tensors;
  const uint64_t seed = spec.seed;
  const int64_t M = spec.M, E = spec.E, H = spec.H, I = spec.I, K = cfg.router.top_k;
  t["x"] = random_f32({M, H}, seed * 7 + 1, 1.0f, true);
  t["router_logits"] = random_f32({M, E}, seed * 7 + 2, 2.0f, false);
  if (cfg.router.kind == RouterKind::SigmoidGrouped)
    t["router.bias"] = random_f32({E}, seed * 7 + 3, 0.1f, false);

  if (cfg.layout == WeightLayout::Hf) {
    add_hf_linear(t, "experts.gate_proj", cfg.format, E, I, H, true, seed * 7 + 4);
    add_hf_linear(t, "experts.up_proj", cfg.format, E, I, H, true, seed * 7 + 5);
    add_hf_linear(t, "experts.down_proj", cfg.format, E, H, I, true, seed * 7 + 6);
  } else {
    require(cfg.format == WeightFormat::Mxfp4, "gpt_oss layout needs mxfp4");
    std::map<std::string, Tensor> tmp;
    add_hf_linear(tmp, "gu", WeightFormat::Mxfp4, E, 2 * I, H, true, seed * 7 + 4);
    add_hf_linear(tmp, "d", WeightFormat::Mxfp4, E, H, I, true, seed * 7 + 6);
    Tensor gub(DType::U8, {E, 2 * I, H / 32, 16}), gus(DType::U8, {E, 2 * I, H / 32});
    Tensor db(DType::U8, {E, H, I / 32, 16}), ds(DType::U8, {E, H, I / 32});
    std::memcpy(gub.data(), tmp["gu.weight"].data(), gub.nbytes());
    std::memcpy(gus.data(), tmp["gu.weight_scale"].data(), gus.nbytes());
    std::memcpy(db.data(), tmp["d.weight"].data(), db.nbytes());
    std::memcpy(ds.data(), tmp["d.weight_scale"].data(), ds.nbytes());
    t["experts.gate_up_proj_blocks"] = std::move(gub);
    t["experts.gate_up_proj_scales"] = std::move(gus);
    t["experts.gate_up_proj_bias"] = random_bf16({E, 2 * I}, seed * 7 + 5, 0.1f);
    t["experts.down_proj_blocks"] = std::move(db);
    t["experts.down_proj_scales"] = std::move(ds);
    t["experts.down_proj_bias"] = random_bf16({E, H}, seed * 7 + 7, 0.1f);
  }
  if (spec.shared_inter > 0) {
    const WeightFormat sf = cfg.format;
    add_hf_linear(t, "shared_expert.gate_proj", sf, 1, spec.shared_inter, H, false, seed * 7 + 8);
    add_hf_linear(t, "shared_expert.up_proj", sf, 1, spec.shared_inter, H, false, seed * 7 + 9);
    add_hf_linear(t, "shared_expert.down_proj", sf, 1, H, spec.shared_inter, false, seed * 7 + 10);
    if (spec.shared_gate)
      t["shared_expert_gate.weight"] =
          random_f32({1, H}, seed * 7 + 11, 1.0f / std::sqrt(static_cast<float>(H)), true);
  }
  t["expected.out"] = Tensor(DType::F32, {M, H});
  t["expected.topk_ids"] = Tensor(DType::I32, {M, K});
  t["expected.topk_weights"] = Tensor(DType::F32, {M, K});
  g.metadata = case_metadata(cfg, spec.tolerance >= 0 ? spec.tolerance : default_tolerance(cfg));

  if (spec.compute_expected) {
    MemorySource src(g.tensors);
    MoeCase c = build_case(g.metadata, src);
    Routing r;
    reference_moe(c.config, c.weights, c.x.as<float>(), c.router_logits.as<float>(), M,
                  t["expected.out"].as<float>(), &r);
    std::memcpy(t["expected.topk_ids"].data(), r.ids.data(), r.ids.size() * sizeof(int32_t));
    std::memcpy(t["expected.topk_weights"].data(), r.weights.data(), r.weights.size() * sizeof(float));
  }
  return g;
}

void write_case_file(const std::string& path, const GeneratedCase& c) {
  SafetensorsWriter w;
  for (const auto& [k, v] : c.metadata) w.set_metadata(k, v);
  for (const auto& [name, tensor] : *c.tensors) w.add(name, tensor);
  w.write(path);
}

}  // namespace moe
