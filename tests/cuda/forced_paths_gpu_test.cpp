// Each way of running stages 1 and 2 forced at sizes the automatic choice never gives it (the fused decode
// kernels, expert_decode.h, must moreover equal the GEMV bit for bit; the one-launch fused kernel,
// expert_fused.h, is checked at every M it takes): the tensor-core
// grouped GEMM (expert_mma.h) at tiny M (one partial row tile per expert), the streaming tensor-core stages
// (expert_stream.h) at large M (several passes over the weights per expert, h quantised by its own launch),
// the CUDA-core GEMV at every M; with a shared expert and a K tail, against the CPU reference; and
// tensor-parallel shards whose fp8 grid starts mid-block (phases 32, 64, 96) against the GEMV path. Poisoned
// workspaces.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/codecs.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/expert_decode.h"
#include "cuda/kernels/expert_fused.h"
#include "cuda/kernels/expert_mma.h"
#include "cuda/kernels/expert_swap_ab.h"
#include "cuda/kernels/launchers.h"
#include "cuda/moe_layer.h"
#include "layout/backend.h"
#include "layout/tp_runner.h"
#include "moe/case_gen.h"
#include "moe/compare.h"
#include "moe/reference.h"

namespace moe {
namespace {

bool have_gpu() {
  return cuda::device_count() > 0;
}

struct GpuCase {
  MoeCase c;
  std::vector<uint16_t> x_bf16;
};

GpuCase make_case(WeightFormat f, int64_t M, int64_t E, int64_t H, int64_t I, int top_k,
                  int64_t shared_inter) {
  CaseSpec spec;
  spec.config.format = f;
  spec.config.act_quant = f == WeightFormat::Fp8Block ? ActQuant::Fp8_1x128 : ActQuant::None;
  spec.config.router.top_k = top_k;
  spec.M = M;
  spec.E = E;
  spec.H = H;
  spec.I = I;
  spec.shared_inter = shared_inter;
  spec.shared_gate = shared_inter > 0;
  spec.seed = 4321;
  spec.compute_expected = false;
  const GeneratedCase g = generate_case(spec);
  MemorySource src(g.tensors);
  GpuCase out{build_case(g.metadata, src), {}};
  out.x_bf16.resize(static_cast<size_t>(M * H));
  for (size_t i = 0; i < out.x_bf16.size(); ++i) out.x_bf16[i] = f32_to_bf16(out.c.x.as<float>()[i]);
  return out;
}

// The fp32 CPU reference's output for all of the case's tokens.
std::vector<float> reference_of(const GpuCase& g) {
  const int64_t M = g.c.x.shape[0], H = g.c.x.shape[1];
  std::vector<float> ref(static_cast<size_t>(M * H));
  reference_moe(g.c.config, g.c.weights, g.c.x.as<float>(), g.c.router_logits.as<float>(), M, ref.data());
  return ref;
}

// The case's weights as one rank of `par` holds them, on the GPU.
cuda::DeviceMoeLayer upload_rank(const GpuCase& g, const layout::Parallelism& par = {}) {
  const layout::MoeLayerPlan plan = layout::plan_moe_layer(layer_spec_of(g.c), par);
  const layout::RankWeights rank = layout::shard_moe_weights(g.c.weights, plan);
  return cuda::DeviceMoeLayer(g.c.config, rank);
}

std::vector<float> run(const cuda::DeviceMoeLayer& layer, cuda::MoeWorkspace& ws, const GpuCase& g, int M,
                       cuda::GemmPath path) {
  const int H = layer.hidden(), E = static_cast<int>(g.c.router_logits.shape[1]);
  cuda::DeviceBuffer x(static_cast<size_t>(M) * H * 2), logits(static_cast<size_t>(M) * E * 4),
      out(static_cast<size_t>(M) * H * 2);
  x.upload(g.x_bf16.data(), x.bytes());
  logits.upload(g.c.router_logits.data, logits.bytes());
  ws.poison(nullptr);
  out.poison(nullptr);
  cuda::fused_moe(layer, ws, x.as<uint16_t>(), logits.as<float>(), M, out.as<uint16_t>(), nullptr, path);
  MOE_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> bits(static_cast<size_t>(M) * H);
  MOE_CUDA_CHECK(cudaMemcpy(bits.data(), out.get(), bits.size() * 2, cudaMemcpyDeviceToHost));
  std::vector<float> f(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) f[i] = bf16_to_f32(bits[i]);
  return f;
}

int64_t non_finite(const std::vector<float>& v) {
  int64_t n = 0;
  for (float f : v) n += !std::isfinite(f);
  return n;
}

const char* path_name(cuda::GemmPath p) {
  return p == cuda::GemmPath::Mma      ? "mma"
         : p == cuda::GemmPath::Stream ? "stream"
         : p == cuda::GemmPath::Decode ? "decode"
         : p == cuda::GemmPath::Fused  ? "fused"
         : p == cuda::GemmPath::SwapAb ? "swap_ab"
                                       : "gemv";
}

class ForcedPathGpu : public ::testing::TestWithParam<std::tuple<WeightFormat, cuda::GemmPath>> {};

// Routed experts (E=64, top 6, H=1024 with a K tail: I=720 is not a multiple of 64 or 128) plus a shared
// expert. At M=300 an expert averages 28 pairs, so the streaming path makes several passes for some experts.
TEST_P(ForcedPathGpu, MatchesReference) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const auto [f, path] = GetParam();
  constexpr int kMaxM = 300;
  const GpuCase g = make_case(f, kMaxM, 64, 1024, 720, 6, 384);
  const cuda::DeviceMoeLayer layer = upload_rank(g);
  cuda::MoeWorkspace ws(layer, kMaxM);
  const std::vector<float> ref = reference_of(g);
  const double tol = default_tolerance(g.c.config);
  for (int M : {1, 3, 17, 64, 300}) {
    const std::vector<float> out = run(layer, ws, g, M, path);
    const Comparison cmp = compare(out.data(), ref.data(), static_cast<int64_t>(out.size()));
    std::printf("[%s %s] M=%-4d %s\n", path_name(path), std::string(format_name(f)).c_str(), M,
                verdict_line(cmp, tol).c_str());
    EXPECT_EQ(non_finite(out), 0) << "M=" << M;
    EXPECT_TRUE(cmp.passed(tol)) << "M=" << M << " " << verdict_line(cmp, tol);
  }
  const std::vector<float> a = run(layer, ws, g, kMaxM, path);
  const std::vector<float> b = run(layer, ws, g, kMaxM, path);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << "two runs differ";
}

// TP ranks whose intermediate slice starts 64 (TP 8, rank 1), 96 (TP 16, rank 1) and 32 (TP 16, rank 3) into
// the fp8 128 grid, and one aligned rank: the tensor-core paths equal the GEMV path.
TEST_P(ForcedPathGpu, TensorParallelShardMatchesGemv) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const auto [f, path] = GetParam();
  if (path == cuda::GemmPath::Gemv) GTEST_SKIP() << "the GEMV is the comparison";
  constexpr int kM = 200;
  const GpuCase g = make_case(f, kM, 8, 1024, 1536, 4, 0);
  for (const auto& [rank_id, tp] : {std::pair{1, 8}, std::pair{2, 8}, std::pair{1, 16}, std::pair{3, 16}}) {
    layout::Parallelism par;
    par.tp_rank = rank_id;
    par.tp_size = tp;
    const cuda::DeviceMoeLayer layer = upload_rank(g, par);
    cuda::MoeWorkspace ws(layer, kM);
    for (int M : {1, 7, kM}) {
      const std::vector<float> gemv = run(layer, ws, g, M, cuda::GemmPath::Gemv);
      const std::vector<float> got = run(layer, ws, g, M, path);
      const Comparison cmp = compare(got.data(), gemv.data(), static_cast<int64_t>(got.size()));
      const double tol = default_tolerance(g.c.config);
      std::printf("[%s %s] TP rank %d/%d (phase %d) M=%-3d vs GEMV: %s\n", path_name(path),
                  std::string(format_name(f)).c_str(), rank_id, tp, layer.experts().view.phase, M,
                  verdict_line(cmp, tol).c_str());
      EXPECT_EQ(non_finite(got), 0);
      EXPECT_TRUE(cmp.passed(tol)) << verdict_line(cmp, tol);
      if (path == cuda::GemmPath::Decode && M <= cuda::kDecodeMaxTokens) {  // the GEMV's bits
        EXPECT_EQ(0, std::memcmp(got.data(), gemv.data(), got.size() * 4)) << "M=" << M;
      }
    }
  }
}

