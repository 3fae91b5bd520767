#include "layout/shard.h"

#include <cstring>

#include "core/error.h"
#include "quant/fp8_block.h"
#include "quant/mxfp4.h"

namespace moe::layout {
namespace {

Tensor alloc(DType t, const Shape& s) {
  return s.empty() ? Tensor() : Tensor(t, s);
}

DType weight_dtype(WeightFormat f) {
  return f == WeightFormat::Bf16 ? DType::BF16 : f == WeightFormat::Fp8Block ? DType::F8_E4M3 : DType::U8;
}

// Copies experts [e0, e0 + count) of gate/up/down into the rank's padded buffers.
void fill_projection(const ExpertLinear& g, const ExpertLinear& u, const ExpertLinear& d, int64_t e0,
                     int64_t count, int64_t H, const InterShard& in, bool owns_down_bias,
                     RankProjection& out) {
  const WeightFormat f = g.format;
  const int64_t P = in.padded, src = in.src_offset, raw = in.raw;
  const int64_t rb13 = g.row_bytes();  // bytes of one w13 row (H columns)
  const int64_t rb2 = (f == WeightFormat::Bf16 ? 2 * P : f == WeightFormat::Fp8Block ? P : P / 2);
  const int64_t elem_off = (f == WeightFormat::Bf16 ? 2 * src : f == WeightFormat::Fp8Block ? src : src / 2);
  const int64_t elem_len = (f == WeightFormat::Bf16 ? 2 * raw : f == WeightFormat::Fp8Block ? raw : raw / 2);
  auto* w13 = static_cast<uint8_t*>(out.w13.data());
  auto* w2 = static_cast<uint8_t*>(out.w2.data());
  for (int64_t el = 0; el < count; ++el) {
    const int64_t e = e0 + el;
    uint8_t* w13e = w13 + el * 2 * P * rb13;
    for (int64_t r = 0; r < raw; ++r) {
      std::memcpy(w13e + r * rb13, g.row(e, src + r), static_cast<size_t>(rb13));
      std::memcpy(w13e + (P + r) * rb13, u.row(e, src + r), static_cast<size_t>(rb13));
    }
    uint8_t* w2e = w2 + el * H * rb2;
    for (int64_t h = 0; h < H; ++h)
      std::memcpy(w2e + h * rb2, d.row(e, h) + elem_off, static_cast<size_t>(elem_len));

    if (f == WeightFormat::Fp8Block) {
      const int64_t HB = ceil_div(H, kFp8BlockSize), SB = in.scale_blocks;
      float* s13 = out.w13_scale.as<float>() + el * 2 * SB * HB;
      for (int64_t b = 0; b < in.ckpt_blocks; ++b) {
        std::memcpy(s13 + b * HB, g.fp8_scale_row(e, in.first_block + b), static_cast<size_t>(HB) * 4);
        std::memcpy(s13 + (SB + b) * HB, u.fp8_scale_row(e, in.first_block + b), static_cast<size_t>(HB) * 4);
      }
      float* s2 = out.w2_scale.as<float>() + el * HB * SB;
      for (int64_t hb = 0; hb < HB; ++hb)
        for (int64_t b = 0; b < in.ckpt_blocks; ++b)
          s2[hb * SB + b] = d.fp8_scale_row(e, hb)[in.first_block + b];
    } else if (f == WeightFormat::Mxfp4) {
      const int64_t G13 = H / kMxfp4Group, G2 = P / kMxfp4Group;
      uint8_t* s13 = out.w13_scale.as<uint8_t>() + el * 2 * P * G13;
      for (int64_t r = 0; r < raw; ++r) {
        std::memcpy(s13 + r * G13, g.mxfp4_scale_row(e, src + r), static_cast<size_t>(G13));
        std::memcpy(s13 + (P + r) * G13, u.mxfp4_scale_row(e, src + r), static_cast<size_t>(G13));
      }
      uint8_t* s2 = out.w2_scale.as<uint8_t>() + el * H * G2;
      for (int64_t h = 0; h < H; ++h)
        std::memcpy(s2 + h * G2, d.mxfp4_scale_row(e, h) + src / kMxfp4Group,
                    static_cast<size_t>(raw / kMxfp4Group));
    }
    if (!g.biases.empty()) {
      float* b13 = out.w13_bias.as<float>() + el * 2 * P;
      for (int64_t r = 0; r < raw; ++r) {
        b13[r] = g.bias_at(e, src + r);
        b13[P + r] = u.bias_at(e, src + r);
      }
      // The down bias is added once per token: by rank 0, as an all-reduce would otherwise count it TP times.
      if (owns_down_bias)
        for (int64_t h = 0; h < H; ++h) out.w2_bias.as<float>()[el * H + h] = d.bias_at(e, h);
    }
  }
}

std::shared_ptr<RankProjection> make_projection(const ExpertLinear& g, const ExpertLinear& u,
                                                const ExpertLinear& d, int64_t e0, int64_t count, int64_t H,
                                                const InterShard& in, const ProjectionShapes& shapes,
                                                bool owns_down_bias) {
  auto p = std::make_shared<RankProjection>();
  const WeightFormat f = g.format;
  p->w13 = alloc(weight_dtype(f), shapes.w13);
  p->w2 = alloc(weight_dtype(f), shapes.w2);
  const DType st = f == WeightFormat::Fp8Block ? DType::F32 : DType::U8;
  p->w13_scale = alloc(st, shapes.w13_scale);
  p->w2_scale = alloc(st, shapes.w2_scale);
  if (!g.biases.empty()) {
    p->w13_bias = Tensor(DType::F32, {count, 2 * in.padded});
    p->w2_bias = Tensor(DType::F32, {count, H});
  }
  fill_projection(g, u, d, e0, count, H, in, owns_down_bias, *p);
  return p;
}

}  // namespace

void make_engine_views(const RankProjection& p, WeightFormat format, int64_t experts, int64_t hidden,
                       const InterShard& in, ExpertLinear* gate, ExpertLinear* up, ExpertLinear* down) {
  const int64_t P = in.padded, H = hidden;
  ExpertLinear g;
  g.format = format;
  g.experts = experts;
  g.rows = P;
  g.cols = H;
  const int64_t w13_per = static_cast<int64_t>(p.w13.nbytes()) / experts;
  g.weights = split_experts(p.w13.data(), experts, w13_per);
  if (p.w13_scale.nbytes())
    g.scales =
        split_experts(p.w13_scale.data(), experts, static_cast<int64_t>(p.w13_scale.nbytes()) / experts);
  if (format == WeightFormat::Fp8Block) {
    g.scale_cols = ceil_div(H, kFp8BlockSize);
    g.row_phase = in.block_phase;
  } else if (format == WeightFormat::Mxfp4) {
    g.scale_cols = H / kMxfp4Group;
  }
  if (p.w13_bias.nbytes()) {
    g.biases.resize(static_cast<size_t>(experts));
    for (int64_t e = 0; e < experts; ++e)
      g.biases[static_cast<size_t>(e)] = p.w13_bias.as<float>() + e * 2 * P;
  }
  ExpertLinear u = g;
  u.row_offset = P;
  if (format == WeightFormat::Fp8Block) u.scale_row_offset = in.scale_blocks;

  ExpertLinear d;
  d.format = format;
  d.experts = experts;
  d.rows = H;
  d.cols = P;
  d.weights = split_experts(p.w2.data(), experts, static_cast<int64_t>(p.w2.nbytes()) / experts);
  if (p.w2_scale.nbytes())
    d.scales = split_experts(p.w2_scale.data(), experts, static_cast<int64_t>(p.w2_scale.nbytes()) / experts);
  if (format == WeightFormat::Fp8Block) {
    d.scale_cols = in.scale_blocks;
    d.col_phase = in.block_phase;
  } else if (format == WeightFormat::Mxfp4) {
    d.scale_cols = P / kMxfp4Group;
  }
  if (p.w2_bias.nbytes()) {
    d.biases.resize(static_cast<size_t>(experts));
    for (int64_t e = 0; e < experts; ++e) d.biases[static_cast<size_t>(e)] = p.w2_bias.as<float>() + e * H;
  }
  *gate = g;
  *up = u;
  *down = d;
}

void check_against_plan(const RankProjection& p, const ProjectionShapes& want, const char* what) {
  auto check = [&](const Tensor& t, const Shape& s, const char* name) {
    if (s.empty() && t.nbytes() == 0) return;
    require(t.shape() == s, "layout: ", what, ".", name, " has shape ", shape_str(t.shape()),
            ", the plan says ", shape_str(s));
  };
  check(p.w13, want.w13, "w13");
  check(p.w13_scale, want.w13_scale, "w13_scale");
  check(p.w2, want.w2, "w2");
  check(p.w2_scale, want.w2_scale, "w2_scale");
}

RankWeights shard_moe_weights(const MoeWeights& full, const MoeLayerPlan& plan) {
  require(full.hidden == plan.spec.hidden && full.inter == plan.spec.inter &&
              full.num_experts == plan.spec.num_experts,
          "layout: weights do not match the plan's layer spec");
  RankWeights r;
  r.plan = plan;
  const int64_t H = full.hidden;
  const bool rank0 = plan.par.tp_rank == 0;
  r.experts = make_projection(full.gate, full.up, full.down, plan.expert_begin, plan.experts_local, H,
                              plan.inter, plan.experts, rank0);
  check_against_plan(*r.experts, plan.experts, "experts");
  MoeWeights& v = r.view;
  v.num_experts = plan.experts_local;
  v.hidden = H;
  v.inter = plan.inter.padded;
  v.router_bias = full.router_bias;
  make_engine_views(*r.experts, plan.spec.format, plan.experts_local, H, plan.inter, &v.gate, &v.up, &v.down);
  if (full.shared) {
    require(plan.shared.has_value(), "layout: weights have a shared expert the plan does not");
    const SharedExpertWeights& s = *full.shared;
    r.shared = make_projection(s.gate, s.up, s.down, 0, 1, H, *plan.shared_inter, *plan.shared, rank0);
    check_against_plan(*r.shared, *plan.shared, "shared_expert");
    SharedExpertWeights sv;
    make_engine_views(*r.shared, plan.spec.format, 1, H, *plan.shared_inter, &sv.gate, &sv.up, &sv.down);
    sv.gate_weight = s.gate_weight;
    v.shared = std::move(sv);
  }
  v.keepalive = {r.experts, r.shared};
  return r;
}

}  // namespace moe::layout
