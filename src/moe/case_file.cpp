#include "moe/case_file.h"

#include <cmath>
#include <cstdlib>

#include "core/codecs.h"
#include "core/error.h"
#include "moe/routing.h"
#include "quant/fp8_block.h"
#include "quant/mxfp4.h"

namespace moe {
namespace {

const std::string& meta(const std::map<std::string, std::string>& m, const std::string& key) {
  const auto it = m.find(key);
  if (it == m.end()) fail_input("case metadata: missing key '", key, "'");
  return it->second;
}

long parse_int(const std::map<std::string, std::string>& m, const std::string& key, long dflt,
               bool required) {
  const auto it = m.find(key);
  if (it == m.end()) {
    if (required) fail_input("case metadata: missing key '", key, "'");
    return dflt;
  }
  char* end = nullptr;
  const long v = std::strtol(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0')
    fail_input("case metadata: '", key, "' = '", it->second, "' is not an integer");
  return v;
}

double parse_double(const std::map<std::string, std::string>& m, const std::string& key, double dflt,
                    bool required) {
  const auto it = m.find(key);
  if (it == m.end()) {
    if (required) fail_input("case metadata: missing key '", key, "'");
    return dflt;
  }
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !std::isfinite(v))
    fail_input("case metadata: '", key, "' = '", it->second, "' is not a number");
  return v;
}

bool parse_bool(const std::map<std::string, std::string>& m, const std::string& key, bool dflt) {
  const auto it = m.find(key);
  if (it == m.end()) return dflt;
  if (it->second == "true" || it->second == "True" || it->second == "1") return true;
  if (it->second == "false" || it->second == "False" || it->second == "0") return false;
  fail_input("case metadata: '", key, "' = '", it->second, "' is not true or false");
}

template <typename E>
E parse_choice(const std::map<std::string, std::string>& m, const std::string& key,
               bool (*parse)(std::string_view, E*), const char* choices) {
  E v{};
  const std::string& s = meta(m, key);
  if (!parse(s, &v)) fail_input("case metadata: '", key, "' = '", s, "' is not one of ", choices);
  return v;
}

Shape with_experts(bool stacked, int64_t E, Shape s) {
  if (stacked) s.insert(s.begin(), E);
  return s;
}

}  // namespace

std::vector<float> load_f32_vector(const TensorSource& src, const std::string& name, const Shape& shape) {
  const TensorView v = expect_tensor(src, name, {DType::BF16, DType::F32}, shape);
  std::vector<float> out(static_cast<size_t>(v.numel()));
  for (int64_t i = 0; i < v.numel(); ++i)
    out[static_cast<size_t>(i)] = v.dtype == DType::F32 ? v.as<float>()[i] : bf16_to_f32(v.as<uint16_t>()[i]);
  return out;
}

std::vector<const float*> load_expert_biases(const TensorSource& src, const std::string& name, int64_t E,
                                             int64_t rows, MoeWeights& w) {
  auto owned = std::make_shared<std::vector<float>>(load_f32_vector(src, name, {E, rows}));
  w.keepalive.push_back(owned);
  std::vector<const float*> out(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) out[static_cast<size_t>(e)] = owned->data() + e * rows;
  return out;
}

void load_gpt_oss_experts(const TensorSource& src, const std::string& prefix, int64_t E, int64_t H, int64_t I,
                          MoeWeights& w) {
  ExpertLinear gu;
  gu.format = WeightFormat::Mxfp4;
  gu.experts = E;
  gu.rows = I;
  gu.cols = H;
  gu.row_stride = 2;
  gu.scale_cols = H / kMxfp4Group;
  const TensorView gub =
      expect_tensor(src, prefix + "gate_up_proj_blocks", {DType::U8}, {E, 2 * I, H / 32, 16});
  const TensorView gus = expect_tensor(src, prefix + "gate_up_proj_scales", {DType::U8}, {E, 2 * I, H / 32});
  gu.weights = split_experts(gub.data, E, static_cast<int64_t>(gub.nbytes()) / E);
  gu.scales = split_experts(gus.data, E, static_cast<int64_t>(gus.nbytes()) / E);
  gu.biases = load_expert_biases(src, prefix + "gate_up_proj_bias", E, 2 * I, w);
  w.gate = gu;
  w.up = gu;
  w.up.row_offset = 1;  // gate = even rows, up = odd rows
  ExpertLinear d;
  d.format = WeightFormat::Mxfp4;
  d.experts = E;
  d.rows = H;
  d.cols = I;
  d.scale_cols = I / kMxfp4Group;
  const TensorView db = expect_tensor(src, prefix + "down_proj_blocks", {DType::U8}, {E, H, I / 32, 16});
  const TensorView ds = expect_tensor(src, prefix + "down_proj_scales", {DType::U8}, {E, H, I / 32});
  d.weights = split_experts(db.data, E, static_cast<int64_t>(db.nbytes()) / E);
  d.scales = split_experts(ds.data, E, static_cast<int64_t>(ds.nbytes()) / E);
  d.biases = load_expert_biases(src, prefix + "down_proj_bias", E, H, w);
  w.down = d;
}

MoeConfig parse_case_config(const std::map<std::string, std::string>& m, double* tolerance) {
  MoeConfig c;
  c.format = parse_choice<WeightFormat>(m, "moe.format", parse_format, "bf16, fp8_block, mxfp4");
  c.layout = m.count("moe.layout") ? parse_choice<WeightLayout>(m, "moe.layout", parse_layout, "hf, gpt_oss")
                                   : WeightLayout::Hf;
  c.activation = parse_choice<Activation>(m, "moe.activation", parse_activation, "silu, swiglu_oai");
  c.router.kind =
      parse_choice<RouterKind>(m, "moe.router", parse_router, "softmax_topk, topk_softmax, sigmoid_grouped");
  c.act_quant = m.count("moe.act_quant")
                    ? parse_choice<ActQuant>(m, "moe.act_quant", parse_act_quant, "none, fp8_1x128, mxfp4")
                    : ActQuant::None;
  c.router.top_k = static_cast<int>(parse_int(m, "moe.top_k", 0, true));
  c.router.renormalize = parse_bool(m, "moe.renormalize", true);
  c.router.n_group = static_cast<int>(parse_int(m, "moe.n_group", 1, false));
  c.router.topk_group = static_cast<int>(parse_int(m, "moe.topk_group", 1, false));
  c.router.routed_scaling_factor =
      static_cast<float>(parse_double(m, "moe.routed_scaling_factor", 1.0, false));
  if (m.count("moe.swiglu_alpha"))
    c.swiglu_alpha = static_cast<float>(parse_double(m, "moe.swiglu_alpha", 0, true));
  if (m.count("moe.swiglu_limit"))
    c.swiglu_limit = static_cast<float>(parse_double(m, "moe.swiglu_limit", 0, true));
  if (tolerance) {
    *tolerance = parse_double(m, "moe.tolerance", 0, true);
    require_input(*tolerance >= 0, "case metadata: 'moe.tolerance' must be non-negative");
  }
  if (c.layout == WeightLayout::GptOss)
    require_input(c.format == WeightFormat::Mxfp4,
                  "case metadata: moe.layout=gpt_oss needs moe.format=mxfp4, got ", format_name(c.format));
  return c;
}

std::map<std::string, std::string> case_metadata(const MoeConfig& c, double tolerance) {
  char tol[32];
  std::snprintf(tol, sizeof tol, "%g", tolerance);
  return {{"moe.format", std::string(format_name(c.format))},
          {"moe.layout", std::string(layout_name(c.layout))},
          {"moe.activation", std::string(activation_name(c.activation))},
          {"moe.router", std::string(router_name(c.router.kind))},
          {"moe.act_quant", std::string(act_quant_name(c.act_quant))},
          {"moe.top_k", std::to_string(c.router.top_k)},
          {"moe.renormalize", c.router.renormalize ? "true" : "false"},
          {"moe.n_group", std::to_string(c.router.n_group)},
          {"moe.topk_group", std::to_string(c.router.topk_group)},
          {"moe.routed_scaling_factor", str(c.router.routed_scaling_factor)},
          {"moe.tolerance", tol}};
}

ExpertLinear load_hf_linear(const TensorSource& src, const std::string& prefix, WeightFormat format,
                            int64_t experts, int64_t rows, int64_t cols, bool stacked) {
  ExpertLinear l;
  l.format = format;
  l.experts = stacked ? experts : 1;
  l.rows = rows;
  l.cols = cols;
  const std::string wname = prefix + ".weight";
  Shape wshape, sshape;
  std::string sname;
  DType wtype = DType::BF16, stype = DType::F32;
  switch (format) {
    case WeightFormat::Bf16:
      wshape = {rows, cols};
      break;
    case WeightFormat::Fp8Block:
      wtype = DType::F8_E4M3;
      wshape = {rows, cols};
      l.scale_cols = ceil_div(cols, kFp8BlockSize);
      sshape = {ceil_div(rows, kFp8BlockSize), l.scale_cols};
      sname = prefix + ".weight_scale_inv";
      break;
    case WeightFormat::Mxfp4:
      require_input(cols % kMxfp4Group == 0, src.label(), ": '", wname, "': mxfp4 needs the input dim (",
                    cols, ") to be a multiple of 32");
      wtype = DType::U8;
      stype = DType::U8;
      wshape = {rows, cols / 2};
      l.scale_cols = cols / kMxfp4Group;
      sshape = {rows, l.scale_cols};
      sname = prefix + ".weight_scale";
      break;
  }
  const TensorView w = expect_tensor(src, wname, {wtype}, with_experts(stacked, experts, wshape));
  l.weights = split_experts(w.data, l.experts, static_cast<int64_t>(w.nbytes()) / l.experts);
  if (!sname.empty()) {
    const TensorView s = expect_tensor(src, sname, {stype}, with_experts(stacked, experts, sshape));
    l.scales = split_experts(s.data, l.experts, static_cast<int64_t>(s.nbytes()) / l.experts);
  }
  return l;
}

MoeCase build_case(const std::map<std::string, std::string>& metadata, const TensorSource& src) {
  MoeCase c;
  c.config = parse_case_config(metadata, &c.tolerance);
  const MoeConfig& cfg = c.config;
  const auto xv = src.get("x");
  const auto lv = src.get("router_logits");
  if (!xv) fail_input(src.label(), ": missing tensor 'x'");
  if (!lv) fail_input(src.label(), ": missing tensor 'router_logits'");
  require_input(xv->shape.size() == 2, src.label(), ": tensor 'x' must be [M, H], has shape ",
                shape_str(xv->shape));
  require_input(lv->shape.size() == 2, src.label(), ": tensor 'router_logits' must be [M, E], has shape ",
                shape_str(lv->shape));
  const int64_t M = xv->shape[0], H = xv->shape[1], E = lv->shape[1];
  require_input(M > 0 && H > 0 && E > 0, src.label(), ": empty x or router_logits");
  c.M = M;
  c.x = expect_tensor(src, "x", {DType::F32}, {M, H});
  c.router_logits = expect_tensor(src, "router_logits", {DType::F32}, {M, E});
  c.expected_out = expect_tensor(src, "expected.out", {DType::F32}, {M, H});
  validate_router(cfg.router, E);
  const int K = cfg.router.top_k;
  if (src.get("expected.topk_ids"))
    // Diagnostic only; I64 is what numpy/torch writers produce by default, so it is read too.
    c.expected_topk_ids = expect_tensor(src, "expected.topk_ids", {DType::I32, DType::I64}, {M, K});
  if (src.get("expected.topk_weights"))
    c.expected_topk_weights = expect_tensor(src, "expected.topk_weights", {DType::F32}, {M, K});
  if (cfg.act_quant == ActQuant::Mxfp4)
    require_input(H % kMxfp4Group == 0, src.label(), ": mxfp4 activations need H (", H, ") divisible by 32");

  MoeWeights& w = c.weights;
  w.num_experts = E;
  w.hidden = H;
  w.keepalive.push_back(src.keepalive());
  if (cfg.layout == WeightLayout::Hf) {
    const auto g = src.get("experts.gate_proj.weight");
    if (!g) fail_input(src.label(), ": missing tensor 'experts.gate_proj.weight'");
    require_input(g->shape.size() == 3, src.label(),
                  ": tensor 'experts.gate_proj.weight' must be 3-D, has shape ", shape_str(g->shape));
    const int64_t I = g->shape[1];
    w.inter = I;
    w.gate = load_hf_linear(src, "experts.gate_proj", cfg.format, E, I, H, true);
    w.up = load_hf_linear(src, "experts.up_proj", cfg.format, E, I, H, true);
    w.down = load_hf_linear(src, "experts.down_proj", cfg.format, E, H, I, true);
  } else {
    const auto b = src.get("experts.gate_up_proj_blocks");
    if (!b) fail_input(src.label(), ": missing tensor 'experts.gate_up_proj_blocks'");
    require_input(b->shape.size() == 4 && b->shape[1] % 2 == 0, src.label(),
                  ": tensor 'experts.gate_up_proj_blocks' must be [E, 2I, H/32, 16], has shape ",
                  shape_str(b->shape));
    const int64_t I = b->shape[1] / 2;
    w.inter = I;
    require_input(H % kMxfp4Group == 0 && I % kMxfp4Group == 0, src.label(), ": gpt_oss layout needs H (", H,
                  ") and I (", I, ") divisible by 32");
    load_gpt_oss_experts(src, "experts.", E, H, I, w);
  }
  if (cfg.act_quant == ActQuant::Mxfp4)
    require_input(w.inter % kMxfp4Group == 0, src.label(), ": mxfp4 activations need I (", w.inter,
                  ") divisible by 32");

  if (cfg.router.kind == RouterKind::SigmoidGrouped && src.get("router.bias"))
    w.router_bias = load_f32_vector(src, "router.bias", {E});
  else if (src.get("router.bias"))
    fail_input(src.label(), ": tensor 'router.bias' is only used by moe.router=sigmoid_grouped");

  if (const auto sg = src.get("shared_expert.gate_proj.weight")) {
    require_input(sg->shape.size() == 2, src.label(),
                  ": tensor 'shared_expert.gate_proj.weight' must be 2-D, has ", shape_str(sg->shape));
    const int64_t Is = sg->shape[0];
    const WeightFormat sf = cfg.format;
    SharedExpertWeights sh;
    sh.gate = load_hf_linear(src, "shared_expert.gate_proj", sf, 1, Is, H, false);
    sh.up = load_hf_linear(src, "shared_expert.up_proj", sf, 1, Is, H, false);
    sh.down = load_hf_linear(src, "shared_expert.down_proj", sf, 1, H, Is, false);
    if (src.get("shared_expert_gate.weight"))
      sh.gate_weight = load_f32_vector(src, "shared_expert_gate.weight", {1, H});
    if (cfg.act_quant == ActQuant::Mxfp4)
      require_input(Is % kMxfp4Group == 0, src.label(), ": mxfp4 activations need the shared expert's I (",
                    Is, ") divisible by 32");
    w.shared = std::move(sh);
  } else if (src.get("shared_expert_gate.weight") || src.get("shared_expert.up_proj.weight") ||
             src.get("shared_expert.down_proj.weight")) {
    fail_input(src.label(),
               ": shared expert tensors present but 'shared_expert.gate_proj.weight' is missing");
  }
  return c;
}

MoeCase load_case(const std::string& path) {
  auto file = SafetensorsFile::open(path);
  SafetensorsSource src(file);
  return build_case(file->metadata(), src);
}

}  // namespace moe