// A few tokens on the bf16 swap-AB stages without a shared expert: stage 1 stages the call by token and
// routes and groups it itself (no prologue launch; fp8 runs the prologue both ways). Routing and grouping are
// the prologue's arithmetic and each MMA column its own dot product, so every output has the bits of the
// prologue path (SwapAbTokenBitsDoNotDependOnThePass compares the by-token staging at M=1 with the pair-order
// staging past 8 tokens), on one rank and on expert-parallel ranks (where some picks belong to another rank,
// and a rank may serve none of a token's picks; with one local expert the prologue runs); both match the
// reference.
TEST_P(ForcedPathGpu, SwapAbSelfRoutedEqualsPrologue) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const auto [f, path] = GetParam();
  if (path != cuda::GemmPath::SwapAb) GTEST_SKIP() << "swap-AB only";
  constexpr int kM = 8;
  const GpuCase g = make_case(f, kM, 64, 1024, 720, 6, 0);
  const double tol = default_tolerance(g.c.config);
  const std::vector<float> ref = reference_of(g);
  for (const int ep : {1, 4, 64}) {  // 64: one local expert
    layout::Parallelism par;
    par.ep_size = ep;
    par.ep_rank = ep - 1;
    const cuda::DeviceMoeLayer layer = upload_rank(g, par);
    cuda::MoeWorkspace ws(layer, kM);
    EXPECT_EQ(cuda::swap_ab_routes_itself(layer.experts().view, kM, 6, 64),
              f == WeightFormat::Bf16 && ep < 64);
    for (int M = 1; M <= kM; ++M) {
      cuda::set_swap_ab_self_route(false);
      const std::vector<float> prologue = run(layer, ws, g, M, cuda::GemmPath::SwapAb);
      cuda::set_swap_ab_self_route(true);
      const std::vector<float> self = run(layer, ws, g, M, cuda::GemmPath::SwapAb);
      const bool same = std::memcmp(self.data(), prologue.data(), self.size() * 4) == 0;
      std::printf("[swap_ab %s] EP %d M=%d self-routed vs prologue: %s\n",
                  std::string(format_name(f)).c_str(), ep, M, same ? "identical bits" : "DIFFERENT");
      EXPECT_EQ(non_finite(self), 0) << "EP " << ep << " M=" << M;
      EXPECT_TRUE(same) << "EP " << ep << " M=" << M;
      if (ep == 1) {
        const Comparison cmp = compare(self.data(), ref.data(), static_cast<int64_t>(self.size()));
        EXPECT_TRUE(cmp.passed(tol)) << "M=" << M << " " << verdict_line(cmp, tol);
      }
    }
    const std::vector<float> a = run(layer, ws, g, kM, cuda::GemmPath::SwapAb);
    const std::vector<float> b = run(layer, ws, g, kM, cuda::GemmPath::SwapAb);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << "EP " << ep << ": two runs differ";
  }
}

