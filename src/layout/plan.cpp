#include "layout/plan.h"

#include "core/error.h"
#include "quant/fp8_block.h"
#include "quant/mxfp4.h"

namespace moe::layout {
namespace {

ProjectionShapes projection_shapes(const MoeLayerSpec& s, const InterShard& in,
                                   std::optional<int64_t> experts) {
  const int64_t H = s.hidden, P = in.padded;
  auto lead = [&](Shape sh) {
    if (experts) sh.insert(sh.begin(), *experts);
    return sh;
  };
  ProjectionShapes p;
  switch (s.format) {
    case WeightFormat::Bf16:
      p.w13 = lead({2 * P, H});
      p.w2 = lead({H, P});
      break;
    case WeightFormat::Fp8Block:
      p.w13 = lead({2 * P, H});
      p.w13_scale = lead({2 * in.scale_blocks, ceil_div(H, kFp8BlockSize)});
      p.w2 = lead({H, P});
      p.w2_scale = lead({ceil_div(H, kFp8BlockSize), in.scale_blocks});
      break;
    case WeightFormat::Mxfp4:
      p.w13 = lead({2 * P, H / 2});
      p.w13_scale = lead({2 * P, H / kMxfp4Group});
      p.w2 = lead({H, P / 2});
      p.w2_scale = lead({H, P / kMxfp4Group});
      break;
  }
  return p;
}

}  // namespace

int64_t kernel_inter_alignment(WeightFormat f) {
  // bf16 / fp8: the kernels tile the intermediate dim in 64s. mxfp4: 128 elements, so that a packed w2 row is
  // a multiple of 64 bytes.
  return f == WeightFormat::Mxfp4 ? 128 : 64;
}

InterShard plan_inter_shard(int64_t ckpt_inter, int tp_rank, int tp_size, WeightFormat format,
                            int64_t alignment) {
  require_input(tp_size >= 1 && tp_rank >= 0 && tp_rank < tp_size, "layout: tp_rank ", tp_rank,
                " outside tp_size ", tp_size);
  require_input(ckpt_inter % tp_size == 0, "layout: intermediate size ", ckpt_inter,
                " is not divisible by TP ", tp_size);
  InterShard s;
  s.ckpt = ckpt_inter;
  s.raw = ckpt_inter / tp_size;
  s.src_offset = static_cast<int64_t>(tp_rank) * s.raw;
  s.padded = ceil_div(s.raw, alignment) * alignment;
  if (format == WeightFormat::Mxfp4)
    require_input(s.raw % kMxfp4Group == 0, "layout: mxfp4 needs I / TP (", s.raw,
                  ") to be a multiple of 32, or an MX scale group would be split between ranks");
  if (format == WeightFormat::Fp8Block) {
    s.first_block = s.src_offset / kFp8BlockSize;
    s.block_phase = s.src_offset % kFp8BlockSize;
    s.ckpt_blocks = ceil_div(s.block_phase + s.raw, kFp8BlockSize);
    s.scale_blocks = ceil_div(s.block_phase + s.padded, kFp8BlockSize);
  }
  return s;
}

MoeLayerPlan plan_moe_layer(const MoeLayerSpec& spec, const Parallelism& par,
                            std::optional<int64_t> alignment) {
  require_input(spec.hidden > 0 && spec.inter > 0 && spec.num_experts > 0, "layout: dims must be positive");
  if (spec.format == WeightFormat::Mxfp4)
    require_input(spec.hidden % kMxfp4Group == 0, "layout: mxfp4 needs hidden (", spec.hidden,
                  ") divisible by 32");
  require_input(par.ep_size >= 1 && par.ep_rank >= 0 && par.ep_rank < par.ep_size, "layout: bad ep rank");
  require_input(spec.num_experts % par.ep_size == 0, "layout: ", spec.num_experts,
                " experts not divisible by EP ", par.ep_size);
  MoeLayerPlan p;
  p.spec = spec;
  p.par = par;
  p.alignment = alignment.value_or(kernel_inter_alignment(spec.format));
  p.experts_local = spec.num_experts / par.ep_size;
  p.expert_begin = p.experts_local * par.ep_rank;
  p.inter = plan_inter_shard(spec.inter, par.tp_rank, par.tp_size, spec.format, p.alignment);
  p.experts = projection_shapes(spec, p.inter, p.experts_local);
  if (spec.shared_inter > 0) {
    p.shared_inter = plan_inter_shard(spec.shared_inter, par.tp_rank, par.tp_size, spec.format, p.alignment);
    p.shared = projection_shapes(spec, *p.shared_inter, std::nullopt);
  }
  p.kernel_inter_dim = p.inter.padded;
  p.tuned_config_key = str("E=", p.experts_local, ",N=", p.kernel_inter_dim, ",H=", spec.hidden,
                           ",top_k=", spec.top_k, ",format=", format_name(spec.format));
  return p;
}

std::string MoeLayerPlan::describe() const {
  std::string s = str("tp ", par.tp_rank, "/", par.tp_size, " ep ", par.ep_rank, "/", par.ep_size,
                      ": experts [", expert_begin, ", ", expert_begin + experts_local, ") inter ", inter.raw,
                      " (ckpt rows [", inter.src_offset, ", ", inter.src_offset + inter.raw, ")) padded ",
                      inter.padded, "; w13 ", shape_str(experts.w13), " w2 ", shape_str(experts.w2));
  if (!experts.w13_scale.empty())
    s += str(" w13_scale ", shape_str(experts.w13_scale), " w2_scale ", shape_str(experts.w2_scale));
  if (spec.format == WeightFormat::Fp8Block)
    s += str(" scale blocks from ", inter.first_block, " phase ", inter.block_phase);
  if (shared) s += str("; shared inter ", shared_inter->raw, " padded ", shared_inter->padded);
  s += str("; kernel inter_dim ", kernel_inter_dim, "; config key ", tuned_config_key);
  return s;
}

}  // namespace moe::layout
