#include "cuda/moe_layer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/env_flag.h"
#include "core/error.h"
#include "cuda/kernel_timeline.h"
#include "cuda/kernels/expert_decode.h"
#include "cuda/kernels/expert_fused.h"
#include "cuda/kernels/expert_mma.h"
#include "cuda/kernels/expert_stream.h"
#include "cuda/kernels/expert_swap_ab.h"
#include "cuda/kernels/launchers.h"
#include "cuda/kernels/swap_ab_timeline.h"
#include "cuda/l2_warm.h"
#include "cuda/random_fill.h"
#include "moe/tuned_config.h"
#include "quant/fp8_block.h"

namespace moe::cuda {
namespace {

DeviceBuffer upload(const Tensor& t) {
  DeviceBuffer b(t.nbytes());
  if (t.nbytes()) b.upload(t.data(), t.nbytes());
  return b;
}

WFormat to_device(WeightFormat f) {
  return f == WeightFormat::Bf16       ? WFormat::Bf16
         : f == WeightFormat::Fp8Block ? WFormat::Fp8Block
                                       : WFormat::Mxfp4;
}

int elems_per_16_bytes(WeightFormat f) {
  return f == WeightFormat::Bf16 ? 8 : f == WeightFormat::Fp8Block ? 16 : 32;
}

// The kernels' view of a projection's device buffers and geometry.
void describe_projection(DeviceProjection& d, WeightFormat f, int experts, int hidden,
                         const layout::InterShard& in) {
  ExpertWeightsDev& v = d.view;
  v.format = to_device(f);
  v.num_experts = experts;
  v.hidden = hidden;
  v.inter = static_cast<int>(in.padded);
  v.phase = static_cast<int>(in.block_phase);
  v.scale_blocks = static_cast<int>(in.scale_blocks);
  v.w13 = d.w13.as<uint8_t>();
  v.w2 = d.w2.as<uint8_t>();
  v.w13_scale = d.w13_scale.get();
  v.w2_scale = d.w2_scale.get();
  v.w13_bias = d.w13_bias.bytes() ? d.w13_bias.as<float>() : nullptr;
  v.w2_bias = d.w2_bias.bytes() ? d.w2_bias.as<float>() : nullptr;
}

DeviceProjection upload_projection(const layout::RankProjection& p, WeightFormat f, int experts, int hidden,
                                   const layout::InterShard& in) {
  DeviceProjection d;
  d.w13 = upload(p.w13);
  d.w13_scale = upload(p.w13_scale);
  d.w2 = upload(p.w2);
  d.w2_scale = upload(p.w2_scale);
  d.w13_bias = upload(p.w13_bias);
  d.w2_bias = upload(p.w2_bias);
  describe_projection(d, f, experts, hidden, in);
  return d;
}

void check_kernel_shapes(const MoeConfig& cfg, int64_t H, const layout::InterShard& in, const char* what) {
  const int64_t el = elems_per_16_bytes(cfg.format);
  require_input(H % el == 0, "cuda backend: hidden size ", H, " must be a multiple of ", el, " for ",
                format_name(cfg.format));
  require_input(in.padded % el == 0, "cuda backend: ", what, " padded intermediate ", in.padded,
                " must be a multiple of ", el);
  if (cfg.format == WeightFormat::Fp8Block)
    require_input(in.block_phase % 16 == 0, "cuda backend: ", what, " fp8 block phase ", in.block_phase,
                  " must be a multiple of 16 (I / TP a multiple of 16)");
  if (cfg.act_quant == ActQuant::Mxfp4)
    require_input(H % 32 == 0 && in.padded % 32 == 0,
                  "cuda backend: mxfp4 activations need H and I multiples of 32");
}

}  // namespace

DeviceMoeLayer::DeviceMoeLayer(const MoeConfig& cfg, const layout::RankWeights& rank) : cfg_(cfg) {
  const layout::MoeLayerPlan& plan = rank.plan;
  tuned_ = tuned_config_or_default(plan.tuned_config_key);
  num_experts_ = static_cast<int>(plan.experts_local);
  router_experts_ = static_cast<int>(plan.spec.num_experts);
  expert_begin_ = static_cast<int>(plan.expert_begin);
  hidden_ = static_cast<int>(plan.spec.hidden);
  require_input(router_experts_ <= 1024, "cuda backend: at most 1024 experts, got ", router_experts_);
  require_input(cfg.router.top_k <= 32, "cuda backend: top_k above 32");
  require_input(cfg.router.n_group <= 32, "cuda backend: n_group above 32");
  check_kernel_shapes(cfg, hidden_, plan.inter, "experts");
  experts_ = upload_projection(*rank.experts, cfg.format, num_experts_, hidden_, plan.inter);
  weight_bytes_ = rank.experts->w13.nbytes() + rank.experts->w2.nbytes() + rank.experts->w13_scale.nbytes() +
                  rank.experts->w2_scale.nbytes();
  // Under expert parallelism every rank has the shared expert's weights; rank 0 alone adds it, or the
  // all-reduce would count it once per rank.
  if (rank.shared && plan.par.ep_rank == 0) {
    check_kernel_shapes(cfg, hidden_, *plan.shared_inter, "shared expert");
    shared_ = upload_projection(*rank.shared, cfg.format, 1, hidden_, *plan.shared_inter);
    shared_bytes_ = rank.shared->w13.nbytes() + rank.shared->w2.nbytes() + rank.shared->w13_scale.nbytes() +
                    rank.shared->w2_scale.nbytes();
    const auto& gw = rank.view.shared->gate_weight;
    if (!gw.empty()) {
      shared_gate_ = DeviceBuffer(gw.size() * sizeof(float));
      shared_gate_.upload(gw.data(), gw.size() * sizeof(float));
    }
  }
  if (!rank.view.router_bias.empty()) {
    router_bias_ = DeviceBuffer(rank.view.router_bias.size() * sizeof(float));
    router_bias_.upload(rank.view.router_bias.data(), rank.view.router_bias.size() * sizeof(float));
  }
}

namespace {

DeviceBuffer random_buffer(DType t, const Shape& s, RandomKind kind, uint64_t seed) {
  if (s.empty()) return DeviceBuffer();
  DeviceBuffer b(static_cast<size_t>(numel(s)) * dtype_size(t));
  fill_random(b.get(), b.bytes(), kind, seed);
  return b;
}

DeviceProjection random_projection(WeightFormat f, const layout::ProjectionShapes& shp, int experts,
                                   int hidden, const layout::InterShard& in, uint64_t seed, size_t* bytes) {
  DeviceProjection d;
  const RandomKind wk = f == WeightFormat::Bf16       ? RandomKind::Bf16
                        : f == WeightFormat::Fp8Block ? RandomKind::Fp8
                                                      : RandomKind::Bytes;
  const RandomKind sk = f == WeightFormat::Fp8Block ? RandomKind::Fp32Scale : RandomKind::E8m0Scale;
  const DType wt = f == WeightFormat::Bf16 ? DType::BF16 : DType::U8;
  const DType st = f == WeightFormat::Fp8Block ? DType::F32 : DType::U8;
  d.w13 = random_buffer(wt, shp.w13, wk, seed);
  d.w2 = random_buffer(wt, shp.w2, wk, seed + 1);
  d.w13_scale = random_buffer(st, shp.w13_scale, sk, seed + 2);
  d.w2_scale = random_buffer(st, shp.w2_scale, sk, seed + 3);
  *bytes = d.w13.bytes() + d.w2.bytes() + d.w13_scale.bytes() + d.w2_scale.bytes();
  describe_projection(d, f, experts, hidden, in);
  return d;
}

}  // namespace

DeviceMoeLayer DeviceMoeLayer::random(const MoeConfig& cfg, const layout::MoeLayerPlan& plan, uint64_t seed,
                                      bool shared_gate) {
  DeviceMoeLayer l(cfg);
  l.tuned_ = tuned_config_or_default(plan.tuned_config_key);
  l.num_experts_ = static_cast<int>(plan.experts_local);
  l.router_experts_ = static_cast<int>(plan.spec.num_experts);
  l.expert_begin_ = static_cast<int>(plan.expert_begin);
  l.hidden_ = static_cast<int>(plan.spec.hidden);
  check_kernel_shapes(cfg, l.hidden_, plan.inter, "experts");
  l.experts_ = random_projection(cfg.format, plan.experts, l.num_experts_, l.hidden_, plan.inter, seed,
                                 &l.weight_bytes_);
  if (plan.shared) {
    l.shared_ = random_projection(cfg.format, *plan.shared, 1, l.hidden_, *plan.shared_inter, seed + 10,
                                  &l.shared_bytes_);
    if (shared_gate) {
      l.shared_gate_ = DeviceBuffer(static_cast<size_t>(l.hidden_) * 4);
      fill_random(l.shared_gate_.get(), l.shared_gate_.bytes(), RandomKind::Fp32Small, seed + 20);
    }
  }
  if (cfg.router.kind == RouterKind::SigmoidGrouped) {
    l.router_bias_ = DeviceBuffer(static_cast<size_t>(l.router_experts_) * 4);
    fill_random(l.router_bias_.get(), l.router_bias_.bytes(), RandomKind::Fp32Small, seed + 21);
  }
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
  return l;
}

MoeWorkspace::MoeWorkspace(const DeviceMoeLayer& layer, int max_tokens) : max_tokens_(max_tokens) {
  const size_t M = static_cast<size_t>(max_tokens), K = static_cast<size_t>(layer.config().router.top_k);
  const size_t E = static_cast<size_t>(layer.num_experts()), H = static_cast<size_t>(layer.hidden());
  const size_t P = static_cast<size_t>(layer.experts().view.inter);
  topk_ids = DeviceBuffer(M * K * 4);
  topk_weights = DeviceBuffer(M * K * 4);
  offsets = DeviceBuffer((E + 1) * 4);
  slot_begin = DeviceBuffer((E + 1) * 4);
  group_block_counts = DeviceBuffer(static_cast<size_t>(kGroupingMaxBlocks) * E * 4);
  sorted_pairs = DeviceBuffer(M * K * 4);
  active = DeviceBuffer(E * 4);
  num_active = DeviceBuffer(4);
  xq = DeviceBuffer(M * H * 4);
  h = DeviceBuffer(M * K * P * 2);
  y = DeviceBuffer(M * K * H * 4);
  // One counter per row tile of H (tiles are 32 rows or more): the decode path's combine tiles, and stage 2's
  // row tiles where the swap-AB stage 2 combines.
  const size_t tile_counter_bytes = (H + 31) / 32 * 4;
  decode_counters = DeviceBuffer(tile_counter_bytes);
  fused_barrier = DeviceBuffer(kFusedBarrierWords * 4);
  MOE_CUDA_CHECK(cudaMemset(fused_barrier.get(), 0, fused_barrier.bytes()));
  chain_counters = DeviceBuffer(kChainCounters * 4);
  combine_counters = DeviceBuffer(tile_counter_bytes);
  if (const DeviceProjection* s = layer.shared()) {
    const size_t Ps = static_cast<size_t>(s->view.inter);
    shared_gate = DeviceBuffer(M * 4);
    shared_pairs = DeviceBuffer(M * 4);
    shared_offsets = DeviceBuffer(2 * 4);
    shared_active = DeviceBuffer(4);
    shared_num_active = DeviceBuffer(4);
    shared_h = DeviceBuffer(M * Ps * 2);
    shared_y = DeviceBuffer(M * H * 4);
    shared_stream.create();  // here, before any call is captured into a graph
    warm_stream.create();
  }
  const ActQuant aq = layer.config().act_quant;
  const AQuant q = aq == ActQuant::None        ? AQuant::None
                   : aq == ActQuant::Fp8_1x128 ? AQuant::Fp8
                                               : AQuant::Mxfp4;
  if (mma_supported(layer.experts().view.format, q)) {
    const bool fp8 = q == AQuant::Fp8;
    const auto k_groups = [](size_t n, size_t phase) { return (n + phase + 127) / 128; };
    mma_max_tiles = cuda::mma_max_tiles(static_cast<int>(M * K), static_cast<int>(E));
    const DeviceProjection* s = layer.shared();
    shared_mma_max_tiles = s ? cuda::mma_max_tiles(static_cast<int>(M), 1) : 0;
    mma_tiles = DeviceBuffer(static_cast<size_t>(std::max(mma_max_tiles, shared_mma_max_tiles)) * 8);
    mma_num_tiles = DeviceBuffer(4);
    mma_tile_ready = DeviceBuffer((static_cast<size_t>(mma_max_tiles) + cuda::kCountsAfterTiles) * 4);
    if (fp8) {
      mma_x_codes = DeviceBuffer(M * H);
      mma_x_scales = DeviceBuffer(M * k_groups(H, 0) * 4);
      mma_h_codes = DeviceBuffer(M * K * P);
      mma_h_scales = DeviceBuffer(M * K * k_groups(P, static_cast<size_t>(layer.experts().view.phase)) * 4);
      if (s) {
        const size_t Ps = static_cast<size_t>(s->view.inter);
        shared_mma_h_codes = DeviceBuffer(M * Ps);
        shared_mma_h_scales = DeviceBuffer(M * k_groups(Ps, static_cast<size_t>(s->view.phase)) * 4);
      }
    }
  }
}

void MoeWorkspace::poison(cudaStream_t s) {
  for (DeviceBuffer* b : {&topk_ids,
                          &topk_weights,
                          &offsets,
                          &slot_begin,
                          &group_block_counts,
                          &sorted_pairs,
                          &active,
                          &num_active,
                          &xq,
                          &h,
                          &y,
                          &decode_counters,
                          &chain_counters,
                          &combine_counters,
                          &shared_gate,
                          &shared_pairs,
                          &shared_offsets,
                          &shared_active,
                          &shared_num_active,
                          &shared_h,
                          &shared_y,
                          &mma_x_codes,
                          &mma_x_scales,
                          &mma_h_codes,
                          &mma_h_scales,
                          &mma_tiles,
                          &mma_num_tiles,
                          &mma_tile_ready,
                          &shared_mma_h_codes,
                          &shared_mma_h_scales})
    b->poison(s);
}

bool decode_by_default() {
  static const bool on = env_flag("MOE_DECODE");
  return on;
}

bool stage2_combine_by_default() {
  static const bool on = env_flag("MOE_STAGE2_COMBINE");
  return on;
}

bool fused_by_default() {
  static const bool on = env_flag("MOE_FUSED");
  return on;
}

namespace {
EnvSwitch self_route_switch("MOE_SWAP_AB_SELF_ROUTE");
EnvSwitch shared_stream_switch("MOE_SHARED_STREAM");
// -1: by hidden size (swap_ab_joint_wave); 0 never; 1 always.
EnvCount joint_wave_setting("MOE_SWAP_AB_JOINT_WAVE", -1, -1, 1);
EnvSwitch counter_waits_switch("MOE_COUNTER_WAITS", false);
// -1: by the joint wave (shared_expert_warm_kb_for). 8 MB: what DRAM brings in a prologue's ~5 us of routing
// with room to spare, and a small part of L2 (on the H100, DeepSeek-V3 full fp8 M=1: the first 25 % of its
// 29 MB measured 146.0 against 147.3 us, all of it 149.6: past the prologue the requests compete with the
// routed experts' stream). With the joint wave (one wave for the routed and the shared launches) 16 MB led on
// the same layer, two H100 leases: 147.96 against 149.31 us (session 32), 142.8 against 144.6 (session 33).
EnvCount shared_warm_kb("MOE_SHARED_WARM_KB", -1, -1, 1 << 20);
constexpr int kSharedWarmKb = 8192, kSharedWarmJointWaveKb = 16384;
EnvCount shared_warm_kind("MOE_SHARED_WARM_KIND", 1, 1, 2);
EnvCount shared_warm_blocks("MOE_SHARED_WARM_BLOCKS", 16, 1, 1024);
EnvCount shared_warm_max_tokens("MOE_SHARED_WARM_MAX_M", 8, 1, 1 << 20);

// The shared expert's weights requested into L2 on ws.warm_stream before the prologue (l2_warm.h): the
// budget spread over its gate/up rows as the first bytes of each, the part its stage 1 reads first. A row's
// bytes come from the uploaded buffer, the layout plan's [experts, 2P, row] shape.
void warm_shared_expert(const DeviceProjection& p, int kb, MoeWorkspace& ws, cudaStream_t stream) {
  const int rows = 2 * p.view.inter;
  const size_t row = p.w13.bytes() / (static_cast<size_t>(p.view.num_experts) * static_cast<size_t>(rows));
  const size_t budget = static_cast<size_t>(kb) * 1024;
  const L2WarmRows warm{p.view.w13, rows, row, std::min(row, budget / static_cast<size_t>(rows))};
  l2_warm(warm, static_cast<L2WarmKind>(shared_warm_kind.get()), shared_warm_blocks.get(),
          ws.warm_stream.fork(stream));
}
}  // namespace

int shared_expert_warm_kb() {
  return shared_warm_kb.get();
}

int shared_expert_warm_kb_for(int hidden) {
  const int setting = shared_warm_kb.get();
  if (setting >= 0) return setting;
  return swap_ab_joint_wave(hidden) ? kSharedWarmJointWaveKb : kSharedWarmKb;
}

void set_shared_expert_warm_kb(int kb) {
  shared_warm_kb.set(kb);
}

bool moe_counter_waits() {
  return counter_waits_switch.get();
}

void set_moe_counter_waits(bool on) {
  counter_waits_switch.set(on);
}

bool swap_ab_joint_wave(int hidden) {
  const int setting = joint_wave_setting.get();
  return setting < 0 ? hidden > kJointWaveMinHidden : setting == 1;
}

int swap_ab_joint_wave_setting() {
  return joint_wave_setting.get();
}

void set_swap_ab_joint_wave_setting(int setting) {
  joint_wave_setting.set(setting);
}

bool swap_ab_self_route() {
  return self_route_switch.get();
}

bool shared_expert_beside_routed() {
  return shared_stream_switch.get();
}

void set_shared_expert_beside_routed(bool on) {
  shared_stream_switch.set(on);
}

void set_swap_ab_self_route(bool on) {
  self_route_switch.set(on);
}

namespace {

MoePartMarker part_marker = nullptr;
void* part_marker_context = nullptr;

void mark_part(const char* part, cudaStream_t stream) {
  if (part_marker) part_marker(part_marker_context, part, stream);
}

AQuant device_quant(ActQuant q) {
  return q == ActQuant::None ? AQuant::None : q == ActQuant::Fp8_1x128 ? AQuant::Fp8 : AQuant::Mxfp4;
}

// The layer's routing as the kernels take it.
RouterParams router_params(const DeviceMoeLayer& layer) {
  const MoeConfig& cfg = layer.config();
  return {cfg.router.kind == RouterKind::SoftmaxTopk   ? Router::SoftmaxTopk
          : cfg.router.kind == RouterKind::TopkSoftmax ? Router::TopkSoftmax
                                                       : Router::SigmoidGrouped,
          layer.router_experts(),
          cfg.router.top_k,
          cfg.router.n_group,
          cfg.router.topk_group,
          cfg.router.renormalize,
          cfg.router.routed_scaling_factor,
          layer.router_bias(),
          layer.expert_begin(),
          layer.num_experts()};
}

}  // namespace

void set_moe_part_marker(MoePartMarker marker, void* context) {
  part_marker = marker;
  part_marker_context = context;
}

bool fused_path_applies(const DeviceMoeLayer& layer, int M) {
  return fused_supported(layer.experts().view, router_params(layer), device_quant(layer.config().act_quant),
                         M, layer.shared() != nullptr);
}

bool auto_takes_fused(const DeviceMoeLayer& layer, int M) {
  return fused_by_default() && fused_path_applies(layer, M);
}

int mma_min_tokens() {
  static const int threshold = [] {
    const char* v = std::getenv("MOE_MMA_MIN_TOKENS");
    return std::max(65, v ? std::atoi(v) : 384);
  }();
  return threshold;
}

int auto_swap_ab_below(int hidden, int inter, bool fp8, int experts) {
  // H100, session 28 (scripts/path-thresholds: the grouped GEMM with staged outputs against the swap-AB
  // stages, us). H <= 4096: the swap-AB stages led up to 32 tokens, the grouped GEMM from 48 on Qwen3-Next
  // (fp8 406.6 vs 443.2, bf16 719 vs 791), within 1 % at 48 elsewhere (Qwen3-30B-A3B fp8 230.7 vs 228.4,
  // Qwen3-235B-A22B TP8 141.0 vs 141.9) and ahead from 64 (Qwen3-30B-A3B fp8 232.1 vs 246.6; its bf16 had
  // the grouped GEMM ahead from 16 tokens, 314.2 vs 320.7, not followed: Qwen3-Next's and Qwen3-235B-A22B's
  // bf16 had the swap-AB stages ahead there, 328.7 vs 332.7 and 174.5 vs 180.4). DeepSeek's
  // H = 7168 stages whole 7168-byte token rows in every block, so its swap-AB passes are short and a wide
  // intermediate (more blocks staging the same tokens) moves the crossover down: TP8 (I = 256) fp8 M=16
  // 235.1 vs 259.6, M=24 300.9 vs 268.6; bf16 M=12 306.8 vs 325.5, M=16 408.3 vs 383.5; the full layer
  // (I = 2048) fp8 M=8 831.3 vs 834.6, M=12 1038.5 vs 996.9; bf16 M=2 562.0 vs 565.4, M=4 946.6 vs 902.5.
  // Session 32 (H100, after the swap-AB stages' balanced K warps and staging changes of sessions 29-31): at
  // 48 and 56 tokens the swap-AB stages now lead where a layer has at most 128 experts (Qwen3-30B-A3B fp8 48
  // tokens 220.7 vs 232.0, 56: 222.1 vs 231.7; Qwen3-235B-A22B TP8 fp8 134.9 vs 154.0 and 120.8 vs 143.7,
  // bf16 219.1 vs 222.7; Qwen3-30B-A3B bf16 within 0.5 % either way), the grouped GEMM from 64 (229.3 vs
  // 232.2); with 512 experts (Qwen3-Next: ~310 active at 48 tokens, each its own swap-AB group) the grouped
  // GEMM still leads at 48 (fp8 404.6 vs 437.8, bf16 705.8 vs 773.6). DeepSeek-V3 TP8 fp8: the swap-AB
  // stages lead at 24 and 28 (227.2 vs 259.4, 253.5 vs 264.5), the grouped GEMM at 32 (264.9 vs 289.1).
  // Session 45 (H100, after sessions 39-44 sped the grouped GEMM up): with at most 128 experts a wide
  // intermediate (Qwen3-30B-A3B, I = 768) has the grouped GEMM ahead from 8 tokens in bf16 (171.6 vs 177.0,
  // 16: 286.9 vs 301.2, 48: 387.0 vs 398.6) and from 16-24 in fp8 (24: 179.3 vs 182.4, 48: 212.5 vs 214.8;
  // level at 16 and 32; session 38's H200 had it 8 % ahead at 16); a narrow one (Qwen3-235B-A22B TP8, I =
  // 192) keeps the swap-AB stages to 64 in fp8 (48: 116.8 vs 140.5) and to 16 in bf16 (the grouped GEMM
  // ahead at 24-48 by ~1.5 %). Not below kDecodeOnePathTokens + 1 there: a decode batch keeps the one
  // path, so a token's bits do not depend on how many others share its step (bf16 at 8 tokens gives up ~3 %).
  // Session 46 (H100): with 512 experts (Qwen3-Next) bf16's grouped GEMM now leads from 16 tokens (306.2 vs
  // 313.3, 24: 427.8 vs 432.8, 32: 524.9 vs 528.8; the swap-AB stages still at 12, 242.9 vs 247.6), fp8's
  // only from 48 (32: 272.8 vs 311.0; 48: 387.0 vs 427.4).
  if (hidden <= 4096 && experts <= 128) {
    if (inter >= 512) return fp8 ? 16 : kDecodeOnePathTokens + 1;
    return fp8 ? 64 : 24;
  }
  if (hidden <= 4096) return fp8 ? 48 : 16;
  if (inter <= 256) return fp8 ? 32 : 16;
  return fp8 ? 12 : 4;
}

namespace {

// Auto's threshold for this layer's call (auto_swap_ab_below); MOE_SWAP_AB_BELOW=N (read once) replaces it
// for every layer, to measure Auto's whole call at another threshold.
int swap_ab_below(const DeviceMoeLayer& layer, const ActivationParams& act) {
  static const int forced = [] {
    const char* v = std::getenv("MOE_SWAP_AB_BELOW");
    return v && std::atoi(v) > 0 ? std::atoi(v) : 0;
  }();
  if (forced > 0) return forced;
  return auto_swap_ab_below(layer.hidden(), layer.experts().view.inter, act.quant == AQuant::Fp8,
                            layer.num_experts());
}

// Auto takes the grouped GEMM from `below` tokens (swap_ab_below: where use_swap_ab never does).
bool use_mma(const MoeWorkspace& ws, const ActivationParams& act, const ExpertWeightsDev& w, int M,
             GemmPath path, int below) {
  if (path == GemmPath::Gemv || path == GemmPath::Stream || path == GemmPath::SwapAb ||
      ws.mma_max_tiles == 0 || !mma_supported(w.format, act.quant))
    return false;
  return path == GemmPath::Mma || M >= mma_min_tokens() || (path == GemmPath::Auto && M >= below);
}

// The streaming tensor-core stages need the fp8 codes of x, which the workspace holds for the formats that
// have tensor-core paths.
bool use_stream(const DeviceMoeLayer& layer, const MoeWorkspace& ws, const ActivationParams& act,
                GemmPath path) {
  // Only when asked for: on the H200 it is still slower than the GEMV below the grouped-GEMM threshold
  // (docs/performance.md).
  if (path != GemmPath::Stream) return false;
  if (act.quant == AQuant::Fp8 && !ws.mma_x_codes.bytes()) return false;
  if (!stream_supported(layer.experts().view, act.quant)) return false;
  return !layer.shared() || stream_supported(layer.shared()->view, act.quant);
}

// An estimate of the most pairs one expert gets in a call (it sizes the swap-AB token passes, never the
// arithmetic): the mean plus two standard deviations of a uniform routing, for the routed experts (a busier
// expert makes a second pass); every token for the shared expert.
int busiest_expert_pairs(int M, int top_k, int experts, bool shared) {
  if (shared) return M;
  const double mean = static_cast<double>(M) * top_k / std::max(1, experts);
  return std::min(M, static_cast<int>(mean + 2.0 * std::sqrt(mean)) + 1);
}

// The swap-AB tensor-core stages (expert_swap_ab.h) when forced, or for Auto below the grouped-GEMM
// threshold, for both projections (routed and shared). fp8 needs the prologue's codes of x, which the
// workspace holds for the formats that have tensor-core paths.
bool use_swap_ab(const DeviceMoeLayer& layer, const MoeWorkspace& ws, const ActivationParams& act, int M,
                 GemmPath path, int below) {
  // The environment's experimental Auto variants (MOE_DECODE, MOE_STAGE2_COMBINE) keep the GEMV.
  const bool auto_takes =
      path == GemmPath::Auto && M < mma_min_tokens() && !decode_by_default() && !stage2_combine_by_default();
  if (path != GemmPath::SwapAb && !auto_takes) return false;
  if (act.quant == AQuant::Fp8 && !ws.mma_x_codes.bytes()) return false;
  if (!swap_ab_supported(layer.experts().view, act.quant)) return false;
  if (layer.shared() && !swap_ab_supported(layer.shared()->view, act.quant)) return false;
  // Auto: below its threshold (`below`: swap_ab_below), every token count, however busy its busiest expert
  // (a pass too short for it makes a second pass; the GEMV would be slower still).
  return path == GemmPath::SwapAb || M < below;
}

enum class StagePath { Gemv, Stream, Mma, SwapAb };

// Stages 1 and 2 of one projection (routed or shared) on the chosen path. route and align are set when the
// swap-AB stage 1 routes the call itself (no prologue ran).
// beside_groups: the swap-AB groups of the launch that runs beside this one (SwapAbInputs::beside_groups).
// counters: the call's chain counters (moe_counter_waits; swap-AB only): stage 1 arrives on counters[0],
// stage 2 waits there and arrives on counters[1]. Returns the swap-AB stages' block counts (the counters'
// final values, for the combine's wait); zeros for the other paths.
struct StageBlocks {
  unsigned stage1 = 0, stage2 = 0;
};
StageBlocks run_expert_stages(const GemvArgs& g, MoeWorkspace& ws, bool shared, const uint16_t* x, int M,
                              StagePath path, bool x_codes_ready, cudaStream_t stream,
                              const RouteArgs* route = nullptr, const AlignArgs* align = nullptr,
                              int beside_groups = 0, unsigned* counters = nullptr,
                              uint16_t* combine_out = nullptr) {
  if (path == StagePath::Gemv) {
    launch_stage1(g, stream);
    mark_part(shared ? "moe shared stage 1" : "moe stage 1", stream);
    launch_stage2(g, stream);
    mark_part(shared ? "moe shared stage 2" : "moe stage 2", stream);
    return {};
  }
  if (path == StagePath::SwapAb) {
    SwapAbInputs in{};
    in.x = x;
    in.x_codes = g.act.quant == AQuant::Fp8 ? ws.mma_x_codes.as<uint8_t>() : nullptr;
    in.x_scales = ws.mma_x_scales.as<float>();
    in.max_pairs_per_expert = busiest_expert_pairs(M, g.g.pair_div, g.w.num_experts, shared);
    in.route = route;
    in.align = align;
    in.tokens = M;
    in.topk_ids = shared ? nullptr : ws.topk_ids.as<int>();
    in.beside_groups = beside_groups;
    in.arrive = counters;
    if (combine_out) {
      in.combine_out = combine_out;
      in.tile_counters = ws.combine_counters.as<unsigned>();
      in.n_tile_counters = static_cast<int>(ws.combine_counters.bytes() / 4);
      in.topk_weights = ws.topk_weights.as<float>();
    }
    const int stage1_blocks = launch_swap_ab_stage1(g, in, stream);
    mark_part(shared ? "moe shared stage 1" : "moe stage 1", stream);
    if (counters) {
      in.wait_on = counters;
      in.wait_target = static_cast<unsigned>(stage1_blocks);
      in.arrive = counters + 1;
    }
    const int stage2_blocks = launch_swap_ab_stage2(g, in, stream);
    mark_part(shared ? "moe shared stage 2" : "moe stage 2", stream);
    return {static_cast<unsigned>(stage1_blocks), static_cast<unsigned>(stage2_blocks)};
  }
  if (path == StagePath::Stream) {
    StreamInputs in{};
    in.x = x;
    in.x_codes = ws.mma_x_codes.as<uint8_t>();
    in.x_scales = ws.mma_x_scales.as<float>();
    in.max_tokens_per_expert = M;
    in.pairs_bound = M * g.g.pair_div;
    in.h_codes = (shared ? ws.shared_mma_h_codes : ws.mma_h_codes).as<uint8_t>();
    in.h_scales = (shared ? ws.shared_mma_h_scales : ws.mma_h_scales).as<float>();
    launch_expert_stream(g, in, stream);
    mark_part(shared ? "moe shared stream stages" : "moe stream stages", stream);
    return {};
  }
  MmaScratch s{};
  s.x_codes = ws.mma_x_codes.as<uint8_t>();
  s.x_scales = ws.mma_x_scales.as<float>();
  s.x_ready = x_codes_ready;
  s.h_codes = (shared ? ws.shared_mma_h_codes : ws.mma_h_codes).as<uint8_t>();
  s.h_scales = (shared ? ws.shared_mma_h_scales : ws.mma_h_scales).as<float>();
  s.tiles = ws.mma_tiles.as<int2>();
  s.num_tiles = ws.mma_num_tiles.as<int>();
  // The shared expert's stages take no tile counts (they may run beside the routed experts' on their stream).
  s.tile_ready = shared ? nullptr : ws.mma_tile_ready.as<unsigned>();
  s.max_tiles = mma_max_tiles(M * g.g.pair_div, std::min(g.w.num_experts, M * g.g.pair_div));
  launch_expert_mma(g, x, M, s, stream);
  mark_part(shared ? "moe shared mma stages" : "moe mma stages", stream);
  return {};
}

// The fused decode path's arguments; its dot products take the GEMV's lane split (same bits).
DecodeArgs decode_args(const DeviceMoeLayer& layer, MoeWorkspace& ws, const RouterParams& router,
                       const ActivationParams& act, const uint16_t* x, const GemvArgs& g, const GemvArgs& s,
                       uint16_t* out) {
  DecodeArgs d{};
  d.router = router;
  d.act = act;
  d.x = x;
  d.experts = g.w;
  d.lanes[0][0] = gemv_lanes_per_row(g, 1);
  d.lanes[0][1] = gemv_lanes_per_row(g, 2);
  d.has_shared = layer.shared() != nullptr;
  if (d.has_shared) {
    d.shared = s.w;
    d.lanes[1][0] = gemv_lanes_per_row(s, 1);
    d.lanes[1][1] = gemv_lanes_per_row(s, 2);
  }
  d.h = ws.h.as<uint16_t>();
  d.shared_h = ws.shared_h.as<uint16_t>();
  d.out = out;
  d.y = ws.y.as<float>();
  d.shared_y = ws.shared_y.as<float>();
  d.shared_gate = ws.shared_gate.as<float>();
  d.counters = ws.decode_counters.as<int>();
  d.num_counters = static_cast<int>(ws.decode_counters.bytes() / 4);
  d.grouping = g.g;
  d.topk_ids = ws.topk_ids.as<int>();
  d.topk_weights = ws.topk_weights.as<float>();
  return d;
}

}  // namespace

void fused_moe(const DeviceMoeLayer& layer, MoeWorkspace& ws, const uint16_t* x, const float* router_logits,
               int M, uint16_t* out, cudaStream_t stream, GemmPath path, MoeCombineInput* leave_combine,
               const RouterLaunch* router_launch) {
  if (leave_combine) *leave_combine = MoeCombineInput{};  // the paths that combine themselves leave it so
  require(M >= 1 && M <= ws.max_tokens(), "fused_moe: M=", M, " outside the workspace's [1, ",
          ws.max_tokens(), "]");
  const MoeConfig& cfg = layer.config();
  const int K = cfg.router.top_k, E = layer.num_experts();
  const DeviceProjection* shared = layer.shared();

  const ActivationParams act{cfg.activation == Activation::Silu ? Act::Silu : Act::SwigluOai,
                             device_quant(cfg.act_quant), cfg.swiglu_alpha, cfg.swiglu_limit};
  RouteArgs ra{};
  ra.router = router_params(layer);
  // The one-launch fused kernel (expert_fused.h) for a few tokens: routing, both stages and the combine in
  // one launch, no prologue.
  if ((path == GemmPath::Fused || (path == GemmPath::Auto && fused_by_default())) &&
      fused_path_applies(layer, M)) {
    FusedArgs fa{};
    fa.router = ra.router;
    fa.act = act;
    fa.w = layer.experts().view;
    fa.x = x;
    fa.logits = router_logits;
    fa.topk_ids = ws.topk_ids.as<int>();
    fa.topk_weights = ws.topk_weights.as<float>();
    fa.h = ws.h.as<uint16_t>();
    fa.barrier = ws.fused_barrier.as<unsigned>();
    fa.out = out;
    fa.timeline = fused_timeline_buffer();
    fa.M = M;
    if (router_launch) (*router_launch)(nullptr, nullptr);
    launch_fused(fa, stream);
    MOE_CUDA_CHECK_LAUNCH();
    mark_part("moe fused", stream);
    return;
  }
  ra.logits = router_logits;
  ra.topk_ids = ws.topk_ids.as<int>();
  ra.topk_weights = ws.topk_weights.as<float>();
  // One path for both projections. The prologue quantises x for it: dequantised values for the GEMV, fp8
  // codes for the streaming, swap-AB and grouped-GEMM stages.
  // Auto: the swap-AB stages below auto_swap_ab_below() tokens, the grouped GEMM from there.
  const int below = swap_ab_below(layer, act);
  const bool swap_ab = use_swap_ab(layer, ws, act, M, path, below);
  const bool mma = use_mma(ws, act, layer.experts().view, M, path, below);
  const StagePath stages = mma                                ? StagePath::Mma
                           : use_stream(layer, ws, act, path) ? StagePath::Stream
                           : swap_ab                          ? StagePath::SwapAb
                                                              : StagePath::Gemv;
  ra.quant = act.quant;
  ra.xq = stages == StagePath::Gemv ? ws.xq.as<float>() : nullptr;
  if (stages != StagePath::Gemv && act.quant == AQuant::Fp8) {
    ra.x_codes = ws.mma_x_codes.as<uint8_t>();
    ra.x_scales = ws.mma_x_scales.as<float>();
  }
  // The grouped GEMM's many tokens: a warp per row of x beside the routing warps, and no quantising launch
  // of its own (once for the routed and the shared experts).
  ra.x_rows = stages == StagePath::Mma && ra.x_codes != nullptr;
  ra.x = x;
  ra.hidden = layer.hidden();
  if (shared) {
    ra.shared_gate_weight = layer.shared_gate_weight();
    ra.shared_gate_out = ws.shared_gate.as<float>();
    ra.shared_pairs = ws.shared_pairs.as<int>();
    ra.shared_offsets = ws.shared_offsets.as<int>();
    ra.shared_active = ws.shared_active.as<int>();
    ra.shared_num_active = ws.shared_num_active.as<int>();
  }
  GemvArgs g{};
  g.w = layer.experts().view;
  g.g = {ws.offsets.as<int>(),   ws.sorted_pairs.as<int>(), ws.active.as<int>(), ws.num_active.as<int>(), K,
         ws.slot_begin.as<int>()};
  g.act = act;
  g.xq = ws.xq.as<float>();
  g.h = ws.h.as<uint16_t>();
  g.y = ws.y.as<float>();
  g.max_groups = std::min(E, M * K);
  g.min_groups = std::min(E, K);
  g.stage1_lanes_per_row = layer.tuned().stage1_lanes_per_row;
  g.stage2_lanes_per_row = layer.tuned().stage2_lanes_per_row;
  g.pairs_all_local = layer.num_experts() == layer.router_experts();
  GemvArgs s = g;
  if (shared) {
    s.w = shared->view;
    s.g = {ws.shared_offsets.as<int>(),
           ws.shared_pairs.as<int>(),
           ws.shared_active.as<int>(),
           ws.shared_num_active.as<int>(),
           1,
           ws.shared_offsets.as<int>()};
    s.h = ws.shared_h.as<uint16_t>();
    s.y = ws.shared_y.as<float>();
    s.max_groups = 1;
    s.min_groups = 1;
    s.stage1_lanes_per_row = s.stage2_lanes_per_row = 0;  // tuned entries describe the routed experts
  }
  // The fused decode path (expert_decode.h) when forced, or for Auto when decode_by_default(): the prologue,
  // then two launches instead of three, the same bits as the GEMV. It quantises x itself.
  const bool decode_wanted = stages == StagePath::Gemv && M <= kDecodeMaxTokens &&
                             (path == GemmPath::Decode || (path == GemmPath::Auto && decode_by_default()));
  // With MOE_STAGE2_COMBINE=1, Auto for a few tokens: the GEMV's stage 1, then the decode path's stage 2,
  // whose last block per row tile writes the combine (one launch fewer than the GEMV path, the same bits:
  // both stage 2s are the GEMV's dot products, and the combine adds the slots in the same order). Off by
  // default: on the H200 the decode stage 2 alone took longer than the GEMV's stage 2 and combine together
  // (fp8 M=1 30.6 vs 29.3 us, M=8 142.6 vs 134.9).
  const bool tail_wanted = stages == StagePath::Gemv && !decode_wanted && path == GemmPath::Auto &&
                           M <= kDecodeMaxTokens && prologue_fits_one_block(M, K) &&
                           stage2_combine_by_default();
  const DecodeArgs d =
      decode_wanted || tail_wanted ? decode_args(layer, ws, ra.router, act, x, g, s, out) : DecodeArgs{};
  const bool decode = decode_wanted && decode_supported(d, M);
  const bool tail = tail_wanted && decode_supported(d, M);
  if (decode) ra.xq = nullptr;
  AlignArgs aa{ws.topk_ids.as<int>(),
               M * K,
               E,
               ws.offsets.as<int>(),
               ws.sorted_pairs.as<int>(),
               ws.active.as<int>(),
               ws.num_active.as<int>(),
               ws.slot_begin.as<int>()};
  aa.block_counts = ws.group_block_counts.as<int>();
  // The grouped GEMM's tile list with the grouping (grouping_lists_tiles): the routed experts' only (the
  // shared expert's grouping is the route kernel's, and its stages run after the routed ones, which the one
  // tile workspace needs).
  if (stages == StagePath::Mma && grouping_lists_tiles()) {
    aa.tiles = ws.mma_tiles.as<int2>();
    aa.num_tiles = ws.mma_num_tiles.as<int>();
    aa.tile_ready = ws.mma_tile_ready.as<unsigned>();
    aa.tile_rows = grouped_gemm_pair_tile(M * g.g.pair_div, g.w.num_experts, g.w.hidden, g.w.inter);
    g.tiles_listed_rows = aa.tile_rows;
  }
  if (tail) {
    aa.zero_ints = d.counters;
    aa.n_zero_ints = d.num_counters;
  }
  // A few tokens on the bf16 swap-AB stages without a shared expert: stage 1 routes and groups them itself
  // (one launch fewer; the prologue's routing and grouping arithmetic, so the same bits).
  const bool self_routed = stages == StagePath::SwapAb && !shared && swap_ab_self_route() &&
                           swap_ab_routes_itself(g.w, M, K, layer.router_experts());
  // Counter boundaries (moe_counter_waits) after the one-block prologue, which zeroes them after its own
  // wait (every kernel between the previous call's combine and it waited for its predecessor, so that
  // combine is done with them); not beside a shared expert, nor for a consumer of y other than the combine,
  // nor while the timelines assume programmatic waits.
  const bool measuring = part_marker != nullptr || kernel_timeline_buffer() || swap_ab_timeline_buffer();
  const bool counter_waits = moe_counter_waits() && stages == StagePath::SwapAb && !self_routed && !shared &&
                             !leave_combine && !measuring && prologue_fits_one_block(M, K);
  unsigned* counters = counter_waits ? ws.chain_counters.as<unsigned>() : nullptr;
  if (counter_waits) {
    aa.zero_ints = ws.chain_counters.as<int>();
    aa.n_zero_ints = kChainCounters;
  }
  // The shared expert's first bytes into L2 while the prologue routes (not for the paths that return before
  // the stages below, nor while measuring: the stamps and timelines assume one stream).
  const int warm_kb = shared_expert_warm_kb_for(layer.hidden());
  const bool warm = shared && !decode && !tail && !measuring && M <= shared_warm_max_tokens.get() &&
                    warm_kb > 0 && ws.warm_stream.created();
  if (warm) warm_shared_expert(*shared, warm_kb, ws, stream);
  if (self_routed) {
    if (router_launch) (*router_launch)(nullptr, nullptr);  // no prologue
  } else if (prologue_fits_one_block(M, K)) {
    if (!router_launch || !(*router_launch)(&ra, &aa)) {
      launch_prologue_small(ra, aa, M, stream);
      MOE_CUDA_CHECK_LAUNCH();
    }
    mark_part("moe prologue", stream);
  } else {
    if (router_launch) (*router_launch)(nullptr, nullptr);
    launch_route(ra, M, stream);
    MOE_CUDA_CHECK_LAUNCH();
    launch_align(aa, stream);
    MOE_CUDA_CHECK_LAUNCH();
    mark_part("moe prologue", stream);
  }
  if (decode) {
    launch_decode(d, M, stream);
    mark_part("moe decode stages", stream);
    return;
  }
  if (tail) {
    launch_stage1(g, stream);
    mark_part("moe stage 1", stream);
    if (shared) {
      launch_stage1(s, stream);
      mark_part("moe shared stage 1", stream);
    }
    launch_decode_stage2(d, M, stream);
    mark_part("moe stage 2+combine", stream);
    return;
  }

  // Every prologue form quantises x into mma_x_codes when ra.x_codes is set (route_kernel by row or by group,
  // prologue_small_kernel by group: the same codes).
  const bool x_codes_ready = ra.x_codes != nullptr && !self_routed;
  // The grouped GEMM's pair outputs in bf16 when the combine kernel reads them (not a consumer that takes
  // fp32 y: the combine left to the next norm), which then stores 16-byte pieces of out.
  // From 1024 tokens: there halving y's bytes measured faster; below it, slower (expert_mma.h).
  const bool y_bf16 = stages == StagePath::Mma && !leave_combine && grouped_gemm_y_bf16() &&
                      M >= grouped_gemm_y_bf16_min_tokens() && layer.hidden() % 8 == 0 &&
                      reinterpret_cast<uintptr_t>(out) % 16 == 0;
  if (y_bf16) {
    g.y = nullptr;
    g.y_bf16 = ws.y.as<uint16_t>();
    if (shared) s.y = nullptr, s.y_bf16 = ws.shared_y.as<uint16_t>();
  }
  // The shared expert's stages read only x (and its quantised forms, from the prologue) and write only the
  // shared workspaces, so they may run beside the routed experts': its few blocks (one expert) then fill the
  // SMs the routed stages leave, instead of running after them (DeepSeek-V3 and Qwen3-Next). Not the grouped
  // GEMM: its tile list is one workspace for both. Nor while parts are stamped or kernels timed: the step
  // stamps assume one stream in order, and the timelines that launches of one kind never overlap.
  const bool beside = shared && stages != StagePath::Mma && ws.shared_stream.created() &&
                      shared_expert_beside_routed() && !measuring;
  // One wave for both launches of a few tokens (swap_ab_joint_wave): the shared expert's single group of
  // one pass beside the routed experts' groups.
  const bool joint = beside && stages == StagePath::SwapAb && M <= 8 && swap_ab_joint_wave(layer.hidden());
  if (beside)
    run_expert_stages(s, ws, true, x, M, stages, x_codes_ready, ws.shared_stream.fork(stream), nullptr,
                      nullptr, joint ? g.max_groups : 0);

  // Stage 2 does the combine itself (swap_ab_combine_max_tokens): routed experts alone (more than one: a
  // single local expert's passes spread over the grid), a few tokens, the combine's usual consumer.
  const bool stage2_combines = stages == StagePath::SwapAb && !shared && !leave_combine && !counter_waits &&
                               M <= swap_ab_combine_max_tokens() && g.max_groups > 1;
  const StageBlocks routed_blocks = run_expert_stages(
      g, ws, false, x, M, stages, x_codes_ready, stream, self_routed ? &ra : nullptr,
      self_routed ? &aa : nullptr, joint ? 1 : 0, counters, stage2_combines ? out : nullptr);

  if (beside) {
    ws.shared_stream.join(stream);
  } else if (shared) {
    run_expert_stages(s, ws, true, x, M, stages, x_codes_ready, stream);
  }
  if (warm) ws.warm_stream.join(stream);
  if (stage2_combines) return;

  if (leave_combine) {
    *leave_combine = {ws.y.as<float>(),
                      ws.topk_ids.as<int>(),
                      ws.topk_weights.as<float>(),
                      shared ? ws.shared_y.as<float>() : nullptr,
                      shared ? ws.shared_gate.as<float>() : nullptr,
                      K};
    return;
  }
  // Stage 2 wrote g.y and s.y, or their bf16 forms (y_bf16 above).
  CombineArgs ca{g.y,
                 ws.topk_ids.as<int>(),
                 ws.topk_weights.as<float>(),
                 shared ? s.y : nullptr,
                 shared ? ws.shared_gate.as<float>() : nullptr,
                 K,
                 layer.hidden(),
                 out};
  ca.y_bf16 = g.y_bf16;
  ca.y_shared_bf16 = shared ? s.y_bf16 : nullptr;
  ca.ids_before_wait = stages == StagePath::SwapAb && !counters;  // (CombineArgs::ids_before_wait says why)
  if (counters) {
    ca.chain_counters = counters;
    ca.chain_targets[0] = routed_blocks.stage1;
    ca.chain_targets[1] = routed_blocks.stage2;
  }
  launch_combine(ca, M, stream);
  MOE_CUDA_CHECK_LAUNCH();
  mark_part("moe combine", stream);
}

}  // namespace moe::cuda