// The fused decode kernels compute each dot product and the combine as the GEMV path does, so every token's
// output has the same bits on both paths, at every M the decode path takes: batch invariance across the
// switch between them. With a shared expert and a K tail.
TEST_P(ForcedPathGpu, DecodeBitsEqualGemv) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const auto [f, path] = GetParam();
  if (path != cuda::GemmPath::Decode) GTEST_SKIP() << "decode only";
  constexpr int kM = 8;
  const GpuCase g = make_case(f, kM, 64, 1024, 720, 6, 384);
  const cuda::DeviceMoeLayer layer = upload_rank(g);
  cuda::MoeWorkspace ws(layer, kM);
  for (int M = 1; M <= kM; ++M) {
    const std::vector<float> gemv = run(layer, ws, g, M, cuda::GemmPath::Gemv);
    const std::vector<float> got = run(layer, ws, g, M, cuda::GemmPath::Decode);
    const bool same = std::memcmp(got.data(), gemv.data(), got.size() * 4) == 0;
    std::printf("[decode %s] M=%d vs GEMV: %s\n", std::string(format_name(f)).c_str(), M,
                same ? "identical bits" : "DIFFERENT");
    EXPECT_EQ(non_finite(got), 0) << "M=" << M;
    EXPECT_TRUE(same) << "M=" << M;
  }
}

// The one-launch fused kernel (expert_fused.h) at every M it takes, on routed experts only (it does not take
// a shared expert) with a K tail (I=720 padded to 768) and several passes of the ring per block: against the
// reference, token 0's bits the same at every M (batch invariance), two runs the same bits, and the grid
// barrier left ready for the next call (many calls in a row, on poisoned data workspaces).
TEST_P(ForcedPathGpu, FusedMatchesReferenceAndIsBatchInvariant) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const auto [f, path] = GetParam();
  if (path != cuda::GemmPath::Fused) GTEST_SKIP() << "fused only";
  constexpr int kM = cuda::kFusedMaxTokens;
  const GpuCase g = make_case(f, kM, 64, 1024, 720, 6, 0);
  const cuda::DeviceMoeLayer layer = upload_rank(g);
  cuda::MoeWorkspace ws(layer, kM);
  ASSERT_TRUE(cuda::fused_path_applies(layer, 1) && cuda::fused_path_applies(layer, kM))
      << "the fused kernel should take this layer";
  const int H = layer.hidden();
  const std::vector<float> ref = reference_of(g);
  const double tol = default_tolerance(g.c.config);
  const std::vector<float> alone = run(layer, ws, g, 1, path);
  for (int M = 1; M <= kM; ++M) {
    const std::vector<float> out = run(layer, ws, g, M, path);
    const Comparison cmp = compare(out.data(), ref.data(), static_cast<int64_t>(out.size()));
    const bool same = std::memcmp(out.data(), alone.data(), static_cast<size_t>(H) * 4) == 0;
    std::printf("[fused %s] M=%d %s; token 0 vs alone: %s\n", std::string(format_name(f)).c_str(), M,
                verdict_line(cmp, tol).c_str(), same ? "identical bits" : "DIFFERENT");
    EXPECT_EQ(non_finite(out), 0) << "M=" << M;
    EXPECT_TRUE(cmp.passed(tol)) << "M=" << M << " " << verdict_line(cmp, tol);
    EXPECT_TRUE(same) << "M=" << M;
  }
  const std::vector<float> a = run(layer, ws, g, kM, path);
  const std::vector<float> b = run(layer, ws, g, kM, path);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << "two runs differ";
}

// The swap-AB stages size their token passes by M (8, 16 or 32 tokens) and make several passes for a busy
// expert; none of that may change a token's bits: token 0 alone equals token 0 inside M = 17, 64 and 300.
TEST_P(ForcedPathGpu, SwapAbTokenBitsDoNotDependOnThePass) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const auto [f, path] = GetParam();
  if (path != cuda::GemmPath::SwapAb) GTEST_SKIP() << "swap-AB only";
  constexpr int kMaxM = 300;
  const GpuCase g = make_case(f, kMaxM, 64, 1024, 720, 6, 384);
  const cuda::DeviceMoeLayer layer = upload_rank(g);
  cuda::MoeWorkspace ws(layer, kMaxM);
  const int H = layer.hidden();
  const std::vector<float> alone = run(layer, ws, g, 1, path);
  for (int M : {17, 64, kMaxM}) {
    const std::vector<float> batch = run(layer, ws, g, M, path);
    EXPECT_EQ(0, std::memcmp(alone.data(), batch.data(), static_cast<size_t>(H) * 4)) << "token 0 at M=" << M;
  }
}

// The grouped GEMM's tile kernels: wgmma with its operands swapped where experts average few pairs (the
// default: pair tiles of 16 at M=1 and 5, 32 at M=40, 64 at M=80), wgmma with 128-pair tiles, and mma.sync:
// each against the reference from one partial tile per expert (M=1) to two tiles per expert (M=400: 200
// pairs each) with a shared expert and a K tail, each against the GEMV on a TP rank whose fp8 grid starts 64
// into a block, and each twice with the same bits.
TEST_P(ForcedPathGpu, GroupedGemmOnWgmmaAndMmaSync) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const auto [f, path] = GetParam();
  if (path != cuda::GemmPath::Mma) GTEST_SKIP() << "grouped GEMM only";
  constexpr int kM = 400;
  const GpuCase g = make_case(f, kM, 8, 1024, 720, 4, 384);
  const GpuCase g_tp = make_case(f, kM, 8, 1024, 1536, 4, 0);
  const cuda::DeviceMoeLayer layer = upload_rank(g);
  layout::Parallelism par;
  par.tp_rank = 1;
  par.tp_size = 8;
  const cuda::DeviceMoeLayer layer_tp = upload_rank(g_tp, par);
  cuda::MoeWorkspace ws(layer, kM), ws_tp(layer_tp, kM);
  const std::vector<float> ref = reference_of(g);
  const double tol = default_tolerance(g.c.config);
  // The swapped wgmma kernel (few pairs per expert); the wgmma kernel with its fp8 A rows by TMA and by
  // cp.async, with h quantised in its epilogue and by fp8_rows (only where the copies and quantisation run
  // differs: the same bits); the mma.sync kernel; each kind of kernel also with its pair outputs in bf16 for
  // the combine (grouped_gemm_y_bf16: other bits, near the fp32 y's); the wgmma kernel with its consumers'
  // item loads ahead (grouped_gemm_ahead), with h by sorted position for a one-box A in stage 2
  // (grouped_gemm_h_by_position), with one column scale per kind of column in its promotion
  // (grouped_gemm_uniform_scales), and with all three (the defaults), and with its outputs through the warps'
  // staged rows (grouped_gemm_staged, which needs the loads ahead), and with fp8 stage 2's two partials
  // (grouped_gemm_two_parts), and fp8 stage 1's gate/up tile in one 5-D copy (grouped_gemm_gate_up_box, in
  // the swapped kernel and the default wgmma kernel), and both wgmma kernels launched overlapped with their
  // neighbours (grouped_gemm_overlapped, and with it the swapped stage 2's first weights requested before its
  // wait: grouped_gemm_early_weights), and the swapped kernel's stage 1 quantising h in its epilogue
  // (grouped_gemm_swap_quantises_h; on the TP rank, whose grid starts 64 into a block, its first group is one
  // column block), and with it stage 1 launched during the grouping to prefetch (grouped_gemm_prefetch_steps,
  // from M=8 here: 4 pairs an expert), and the swapped stage 2 starting per tile (grouped_gemm_tile_ready:
  // bf16, and fp8 with h quantised by stage 1), its blocks taking their runs from a counter or each a fixed
  // share (grouped_gemm_take_runs), in batches or one run a take (grouped_gemm_take_steps), and with the
  // first weights requested early, and stage 1's first weights requested as soon as its first tile entry is
  // read (grouped_gemm_first_weights; the gate/up tile per box and in one box), and with stage 2 letting the
  // combine launch as its blocks start (grouped_gemm_stage2_trigger), and stage 1 launched overlapped with
  // the grouping without the prefetch (grouped_gemm_stage1_overlapped): the same bits, y in bf16 the same
  // bits as its kind's first y in bf16. Each row sets every switch, so the rows without one run with it off.
  struct Kernel {
    const char* name;
    bool wgmma, swap, tma_a, quantise_h, y_bf16;
    bool ahead = false, h_by_position = false, uniform_scales = false, staged = false, two_parts = false;
    bool gate_up_box = false, overlapped = false, early_weights = false, swap_quantise_h = false;
    bool prefetch = false, tile_ready = false, take_runs = true, one_run_a_take = false;
    bool first_weights = false, stage2_trigger = false, stage1_overlapped = false;
  };
  // A row with session 48's launch switches: first weights early, stage 2's trigger, stage 1 overlapped.
  const auto with_launch_switches = [](Kernel k, const char* name, bool first_weights, bool stage2_trigger,
                                       bool stage1_overlapped) {
    k.name = name;
    k.first_weights = first_weights;
    k.stage2_trigger = stage2_trigger;
    k.stage1_overlapped = stage1_overlapped;
    return k;
  };
  // Each kind of kernel's (wgmma swapped, wgmma, mma.sync) first fp32-y output at kM: its other forms match
  // it bit for bit, and its form with y in bf16 comes near it without matching (the rounding did happen).
  std::map<std::pair<bool, bool>, std::vector<float>> fp32_y_out, bf16_y_out;
  const bool tma_a_default = cuda::grouped_gemm_tma_a(),
             quantise_h_default = cuda::grouped_gemm_quantises_h(),
             y_bf16_default = cuda::grouped_gemm_y_bf16(), ahead_default = cuda::grouped_gemm_ahead(),
             h_by_position_default = cuda::grouped_gemm_h_by_position(),
             uniform_scales_default = cuda::grouped_gemm_uniform_scales(),
             staged_h_default = cuda::grouped_gemm_staged(1), staged_y_default = cuda::grouped_gemm_staged(2);
  const bool swap_gate_up_box_default = cuda::grouped_gemm_gate_up_box(true, 8, 8),
             pairs_gate_up_box_default = cuda::grouped_gemm_gate_up_box(false, 8, 8),
             overlapped_default = cuda::grouped_gemm_overlapped(),
             early_weights_default = cuda::grouped_gemm_early_weights(),
             first_weights_default = cuda::grouped_gemm_first_weights(),
             stage2_trigger_default = cuda::grouped_gemm_stage2_trigger(),
             stage1_overlapped_default = cuda::grouped_gemm_stage1_overlapped(),
             swap_quantise_h_default = cuda::grouped_gemm_swap_quantises_h();
  const int tile_ready_default = cuda::grouped_gemm_tile_ready();
  const int take_runs_default = cuda::grouped_gemm_take_runs();
  const int take_steps_default = cuda::grouped_gemm_take_steps();
  const int take_at_tail_default = cuda::grouped_gemm_take_at_tail();
  const int prefetch_steps_default = cuda::grouped_gemm_prefetch_steps();
  const int y_bf16_min_default = cuda::grouped_gemm_y_bf16_min_tokens(),
            two_parts_default = cuda::grouped_gemm_two_parts();
  cuda::set_grouped_gemm_y_bf16_min_tokens(0);  // the y-in-bf16 rows at every M below
  for (const Kernel& kernel :
       {Kernel{"wgmma swapped", true, true, true, true, false},
        Kernel{"wgmma swapped, gate/up in one box", true, true, true, true, false, false, false, false, false,
               false, true},
        Kernel{"wgmma swapped, gate/up in one box, overlapped", true, true, true, true, false, false, false,
               false, false, false, true, true},
        Kernel{"wgmma swapped, gate/up in one box, overlapped, early weights", true, true, true, true, false,
               false, false, false, false, false, true, true, true},
        Kernel{"wgmma swapped, gate/up in one box, h quantised", true, true, true, true, false, false, false,
               false, false, false, true, false, false, true},
        Kernel{"wgmma swapped, gate/up in one box, h quantised, overlapped, early weights", true, true, true,
               true, false, false, false, false, false, false, true, true, true, true},
        Kernel{"wgmma swapped, gate/up in one box, h quantised, prefetch", true, true, true, true, false,
               false, false, false, false, false, true, false, false, true, true},
        Kernel{"wgmma swapped, tile ready", true, true, true, true, false, false, false, false, false, false,
               false, false, false, false, false, true},
        Kernel{"wgmma swapped, gate/up in one box, h quantised, prefetch, tile ready", true, true, true, true,
               false, false, false, false, false, false, true, false, false, true, true, true},
        Kernel{"wgmma swapped, gate/up in one box, h quantised, prefetch, tile ready, fixed shares", true,
               true, true, true, false, false, false, false, false, false, true, false, false, true, true,
               true, false},
        Kernel{"wgmma swapped, gate/up in one box, h quantised, prefetch, tile ready, one run a take", true,
               true, true, true, false, false, false, false, false, false, true, false, false, true, true,
               true, true, true},
        with_launch_switches(Kernel{"", true, true, true, true, false}, "wgmma swapped, first weights early",
                             true, false, false),
        with_launch_switches(Kernel{"", true, true, true, true, false}, "wgmma swapped, stage 1 overlapped",
                             false, false, true),
        with_launch_switches(
            Kernel{"", true, true, true, true, false, false, false, false, false, false, true, false, false,
                   true, true, true},
            "wgmma swapped, gate/up in one box, h quantised, prefetch, tile ready, first weights, "
            "stage 2 trigger, stage 1 overlapped",
            true, true, true),
        Kernel{"wgmma swapped, gate/up in one box, h quantised, overlapped, early weights, tile ready", true,
               true, true, true, false, false, false, false, false, false, true, true, true, true, false,
               true},
        Kernel{"wgmma, A by TMA", true, false, true, true, false},
        Kernel{"wgmma, A by cp.async", true, false, false, true, false},
        Kernel{"wgmma, h by fp8_rows", true, false, true, false, false},
        Kernel{"wgmma, ahead", true, false, false, false, false, true},
        Kernel{"wgmma, ahead, h quantised", true, false, false, true, false, true},
        Kernel{"wgmma, h by position", true, false, false, false, false, false, true},
        Kernel{"wgmma, ahead, h by position", true, false, false, false, false, true, true},
        Kernel{"wgmma, uniform scales", true, false, false, false, false, false, false, true},
        Kernel{"wgmma, ahead, h by position, uniform scales", true, false, false, false, false, true, true,
               true},
        Kernel{"wgmma, ahead, staged", true, false, false, false, false, true, false, false, true},
        Kernel{"wgmma, ahead, h quantised, staged", true, false, false, true, false, true, false, false,
               true},
        Kernel{"wgmma, ahead, h by position, uniform scales, staged", true, false, false, false, false, true,
               true, true, true},
        Kernel{"wgmma, ahead, h by position, uniform scales, staged, two parts", true, false, false, false,
               false, true, true, true, true, true},
        Kernel{"wgmma, ahead, h by position, uniform scales, staged, two parts, gate/up in one box", true,
               false, false, false, false, true, true, true, true, true, true},
        Kernel{"wgmma, ahead, h by position, uniform scales, staged, two parts, overlapped", true, false,
               false, false, false, true, true, true, true, true, false, true},
        Kernel{"mma.sync", false, false, false, false, false},
        Kernel{"wgmma swapped, y in bf16", true, true, false, false, true},
        Kernel{"wgmma, y in bf16", true, false, false, false, true},
        Kernel{"wgmma, ahead, staged, y in bf16", true, false, false, false, true, true, false, false, true},
        Kernel{"wgmma, ahead, h by position, uniform scales, staged, y in bf16", true, false, false, false,
               true, true, true, true, true},
        Kernel{"wgmma, ahead, h by position, uniform scales, staged, two parts, y in bf16", true, false,
               false, false, true, true, true, true, true, true},
        Kernel{"mma.sync, y in bf16", false, false, false, false, true}}) {
    cuda::set_grouped_gemm_wgmma(kernel.wgmma);
    cuda::set_grouped_gemm_swap(kernel.swap);
    cuda::set_grouped_gemm_tma_a(kernel.tma_a);
    cuda::set_grouped_gemm_quantises_h(kernel.quantise_h);
    cuda::set_grouped_gemm_y_bf16(kernel.y_bf16);
    cuda::set_grouped_gemm_ahead(kernel.ahead);
    cuda::set_grouped_gemm_h_by_position(kernel.h_by_position);
    cuda::set_grouped_gemm_uniform_scales(kernel.uniform_scales);
    cuda::set_grouped_gemm_staged(1, kernel.staged);
    cuda::set_grouped_gemm_staged(2, kernel.staged);
    cuda::set_grouped_gemm_two_parts(kernel.two_parts ? 3 : 0);
    cuda::set_grouped_gemm_gate_up_box(true, kernel.gate_up_box);
    cuda::set_grouped_gemm_gate_up_box(false, kernel.gate_up_box);
    cuda::set_grouped_gemm_overlapped(kernel.overlapped);
    cuda::set_grouped_gemm_early_weights(kernel.early_weights);
    cuda::set_grouped_gemm_first_weights(kernel.first_weights);
    cuda::set_grouped_gemm_stage2_trigger(kernel.stage2_trigger);
    cuda::set_grouped_gemm_stage1_overlapped(kernel.stage1_overlapped);
    cuda::set_grouped_gemm_swap_quantises_h(kernel.swap_quantise_h);
    cuda::set_grouped_gemm_prefetch_steps(kernel.prefetch ? 8 : 0);
    cuda::set_grouped_gemm_tile_ready(kernel.tile_ready ? 1 : 0);
    cuda::set_grouped_gemm_take_runs(kernel.take_runs ? 1 : 0);
    cuda::set_grouped_gemm_take_steps(kernel.one_run_a_take ? 1 : take_steps_default);
    cuda::set_grouped_gemm_take_at_tail(0);  // (its own test below)
    const char* name = kernel.name;
    for (int M : {1, 5, 40, 80, 130, kM}) {
      const std::vector<float> out = run(layer, ws, g, M, path);
      const Comparison cmp = compare(out.data(), ref.data(), static_cast<int64_t>(out.size()));
      std::printf("[%s %s] M=%-4d %s\n", name, std::string(format_name(f)).c_str(), M,
                  verdict_line(cmp, tol).c_str());
      EXPECT_EQ(non_finite(out), 0) << name << " M=" << M;
      EXPECT_TRUE(cmp.passed(tol)) << name << " M=" << M << " " << verdict_line(cmp, tol);
      const std::vector<float> tp_gemv = run(layer_tp, ws_tp, g_tp, M, cuda::GemmPath::Gemv);
      const std::vector<float> tp = run(layer_tp, ws_tp, g_tp, M, path);
      const Comparison tp_cmp = compare(tp.data(), tp_gemv.data(), static_cast<int64_t>(tp.size()));
      std::printf("[%s %s] TP rank 1/8 (phase %d) M=%-4d vs GEMV: %s\n", name,
                  std::string(format_name(f)).c_str(), layer_tp.experts().view.phase, M,
                  verdict_line(tp_cmp, tol).c_str());
      EXPECT_EQ(non_finite(tp), 0) << name << " TP M=" << M;
      EXPECT_TRUE(tp_cmp.passed(tol)) << name << " TP M=" << M << " " << verdict_line(tp_cmp, tol);
    }
    const std::vector<float> a = run(layer, ws, g, kM, path);
    const std::vector<float> b = run(layer, ws, g, kM, path);
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << name << ": two runs differ";
    std::vector<float>& first = fp32_y_out[{kernel.wgmma, kernel.swap}];
    if (!kernel.y_bf16 && first.empty()) {
      first = a;
    } else if (!kernel.y_bf16) {
      EXPECT_EQ(0, std::memcmp(a.data(), first.data(), a.size() * 4)) << name << ": not the first's bits";
    } else {
      ASSERT_FALSE(first.empty()) << name << ": its kind has no fp32-y run to compare with";
      const Comparison near = compare(a.data(), first.data(), static_cast<int64_t>(a.size()));
      std::printf("[%s %s] M=%d vs fp32 y: %s\n", name, std::string(format_name(f)).c_str(), kM,
                  verdict_line(near, 5e-3).c_str());
      EXPECT_TRUE(near.passed(5e-3)) << name << " vs fp32 y: " << verdict_line(near, 5e-3);
      EXPECT_NE(0, std::memcmp(a.data(), first.data(), a.size() * 4)) << name << ": y was not rounded";
      std::vector<float>& first_bf16 = bf16_y_out[{kernel.wgmma, kernel.swap}];
      if (first_bf16.empty())
        first_bf16 = a;
      else
        EXPECT_EQ(0, std::memcmp(a.data(), first_bf16.data(), a.size() * 4))
            << name << ": not the bits of its kind's first y in bf16";
    }
  }
  cuda::set_grouped_gemm_wgmma(true);
  cuda::set_grouped_gemm_swap(true);
  cuda::set_grouped_gemm_tma_a(tma_a_default);
  cuda::set_grouped_gemm_gate_up_box(true, swap_gate_up_box_default);
  cuda::set_grouped_gemm_gate_up_box(false, pairs_gate_up_box_default);
  cuda::set_grouped_gemm_overlapped(overlapped_default);
  cuda::set_grouped_gemm_early_weights(early_weights_default);
  cuda::set_grouped_gemm_first_weights(first_weights_default);
  cuda::set_grouped_gemm_stage2_trigger(stage2_trigger_default);
  cuda::set_grouped_gemm_stage1_overlapped(stage1_overlapped_default);
  cuda::set_grouped_gemm_swap_quantises_h(swap_quantise_h_default);
  cuda::set_grouped_gemm_prefetch_steps(prefetch_steps_default);
  cuda::set_grouped_gemm_tile_ready(tile_ready_default);
  cuda::set_grouped_gemm_take_runs(take_runs_default);
  cuda::set_grouped_gemm_take_steps(take_steps_default);
  cuda::set_grouped_gemm_take_at_tail(take_at_tail_default);
  // The one-box rows copied per box if the driver refused their map (warned, and the bits then match
  // trivially): that must not pass unnoticed.
  EXPECT_FALSE(cuda::grouped_gemm_gate_up_box_refused()) << "the driver refused the 5-D gate/up tensor map";
  cuda::set_grouped_gemm_quantises_h(quantise_h_default);
  cuda::set_grouped_gemm_y_bf16(y_bf16_default);
  cuda::set_grouped_gemm_y_bf16_min_tokens(y_bf16_min_default);
  cuda::set_grouped_gemm_ahead(ahead_default);
  cuda::set_grouped_gemm_h_by_position(h_by_position_default);
  cuda::set_grouped_gemm_uniform_scales(uniform_scales_default);
  cuda::set_grouped_gemm_staged(1, staged_h_default);
  cuda::set_grouped_gemm_staged(2, staged_y_default);
  cuda::set_grouped_gemm_two_parts(two_parts_default);
  // The default kernels with the tile list from the GEMM's own launch instead of the grouping's
  // (grouping_lists_tiles): the same list, so the same bits, on one GPU and on a TP rank; also with the
  // swapped stage 2 per tile, whose counts each list's writer zeroes.
  const bool lists_tiles_default = cuda::grouping_lists_tiles();
  for (const bool tile_ready : {false, true}) {
    cuda::set_grouped_gemm_tile_ready(tile_ready ? 1 : 0);
    for (int M : {1, 5, 40, 80, 130, kM}) {
      cuda::set_grouping_lists_tiles(true);
      const std::vector<float> listed = run(layer, ws, g, M, path),
                               listed_tp = run(layer_tp, ws_tp, g_tp, M, path);
      cuda::set_grouping_lists_tiles(false);
      const std::vector<float> own = run(layer, ws, g, M, path), own_tp = run(layer_tp, ws_tp, g_tp, M, path);
      std::printf("[tile list by the grouping%s %s] M=%-4d bits %s, TP rank %s\n",
                  tile_ready ? ", tile ready" : "", std::string(format_name(f)).c_str(), M,
                  listed == own ? "equal" : "DIFFER", listed_tp == own_tp ? "equal" : "DIFFER");
      EXPECT_EQ(0, std::memcmp(listed.data(), own.data(), own.size() * 4))
          << "tile list by the grouping, M=" << M << (tile_ready ? ", tile ready" : "");
      EXPECT_EQ(0, std::memcmp(listed_tp.data(), own_tp.data(), own_tp.size() * 4))
          << "tile list by the grouping, TP, M=" << M << (tile_ready ? ", tile ready" : "");
      EXPECT_EQ(non_finite(listed), 0) << "tile list by the grouping, M=" << M;
      EXPECT_EQ(non_finite(own), 0) << "own tile list, M=" << M;
    }
  }
  cuda::set_grouped_gemm_tile_ready(tile_ready_default);
  cuda::set_grouping_lists_tiles(lists_tiles_default);
}

// The swapped stage 2 taking its runs where stage 1's fixed shares leave a tail (stage1_tail_takes_runs),
// decided on the GPU from the call's tile count: Qwen3-235B-A22B TP8's experts and intermediate size (128,
// top 8, I = 192: two stage-1 runs and two K steps of stage 2 a tile) at 384 tokens, ~133 tiles of 32 pairs,
// so stage 1's 266-odd runs leave a few of its blocks a run more. The runs-taken count after the tiles' says
// whether the blocks took their runs: they must have exactly where the host's rule says so (from an idle
// share of 1 %, so any remainder but a full wave's), never with the rule off, and the bits must not change.
TEST(TakeAtTailGpu, Stage2TakesItsRunsWhereTheRuleSays) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  constexpr int kM = 384, kE = 128, kH = 1024, kI = 192;
  const int percent_default = cuda::grouped_gemm_take_at_tail();
  for (const WeightFormat f : {WeightFormat::Fp8Block, WeightFormat::Bf16}) {
    const bool fp8 = f == WeightFormat::Fp8Block;
    const GpuCase g = make_case(f, kM, kE, kH, kI, 8, 0);
    const cuda::DeviceMoeLayer layer = upload_rank(g);
    cuda::MoeWorkspace ws(layer, kM);
    const std::vector<float> ref = reference_of(g);
    const double tol = default_tolerance(g.c.config);
    // Stage 1's runs a tile (fp8: its 128-wide groups of h; bf16: its 64-output column blocks) and stage 2's
    // (128-row column blocks of y), their grids (a block per SM, or one per run), the runs a take hands out.
    const int runs1_a_tile = fp8 ? (kI + 127) / 128 : (kI + 63) / 64, runs2_a_tile = kH / 128;
    const int blocks1 = std::min(ws.mma_max_tiles * ((kI + 63) / 64), cuda::sm_count()),
              blocks2 = std::min(ws.mma_max_tiles * runs2_a_tile, cuda::sm_count());
    const int per_take =
        cuda::runs_per_take(fp8 ? (kI + 127) / 128 : (kI + 63) / 64, cuda::grouped_gemm_take_steps());
    std::vector<float> first;
    for (const int percent : {0, 1, 0, 1}) {
      cuda::set_grouped_gemm_take_at_tail(percent);
      const std::vector<float> out = run(layer, ws, g, kM, cuda::GemmPath::Mma);
      int tiles = 0;
      MOE_CUDA_CHECK(cudaMemcpy(&tiles, ws.mma_num_tiles.get(), 4, cudaMemcpyDeviceToHost));
      ASSERT_GT(tiles, 0);
      ASSERT_LE(tiles, ws.mma_max_tiles);
      unsigned taken = 0;
      MOE_CUDA_CHECK(
          cudaMemcpy(&taken, ws.mma_tile_ready.as<unsigned>() + tiles + 1, 4, cudaMemcpyDeviceToHost));
      const bool expected = cuda::stage1_tail_takes_runs(tiles * runs1_a_tile, blocks1, tiles * runs2_a_tile,
                                                         blocks2, per_take, percent);
      const Comparison cmp = compare(out.data(), ref.data(), static_cast<int64_t>(out.size()));
      std::printf(
          "[take at tail %d %%, %s] M=%d tiles %d, stage 1 %d runs on %d blocks: %s (batches taken "
          "past the first wave: %u) %s\n",
          percent, std::string(format_name(f)).c_str(), kM, tiles, tiles * runs1_a_tile, blocks1,
          expected ? "takes" : "fixed shares", taken, verdict_line(cmp, tol).c_str());
      EXPECT_EQ(taken > 0, expected) << format_name(f) << " " << percent << " %, " << tiles << " tiles";
      if (percent == 0) {
        EXPECT_EQ(taken, 0u) << "the rule off";
      }
      EXPECT_EQ(non_finite(out), 0);
      EXPECT_TRUE(cmp.passed(tol)) << verdict_line(cmp, tol);
      if (first.empty()) first = out;
      EXPECT_EQ(0, std::memcmp(first.data(), out.data(), out.size() * 4))
          << "bits changed, " << percent << " %";
    }
  }
  cuda::set_grouped_gemm_take_at_tail(percent_default);
}

// The one-block prologue past its default 8 tokens (MOE_SMALL_PROLOGUE_TOKENS, a measuring knob): routing,
// x's codes and the grouping (with the grouped GEMM's tile list) in one launch instead of the route kernel
// and align. It must give the same bits as the two launches on both stage paths, with and without a shared
// expert (its gate and grouping), against the CPU reference, workspaces poisoned.
TEST(SmallPrologueGpu, OneBlockPastEightTokensKeepsTheBits) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const int tokens_default = cuda::small_prologue_max_tokens();
  for (const WeightFormat f : {WeightFormat::Fp8Block, WeightFormat::Bf16})
    for (const int64_t shared_inter : {int64_t{0}, int64_t{256}})
      for (const int M : {9, 16, 32}) {
        const GpuCase g = make_case(f, M, 128, 1024, 256, 8, shared_inter);
        const cuda::DeviceMoeLayer layer = upload_rank(g);
        cuda::MoeWorkspace ws(layer, M);
        const std::vector<float> ref = reference_of(g);
        const double tol = default_tolerance(g.c.config);
        for (const cuda::GemmPath path : {cuda::GemmPath::Mma, cuda::GemmPath::SwapAb}) {
          cuda::set_small_prologue_max_tokens(8);
          ASSERT_FALSE(cuda::prologue_fits_one_block(M, 8));
          const std::vector<float> two = run(layer, ws, g, M, path);
          cuda::set_small_prologue_max_tokens(32);
          ASSERT_TRUE(cuda::prologue_fits_one_block(M, 8));
          const std::vector<float> one = run(layer, ws, g, M, path);
          const Comparison cmp = compare(one.data(), ref.data(), static_cast<int64_t>(one.size()));
          std::printf("[small prologue, %s, shared %lld, %s] M=%d one block: %s\n",
                      std::string(format_name(f)).c_str(), static_cast<long long>(shared_inter),
                      path_name(path), M, verdict_line(cmp, tol).c_str());
          EXPECT_EQ(non_finite(one), 0);
          EXPECT_TRUE(cmp.passed(tol)) << verdict_line(cmp, tol);
          EXPECT_EQ(0, std::memcmp(two.data(), one.data(), one.size() * 4))
              << format_name(f) << " " << path_name(path) << " M=" << M << ": the bits changed";
        }
      }
  cuda::set_small_prologue_max_tokens(tokens_default);
}

INSTANTIATE_TEST_SUITE_P(FormatsAndPaths, ForcedPathGpu,
                         ::testing::Combine(::testing::Values(WeightFormat::Bf16, WeightFormat::Fp8Block),
                                            ::testing::Values(cuda::GemmPath::Mma, cuda::GemmPath::Stream,
                                                              cuda::GemmPath::Decode, cuda::GemmPath::Fused,
                                                              cuda::GemmPath::SwapAb, cuda::GemmPath::Gemv)),
                         [](const auto& p) {
                           return std::string(format_name(std::get<0>(p.param))) + "_" +
                                  path_name(std::get<1>(p.param));
                         });

}  // namespace
}  // namespace moe
