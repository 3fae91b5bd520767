// The CUDA fused MoE against the fp32 CPU reference: named model shapes x {bf16, fp8_block} x an M sweep,
// random data, every workspace and output poisoned with NaN before each call; bitwise determinism over ten
// runs; batch invariance of the decode path; tensor-parallel shards (FP8 scale blocks straddling ranks) on
// the GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "core/codecs.h"
#include "core/env_flag.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/expert_swap_ab.h"
#include "cuda/kernels/launchers.h"
#include "cuda/l2_warm.h"
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

struct NamedShape {
  const char* name;
  int64_t E, H, I, top_k, shared_inter;
  bool shared_gate, deepseek_routing;
};

const NamedShape kShapes[] = {
    {"qwen3-30b-a3b", 128, 2048, 768, 8, 0, false, false},
    {"qwen3-next-80b-a3b", 512, 2048, 512, 10, 512, true, false},
    {"deepseek-v3-tp8-shard", 256, 7168, 256, 8, 256, false, true},
    {"qwen3-235b-a22b-tp8-shard", 128, 4096, 192, 8, 0, false, false},
};

const int kMs[] = {1, 2, 3, 4, 5, 8, 16, 31, 64, 128, 256, 1024, 4096};
constexpr int kMaxM = 4096;

CaseSpec spec_for(const NamedShape& s, WeightFormat f, int64_t M) {
  CaseSpec c;
  c.config.format = f;
  c.config.act_quant = f == WeightFormat::Fp8Block ? ActQuant::Fp8_1x128 : ActQuant::None;
  c.config.router.top_k = static_cast<int>(s.top_k);
  if (s.deepseek_routing) {
    c.config.router.kind = RouterKind::SigmoidGrouped;
    c.config.router.n_group = 8;
    c.config.router.topk_group = 4;
    c.config.router.routed_scaling_factor = 2.5f;
  }
  c.M = M;
  c.E = s.E;
  c.H = s.H;
  c.I = s.I;
  c.shared_inter = s.shared_inter;
  c.shared_gate = s.shared_gate;
  c.seed = 1234;
  c.compute_expected = false;
  return c;
}

// Rows of the output the reference checks at a given M: all of them for small M, else an even sample.
// A small bf16 routing case (E=128, top 8, H=256, I=128) of M tokens: the routing tests' shape.
CaseSpec routing_spec(int64_t M, uint64_t seed) {
  CaseSpec spec;
  spec.config.format = WeightFormat::Bf16;
  spec.config.act_quant = ActQuant::None;
  spec.config.router.top_k = 8;
  spec.M = M;
  spec.E = 128;
  spec.H = 256;
  spec.I = 128;
  spec.seed = seed;
  spec.compute_expected = false;
  return spec;
}

std::vector<int64_t> sampled_rows(int64_t M) {
  std::vector<int64_t> rows;
  if (M <= 64) {
    for (int64_t t = 0; t < M; ++t) rows.push_back(t);
  } else {
    for (int i = 0; i < 48; ++i) rows.push_back(i * (M - 1) / 47);
  }
  return rows;
}

// Diagnostics for a fault in a run (read once): MOE_TEST_TRACE=1 names each call's M on stderr before it
// runs; MOE_TEST_SYNC_PARTS=1 also waits after every kernel of the call and names the one that faulted (which
// takes away the overlap between kernels, so a race may hide).
void sync_part(void*, const char* part, cudaStream_t stream) {
  const cudaError_t e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) std::fprintf(stderr, "trace: %s faulted: %s\n", part, cudaGetErrorString(e));
}

void trace_call(int M) {
  static const bool trace = env_flag("MOE_TEST_TRACE");
  static const bool sync = [] {
    const bool on = env_flag("MOE_TEST_SYNC_PARTS");
    if (on) cuda::set_moe_part_marker(sync_part, nullptr);
    return on;
  }();
  if (trace || sync) std::fprintf(stderr, "trace: M=%d\n", M);
}

// Runs the GPU op on the first M rows with poisoned workspaces; returns the bf16 output widened.
std::vector<float> run_gpu(const cuda::DeviceMoeLayer& layer, cuda::MoeWorkspace& ws,
                           const cuda::DeviceBuffer& x, const cuda::DeviceBuffer& logits, int M, int H,
                           cudaStream_t stream, cuda::GemmPath path = cuda::GemmPath::Auto) {
  cuda::DeviceBuffer out(static_cast<size_t>(M) * H * 2);
  ws.poison(stream);
  out.poison(stream);
  trace_call(M);
  cuda::fused_moe(layer, ws, x.as<uint16_t>(), logits.as<float>(), M, out.as<uint16_t>(), stream, path);
  MOE_CUDA_CHECK(cudaStreamSynchronize(stream));
  MOE_CUDA_CHECK(cudaGetLastError());
  std::vector<uint16_t> bits(static_cast<size_t>(M) * H);
  MOE_CUDA_CHECK(cudaMemcpy(bits.data(), out.get(), bits.size() * 2, cudaMemcpyDeviceToHost));
  std::vector<float> f(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) f[i] = bf16_to_f32(bits[i]);
  return f;
}

// A generated case's unsharded layer and first max_m rows of inputs on the GPU, with a workspace for them.
struct GpuLayerCase {
  GeneratedCase generated;
  MemorySource source;
  MoeCase c;
  cuda::DeviceMoeLayer layer;
  cuda::MoeWorkspace ws;
  cuda::DeviceBuffer x, logits;

  GpuLayerCase(const CaseSpec& spec, int max_m)
      : generated(generate_case(spec)),
        source(generated.tensors),
        c(build_case(generated.metadata, source)),
        layer(c.config, layout::shard_moe_weights(
                            c.weights, layout::plan_moe_layer(layer_spec_of(c), layout::Parallelism{}))),
        ws(layer, max_m),
        x(static_cast<size_t>(max_m) * spec.H * 2),
        logits(static_cast<size_t>(max_m) * spec.E * 4) {
    std::vector<uint16_t> xb(static_cast<size_t>(max_m) * spec.H);
    for (size_t i = 0; i < xb.size(); ++i) xb[i] = f32_to_bf16(c.x.as<float>()[i]);
    x.upload(xb.data(), xb.size() * 2);
    logits.upload(c.router_logits.data, logits.bytes());
  }
  GpuLayerCase(const GpuLayerCase&) = delete;
  GpuLayerCase& operator=(const GpuLayerCase&) = delete;
};

// Each of `shapes` in bf16 and fp8_block, with inputs for up to max_m tokens (8: the decode-sized layers of
// the switch tests below).
void each_decode_layer(std::initializer_list<NamedShape> shapes,
                       const std::function<void(const NamedShape&, WeightFormat, GpuLayerCase&)>& fn,
                       int max_m = 8) {
  for (const NamedShape& shape : shapes)
    for (const WeightFormat f : {WeightFormat::Bf16, WeightFormat::Fp8Block}) {
      GpuLayerCase k(spec_for(shape, f, max_m), max_m);
      fn(shape, f, k);
    }
}

// k's call of M tokens captured into a CUDA graph (workspaces poisoned first) and replayed `replays` times,
// each onto a poisoned output whose bits must be `expected`'s; after_replay(replay) then checks what else the
// replay should have left.
void expect_graph_replays(
    GpuLayerCase& k, int M, int H, cudaStream_t stream, const std::vector<float>& expected, int replays,
    const std::string& at, const std::function<void(int)>& after_replay = [](int) {}) {
  cuda::DeviceBuffer out(static_cast<size_t>(M) * H * 2);
  k.ws.poison(stream);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  MOE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  cuda::fused_moe(k.layer, k.ws, k.x.as<uint16_t>(), k.logits.as<float>(), M, out.as<uint16_t>(), stream);
  MOE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  MOE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < replays; ++replay) {
    out.poison(stream);
    MOE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    MOE_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<uint16_t> bits(static_cast<size_t>(M) * H);
    MOE_CUDA_CHECK(cudaMemcpy(bits.data(), out.get(), bits.size() * 2, cudaMemcpyDeviceToHost));
    size_t differ = 0;
    for (size_t i = 0; i < bits.size(); ++i) differ += bf16_to_f32(bits[i]) == expected[i] ? 0 : 1;
    EXPECT_EQ(differ, 0u) << at << ": graph replay " << replay << " gives other bits";
    after_replay(replay);
  }
  MOE_CUDA_CHECK(cudaGraphExecDestroy(exec));
  MOE_CUDA_CHECK(cudaGraphDestroy(graph));
}

class FusedMoeGpu : public ::testing::TestWithParam<std::tuple<int, WeightFormat>> {};

TEST_P(FusedMoeGpu, MatchesReferenceAtEveryM) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const NamedShape& s = kShapes[std::get<0>(GetParam())];
  const WeightFormat f = std::get<1>(GetParam());
  std::printf("[%s %s] generating weights...\n", s.name, std::string(format_name(f)).c_str());
  std::fflush(stdout);
  GpuLayerCase k(spec_for(s, f, kMaxM), kMaxM);
  const MoeCase& c = k.c;
  cuda::DeviceMoeLayer& layer = k.layer;
  cuda::MoeWorkspace& ws = k.ws;
  const cuda::DeviceBuffer &x = k.x, &logits = k.logits;
  const int H = static_cast<int>(s.H);
  cudaStream_t stream;
  MOE_CUDA_CHECK(cudaStreamCreate(&stream));

  // One reference call over the union of every M's sampled rows: a row's output does not depend on M.
  std::set<int64_t> all_rows;
  for (int M : kMs)
    for (int64_t r : sampled_rows(M)) all_rows.insert(r);
  const std::vector<int64_t> rows(all_rows.begin(), all_rows.end());
  std::vector<float> rx(rows.size() * H), rl(rows.size() * s.E), ref(rows.size() * H);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(&rx[i * H], c.x.as<float>() + rows[i] * H, H * 4);
    std::memcpy(&rl[i * s.E], c.router_logits.as<float>() + rows[i] * s.E, s.E * 4);
  }
  std::printf("[%s %s] reference on %zu rows...\n", s.name, std::string(format_name(f)).c_str(), rows.size());
  std::fflush(stdout);
  reference_moe(c.config, c.weights, rx.data(), rl.data(), static_cast<int64_t>(rows.size()), ref.data());
  const double tol = default_tolerance(c.config);

  for (int M : kMs) {
    const std::vector<float> out = run_gpu(layer, ws, x, logits, M, H, stream);
    int64_t non_finite = 0;
    for (float v : out) non_finite += !std::isfinite(v);
    std::vector<float> got, want;
    for (int64_t r : sampled_rows(M)) {
      const size_t i = static_cast<size_t>(std::lower_bound(rows.begin(), rows.end(), r) - rows.begin());
      got.insert(got.end(), out.begin() + r * H, out.begin() + (r + 1) * H);
      want.insert(want.end(), ref.begin() + i * H, ref.begin() + (i + 1) * H);
    }
    const Comparison cmp = compare(got.data(), want.data(), static_cast<int64_t>(got.size()));
    std::printf("[%s %s] M=%-5d %s  (non-finite outputs: %ld)\n", s.name, std::string(format_name(f)).c_str(),
                M, verdict_line(cmp, tol).c_str(), static_cast<long>(non_finite));
    EXPECT_EQ(non_finite, 0) << "M=" << M;
    EXPECT_TRUE(cmp.passed(tol)) << "M=" << M << " " << verdict_line(cmp, tol);
  }

  // Bitwise determinism: ten runs at a decode size and a prefill size give identical bits.
  for (int M : {8, 1024}) {
    const std::vector<float> first = run_gpu(layer, ws, x, logits, M, H, stream);
    for (int rep = 0; rep < 9; ++rep) {
      const std::vector<float> again = run_gpu(layer, ws, x, logits, M, H, stream);
      ASSERT_EQ(0, std::memcmp(first.data(), again.data(), first.size() * 4))
          << "run " << rep + 1 << " at M=" << M;
    }
  }
  // Decode sizes back to back, each call's M different from the last, 25 rounds with poisoned workspaces:
  // every M gives its first bits each time. A few tokens' stage 2 reads the grouping before its wait (a
  // guess it checks after), and with a self-routed stage 1 that grouping can be half written, the poison
  // beside this call's values, read differently by different warps. Acting on such a guess faulted in every
  // standalone run of this test before session 16's fix (at M=5, then at M=8); 200 more decode calls give
  // a race of that kind many more chances.
  {
    const int decode_ms[] = {5, 3, 8, 1, 7, 2, 6, 4};
    std::vector<std::vector<float>> firsts;
    for (int M : decode_ms) firsts.push_back(run_gpu(layer, ws, x, logits, M, H, stream));
    for (int round = 0; round < 25; ++round)
      for (size_t i = 0; i < firsts.size(); ++i) {
        const std::vector<float> again = run_gpu(layer, ws, x, logits, decode_ms[i], H, stream);
        ASSERT_EQ(0, std::memcmp(firsts[i].data(), again.data(), again.size() * 4))
            << "round " << round << " at M=" << decode_ms[i];
      }
  }
  // Batch invariance: token 0 alone and inside batches of 8 and of the most tokens Auto still gives the
  // swap-AB stages (auto_swap_ab_below; from there the grouped GEMM, another order of sums). Required
  // wherever both sizes take the same path; across the switch from the fused decode kernel (M <= 8) to the
  // GEMV it is only reported.
  const std::vector<float> alone = run_gpu(layer, ws, x, logits, 1, H, stream);
  for (int M : {8, cuda::auto_swap_ab_below(H, layer.experts().view.inter, f == WeightFormat::Fp8Block,
                                            layer.num_experts()) -
                       1}) {
    const std::vector<float> batch = run_gpu(layer, ws, x, logits, M, H, stream);
    const bool same = std::memcmp(alone.data(), batch.data(), static_cast<size_t>(H) * 4) == 0;
    const bool one_path = cuda::auto_takes_fused(layer, 1) == cuda::auto_takes_fused(layer, M);
    std::printf(
        "[%s %s] batch invariance: token 0 at M=1 vs inside M=%d: %s%s\n", s.name,
        std::string(format_name(f)).c_str(), M, same ? "identical bits" : "DIFFERENT",
        one_path ? "" : " (M=1 on the fused decode kernel, this M on the GEMV: reported, not required)");
    if (one_path) {
      EXPECT_TRUE(same) << "M=" << M;
    }
  }
  MOE_CUDA_CHECK(cudaStreamDestroy(stream));
}

INSTANTIATE_TEST_SUITE_P(Shapes, FusedMoeGpu,
                         ::testing::Combine(::testing::Range(0, 4),
                                            ::testing::Values(WeightFormat::Bf16, WeightFormat::Fp8Block)),
                         [](const auto& param_info) {
                           std::string n = kShapes[std::get<0>(param_info.param)].name;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n + "_" + std::string(format_name(std::get<1>(param_info.param)));
                         });

// Router logits with many exact ties (rounded to multiples of 0.5): the GPU's top-K, a hardware warp
// reduction per pick, must pick the lower expert id on every tie as the reference does, for both routers that
// select on a softmax or on the raw logits. A wrong pick moves a whole expert's contribution, far outside the
// tolerance.
TEST(FusedMoeGpuRouting, TiedLogitsPickTheLowerExpert) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (RouterKind kind : {RouterKind::SoftmaxTopk, RouterKind::TopkSoftmax}) {
    CaseSpec spec = routing_spec(32, 7);
    spec.config.router.kind = kind;
    const GeneratedCase g = generate_case(spec);
    MemorySource src(g.tensors);
    const MoeCase c = build_case(g.metadata, src);
    std::vector<float> tied(c.router_logits.as<float>(), c.router_logits.as<float>() + spec.M * spec.E);
    int64_t ties = 0;
    for (float& v : tied) v = std::round(v * 2.0f) / 2.0f;  // uniform in [-4, 4]: 17 distinct values
    for (int64_t t = 0; t < spec.M; ++t)
      for (int64_t e = 1; e < spec.E; ++e) ties += tied[t * spec.E + e] == tied[t * spec.E + e - 1];
    ASSERT_GT(ties, spec.M) << "the rounded logits should tie often";
    const int H = static_cast<int>(spec.H), M = static_cast<int>(spec.M);
    std::vector<float> ref(static_cast<size_t>(M) * H);
    reference_moe(c.config, c.weights, c.x.as<float>(), tied.data(), M, ref.data());

    const layout::MoeLayerPlan plan = layout::plan_moe_layer(layer_spec_of(c), layout::Parallelism{});
    const layout::RankWeights rank = layout::shard_moe_weights(c.weights, plan);
    cuda::DeviceMoeLayer layer(c.config, rank);
    cuda::MoeWorkspace ws(layer, M);
    std::vector<uint16_t> xb(static_cast<size_t>(M) * H);
    for (size_t i = 0; i < xb.size(); ++i) xb[i] = f32_to_bf16(c.x.as<float>()[i]);
    cuda::DeviceBuffer x(xb.size() * 2), logits(tied.size() * 4);
    x.upload(xb.data(), xb.size() * 2);
    logits.upload(tied.data(), tied.size() * 4);
    cudaStream_t stream;
    MOE_CUDA_CHECK(cudaStreamCreate(&stream));
    for (int m : {1, 8, 32}) {  // the one-block prologue and the many-block route kernel
      const std::vector<float> out = run_gpu(layer, ws, x, logits, m, H, stream);
      const Comparison cmp = compare(out.data(), ref.data(), static_cast<int64_t>(m) * H);
      const double tol = default_tolerance(c.config);
      std::printf("[tied logits, %s] M=%-3d %s\n",
                  kind == RouterKind::SoftmaxTopk ? "softmax_topk" : "topk_softmax", m,
                  verdict_line(cmp, tol).c_str());
      EXPECT_TRUE(cmp.passed(tol)) << "M=" << m;
    }
    MOE_CUDA_CHECK(cudaStreamDestroy(stream));
  }
}

// The grouping of a call of M tokens, read back from the workspace, on one rank and on the second of two
// expert-parallel ranks (half of the picks belong to the other rank): each expert's range of sorted_pairs
// holds exactly the pairs routed to it (in some order); the offsets are the counts' prefix sums; the active
// list is the experts with pairs, in order, with their first positions in slot_begin and -1 / the total past
// them.
void check_grouping(int M) {
  const CaseSpec spec = routing_spec(M, 11);
  const GeneratedCase g = generate_case(spec);
  MemorySource src(g.tensors);
  const MoeCase c = build_case(g.metadata, src);
  const int H = static_cast<int>(spec.H), K = 8;
  std::vector<uint16_t> xb(static_cast<size_t>(M) * H);
  for (size_t i = 0; i < xb.size(); ++i) xb[i] = f32_to_bf16(c.x.as<float>()[i]);
  cuda::DeviceBuffer x(xb.size() * 2), logits(c.router_logits.nbytes());
  x.upload(xb.data(), xb.size() * 2);
  logits.upload(c.router_logits.data, c.router_logits.nbytes());
  cudaStream_t stream;
  MOE_CUDA_CHECK(cudaStreamCreate(&stream));
  for (const int ep : {1, 2}) {
    layout::Parallelism par;
    par.ep_size = ep;
    par.ep_rank = ep - 1;
    const layout::MoeLayerPlan plan = layout::plan_moe_layer(layer_spec_of(c), par);
    const layout::RankWeights rank = layout::shard_moe_weights(c.weights, plan);
    cuda::DeviceMoeLayer layer(c.config, rank);
    cuda::MoeWorkspace ws(layer, M);
    run_gpu(layer, ws, x, logits, M, H, stream);
    const int E = layer.num_experts(), P = M * K;
    const auto fetch = [](const cuda::DeviceBuffer& b, size_t n) {
      std::vector<int> v(n);
      MOE_CUDA_CHECK(cudaMemcpy(v.data(), b.get(), n * 4, cudaMemcpyDeviceToHost));
      return v;
    };
    const std::vector<int> ids = fetch(ws.topk_ids, P), offsets = fetch(ws.offsets, E + 1),
                           sorted = fetch(ws.sorted_pairs, P), active = fetch(ws.active, E),
                           num_active = fetch(ws.num_active, 1), slot_begin = fetch(ws.slot_begin, E + 1);
    std::vector<std::vector<int>> want(E);
    for (int p = 0; p < P; ++p)
      if (ids[p] >= 0 && ids[p] < E) want[ids[p]].push_back(p);  // in pair order
    int at = 0, n_active = 0, local_pairs = 0;
    for (int e = 0; e < E; ++e) {
      ASSERT_EQ(offsets[e], at) << "EP " << ep << " expert " << e;
      std::vector<int> got(sorted.begin() + offsets[e], sorted.begin() + offsets[e] + want[e].size());
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, want[e]) << "EP " << ep << " expert " << e;
      if (!want[e].empty()) {
        EXPECT_EQ(active[n_active], e) << "EP " << ep;
        EXPECT_EQ(slot_begin[n_active], at) << "EP " << ep;
        ++n_active;
      }
      at += static_cast<int>(want[e].size());
      local_pairs += static_cast<int>(want[e].size());
    }
    EXPECT_EQ(offsets[E], at) << "EP " << ep;
    EXPECT_EQ(num_active[0], n_active) << "EP " << ep;
    for (int i = n_active; i < E; ++i) {
      EXPECT_EQ(active[i], -1) << "EP " << ep << " slot " << i;
      EXPECT_EQ(slot_begin[i], at) << "EP " << ep << " slot " << i;
    }
    if (ep == 2) {
      EXPECT_LT(local_pairs, P) << "the other rank should hold some picks";
    }
    std::printf(
        "[grouping] M=%d EP %d: %d pairs on this rank over %d active experts, each expert's pairs complete\n",
        M, ep, local_pairs, n_active);
  }
  MOE_CUDA_CHECK(cudaStreamDestroy(stream));
}

// Many pairs: the route kernel, then the align kernel over many blocks.
TEST(FusedMoeGpuRouting, ManyPairGroupingIsComplete) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  check_grouping(1024);
}

// A few tokens: the one-block prologue's grouping (the whole block, block_align.cuh) at M = 1 to 5. With
// stage 1's self-routing off: it groups in its own registers and leaves the workspace's grouping unwritten.
TEST(FusedMoeGpuRouting, FewPairGroupingIsComplete) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  const bool self_route = cuda::swap_ab_self_route();
  cuda::set_swap_ab_self_route(false);
  for (const int M : {1, 2, 3, 4, 5}) check_grouping(M);
  cuda::set_swap_ab_self_route(self_route);
}

// The shared expert's stages on the workspace's second stream, beside the routed experts' (forked after the
// prologue, joined before the combine): the same bits as one after the other, called directly and replayed
// from a captured CUDA graph (where the fork and the join are graph edges), on a Qwen3-Next-like layer with a
// gated shared expert, at the token counts where the paths that allow it run; and with both launches' blocks
// sized for one wave together (swap_ab_joint_wave).
TEST(FusedMoeGpuShared, BesideTheRoutedExpertsSameBits) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream;
  MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int joint_wave_default = cuda::swap_ab_joint_wave_setting();
  for (const WeightFormat f : {WeightFormat::Bf16, WeightFormat::Fp8Block}) {
    const NamedShape shape{"small-shared", 64, 512, 256, 8, 256, true, false};
    constexpr int kM = 64;
    GpuLayerCase k(spec_for(shape, f, kM), kM);
    cuda::DeviceMoeLayer& layer = k.layer;
    cuda::MoeWorkspace& ws = k.ws;
    const cuda::DeviceBuffer &x = k.x, &logits = k.logits;
    const int H = static_cast<int>(shape.H);
    for (const int M : {1, 3, 8, 64}) {
      cuda::set_shared_expert_beside_routed(false);
      const std::vector<float> after = run_gpu(layer, ws, x, logits, M, H, stream);
      cuda::set_shared_expert_beside_routed(true);
      const std::vector<float> beside = run_gpu(layer, ws, x, logits, M, H, stream);
      const auto non_finite =
          std::count_if(beside.begin(), beside.end(), [](float v) { return !std::isfinite(v); });
      EXPECT_EQ(non_finite, 0) << format_name(f) << " M=" << M;
      EXPECT_EQ(0, std::memcmp(after.data(), beside.data(), after.size() * 4))
          << format_name(f) << " M=" << M << ": beside the routed experts, other bits";
      // Both launches' row tiles per block sized for one wave together (swap_ab_joint_wave; M <= 8). At M=8
      // the routed experts' 64 groups x 8 row tiles per stage exceed one wave of an H100 or H200 (132 SMs x
      // 2 blocks), so sized together the shared expert's launch takes fewer blocks: the switch took effect.
      cuda::set_swap_ab_joint_wave_setting(0);
      const long long apart_from = cuda::swap_ab_blocks_launched();
      (void)run_gpu(layer, ws, x, logits, M, H, stream);
      const long long apart_blocks = cuda::swap_ab_blocks_launched() - apart_from;
      cuda::set_swap_ab_joint_wave_setting(1);
      const long long joint_from = cuda::swap_ab_blocks_launched();
      const std::vector<float> joint = run_gpu(layer, ws, x, logits, M, H, stream);
      const long long joint_blocks = cuda::swap_ab_blocks_launched() - joint_from;
      cuda::set_swap_ab_joint_wave_setting(joint_wave_default);
      std::printf("[joint wave %s] M=%d: swap-AB blocks %lld apart, %lld together\n",
                  std::string(format_name(f)).c_str(), M, apart_blocks, joint_blocks);
      EXPECT_EQ(0, std::memcmp(after.data(), joint.data(), after.size() * 4))
          << format_name(f) << " M=" << M << ": one wave with the routed experts, other bits";
      EXPECT_LE(joint_blocks, apart_blocks) << format_name(f) << " M=" << M;
      if (M == 8 && 2L * cuda::sm_count() < 64L * 8) {
        EXPECT_LT(joint_blocks, apart_blocks)
            << format_name(f) << " M=8: the joint sizing did not take effect";
      }
      // The same call captured into a graph and replayed.
      expect_graph_replays(
          k, M, H, stream, after, 1,
          std::string(format_name(f)) + " M=" + std::to_string(M) + " beside the routed experts");
      std::printf("[shared beside routed] %s M=%d: same bits directly and from a graph\n",
                  std::string(format_name(f)).c_str(), M);
    }
  }
  cuda::set_shared_expert_beside_routed(true);
  MOE_CUDA_CHECK(cudaStreamDestroy(stream));
}

// The shared expert's first gate/up bytes requested into L2 while the prologue routes (MOE_SHARED_WARM_KB,
// l2_warm.h): the same bits as without, at the token counts that take it (a launch each) and past them
// (none).
TEST(FusedMoeGpuShared, WarmingItsWeightsKeepsTheBits) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream;
  MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int warm_default = cuda::shared_expert_warm_kb();
  each_decode_layer(
      {NamedShape{"small-shared", 64, 512, 256, 8, 256, true, false}},
      [&](const NamedShape& shape, WeightFormat f, GpuLayerCase& k) {
        const int H = static_cast<int>(shape.H);
        for (const int M : {1, 3, 8, 64}) {
          cuda::set_shared_expert_warm_kb(0);
          const long long cold_from = cuda::l2_warm_launches();
          const std::vector<float> cold = run_gpu(k.layer, k.ws, k.x, k.logits, M, H, stream);
          EXPECT_EQ(cuda::l2_warm_launches(), cold_from) << "off, yet warmed";
          cuda::set_shared_expert_warm_kb(64);  // less than the expert's 512 KB of gate/up rows: part of each
          const long long warm_from = cuda::l2_warm_launches();
          const std::vector<float> warm = run_gpu(k.layer, k.ws, k.x, k.logits, M, H, stream);
          EXPECT_EQ(cuda::l2_warm_launches() - warm_from, M <= 8 ? 1 : 0) << format_name(f) << " M=" << M;
          EXPECT_EQ(0, std::memcmp(cold.data(), warm.data(), cold.size() * 4))
              << format_name(f) << " M=" << M << ": warmed, other bits";
        }
      },
      64);
  cuda::set_shared_expert_warm_kb(warm_default);
  MOE_CUDA_CHECK(cudaStreamDestroy(stream));
}

// The swap-AB stages asking L2 for weight steps past the ones they load (swap_ab_l2_ahead: 1 to 3 steps) give
// the bits they give without it, on a small layer with a shared expert and a wide one (H = 7168: 56 fp8 K
// steps, several per warp per row tile, so the requests walk across K steps and tiles), at the decode token
// counts that take the one-column-tile kernels; and none of its requests faults. (Which steps it asks for,
// and when, is checked on the CPU: grouped_gemm_plan_test's SwapAbL2Ahead.)
TEST(FusedMoeGpuSwapAb, L2AheadSameBits) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream;
  MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int ahead_default = cuda::swap_ab_l2_ahead();
  each_decode_layer(
      {NamedShape{"small-shared", 64, 512, 256, 8, 256, true, false},
       NamedShape{"wide-k", 16, 7168, 256, 4, 256, false, false}},
      [&](const NamedShape& shape, WeightFormat f, GpuLayerCase& k) {
        const int H = static_cast<int>(shape.H);
        for (const int M : {1, 2, 5, 8}) {
          cuda::set_swap_ab_l2_ahead(0);
          const std::vector<float> base = run_gpu(k.layer, k.ws, k.x, k.logits, M, H, stream);
          const auto non_finite =
              std::count_if(base.begin(), base.end(), [](float v) { return !std::isfinite(v); });
          EXPECT_EQ(non_finite, 0) << shape.name << " " << format_name(f) << " M=" << M;
          for (const int ahead : {1, 2, 3}) {
            cuda::set_swap_ab_l2_ahead(ahead);
            const long long blocks_before = cuda::swap_ab_blocks_launched();
            const std::vector<float> got = run_gpu(k.layer, k.ws, k.x, k.logits, M, H, stream);
            EXPECT_GT(cuda::swap_ab_blocks_launched(), blocks_before)
                << shape.name << " " << format_name(f) << " M=" << M << ": the swap-AB stages did not run";
            EXPECT_EQ(0, std::memcmp(base.data(), got.data(), base.size() * 4))
                << shape.name << " " << format_name(f) << " M=" << M << ": L2 requests " << ahead
                << " steps ahead changed the bits";
          }
          std::printf("[l2 ahead] %s %s M=%d: the same bits with 1, 2 and 3 steps asked ahead\n", shape.name,
                      std::string(format_name(f)).c_str(), M);
        }
      });
  cuda::set_swap_ab_l2_ahead(ahead_default);
  MOE_CUDA_CHECK(cudaStreamDestroy(stream));
}

// The balanced K warps (swap_ab_balanced_k: 2 or 1 K warps where 4 would leave some a step more than others),
// forced on for every stage (by default only stages of at most 2 K steps), against the fp32 reference on
// layers whose stages take 3, 4, 6 and 2 K steps (stage 1 of H = 384 and 512, stage 2 of I = 768 and 256),
// forced onto the swap-AB stages at decode and prefill token counts, and the same bits run after run.
TEST(FusedMoeGpuSwapAb, BalancedKWarpsMatchTheReference) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream;
  MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int balanced_default = cuda::swap_ab_balanced_k();
  cuda::set_swap_ab_balanced_k(cuda::kBalanceAnyK);
  for (const NamedShape& shape : {NamedShape{"odd-k", 16, 384, 768, 4, 0, false, false},
                                  NamedShape{"two-step-shared", 64, 512, 256, 8, 256, true, false}})
    for (const WeightFormat f : {WeightFormat::Bf16, WeightFormat::Fp8Block}) {
      constexpr int kM = 40;
      GpuLayerCase k(spec_for(shape, f, kM), kM);
      const int H = static_cast<int>(shape.H);
      std::vector<float> ref(static_cast<size_t>(kM) * H);
      reference_moe(k.c.config, k.c.weights, k.c.x.as<float>(), k.c.router_logits.as<float>(), kM,
                    ref.data());
      const double tol = default_tolerance(k.c.config);
      for (const int M : {1, 3, 8, 40}) {
        const std::string at =
            std::string(shape.name) + " " + std::string(format_name(f)) + " M=" + std::to_string(M);
        const long long blocks_before = cuda::swap_ab_blocks_launched();
        const std::vector<float> out =
            run_gpu(k.layer, k.ws, k.x, k.logits, M, H, stream, cuda::GemmPath::SwapAb);
        EXPECT_GT(cuda::swap_ab_blocks_launched(), blocks_before) << at << ": the swap-AB stages did not run";
        EXPECT_EQ(std::count_if(out.begin(), out.end(), [](float v) { return !std::isfinite(v); }), 0) << at;
        const Comparison cmp = compare(out.data(), ref.data(), static_cast<int64_t>(out.size()));
        std::printf("[balanced K] %s %s\n", at.c_str(), verdict_line(cmp, tol).c_str());
        EXPECT_TRUE(cmp.passed(tol)) << at << " " << verdict_line(cmp, tol);
        const std::vector<float> again =
            run_gpu(k.layer, k.ws, k.x, k.logits, M, H, stream, cuda::GemmPath::SwapAb);
        EXPECT_EQ(0, std::memcmp(out.data(), again.data(), out.size() * 4))
            << at << ": other bits run to run";
      }
    }
  cuda::set_swap_ab_balanced_k(balanced_default);
  MOE_CUDA_CHECK(cudaStreamDestroy(stream));
}

// The fp8 stage 2 reading its first pass's pairs before its wait (swap_ab_fp8_pairs_early) gives the bits it
// gives reading them after, with one pass and with several (the shared expert's passes spread over the grid
// at 40 and 100 tokens), with and without a shared expert; the swap-AB stages (forced: Auto takes the
// grouped GEMM from 64 tokens, and from 32 for H = 7168) ran each time.
TEST(FusedMoeGpuSwapAb, Fp8PairsEarlySameBits) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream;
  MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const bool early_default = cuda::swap_ab_fp8_pairs_early();
  for (const NamedShape& shape : {NamedShape{"small-shared", 64, 512, 256, 8, 256, true, false},
                                  NamedShape{"small", 64, 512, 256, 8, 0, false, false},
                                  NamedShape{"wide-k", 16, 7168, 256, 4, 256, false, false}}) {
    constexpr int kM = 100;
    GpuLayerCase k(spec_for(shape, WeightFormat::Fp8Block, kM), kM);
    const int H = static_cast<int>(shape.H);
    for (const int M : {1, 3, 8, 40, 100}) {
      const std::string at = std::string(shape.name) + " M=" + std::to_string(M);
      cuda::set_swap_ab_fp8_pairs_early(false);
      const std::vector<float> after =
          run_gpu(k.layer, k.ws, k.x, k.logits, M, H, stream, cuda::GemmPath::SwapAb);
      cuda::set_swap_ab_fp8_pairs_early(true);
      const long long blocks_before = cuda::swap_ab_blocks_launched();
      const std::vector<float> early =
          run_gpu(k.layer, k.ws, k.x, k.logits, M, H, stream, cuda::GemmPath::SwapAb);
      EXPECT_GT(cuda::swap_ab_blocks_launched(), blocks_before) << at << ": the swap-AB stages did not run";
      EXPECT_EQ(std::count_if(early.begin(), early.end(), [](float v) { return !std::isfinite(v); }), 0)
          << at;
      EXPECT_EQ(0, std::memcmp(after.data(), early.data(), after.size() * 4)) << at << ": other bits";
      std::printf("[fp8 pairs early] %s: the same bits\n", at.c_str());
    }
  }
  cuda::set_swap_ab_fp8_pairs_early(early_default);
  MOE_CUDA_CHECK(cudaStreamDestroy(stream));
}

// The swap-AB calls of a few tokens crossing stage 1 -> stage 2 -> combine by counters (moe_counter_waits)
// instead of the programmatic-launch wait: the same bits as with the wait, directly and replayed from a
// captured graph (each replay's prologue zeroes the counters the last one left at the block counts), and the
// counters show the path ran (poisoned before the call, they end at the stages' block counts; with the wait
// nobody touches them). bf16 with stage 1's self-routing off (a self-routed call has no prologue to zero
// them).
TEST(FusedMoeGpuCounters, CounterWaitsSameBits) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream;
  MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const bool counters_default = cuda::moe_counter_waits(), self_route_default = cuda::swap_ab_self_route();
  cuda::set_swap_ab_self_route(false);
  const auto counts = [](const cuda::MoeWorkspace& ws) {
    std::vector<uint32_t> c(cuda::kChainCounters);
    MOE_CUDA_CHECK(cudaMemcpy(c.data(), ws.chain_counters.get(), c.size() * 4, cudaMemcpyDeviceToHost));
    return c;
  };
  each_decode_layer(
      {NamedShape{"small", 64, 512, 256, 8, 0, false, false},
       NamedShape{"wide-k", 16, 7168, 256, 4, 0, false, false}},
      [&](const NamedShape& shape, WeightFormat f, GpuLayerCase& k) {
        const int H = static_cast<int>(shape.H);
        for (const int M : {1, 2, 5, 8}) {
          const std::string at =
              std::string(shape.name) + " " + std::string(format_name(f)) + " M=" + std::to_string(M);
          // The one-launch fused kernel (MOE_FUSED=1) crosses its stages by its grid barrier, not these
          // counters: said, not checked.
          if (cuda::auto_takes_fused(k.layer, M)) {
            std::printf("[counter waits] %s: Auto takes the one-launch fused kernel here: no counters\n",
                        at.c_str());
            continue;
          }
          cuda::set_moe_counter_waits(false);
          const std::vector<float> waited = run_gpu(k.layer, k.ws, k.x, k.logits, M, H, stream);
          for (uint32_t c : counts(k.ws))
            EXPECT_EQ(c, 0xffffffffu) << at << ": with the wait, a counter was touched";
          cuda::set_moe_counter_waits(true);
          const long long blocks_before = cuda::swap_ab_blocks_launched();
          const std::vector<float> counted = run_gpu(k.layer, k.ws, k.x, k.logits, M, H, stream);
          const long long blocks = cuda::swap_ab_blocks_launched() - blocks_before;
          const std::vector<uint32_t> c = counts(k.ws);
          // Every block of both stages arrived once on counters the prologue zeroed (a missing zeroing would
          // leave the poison's wrap, a block arriving twice one too many).
          EXPECT_GT(c[0], 0u) << at << ": no stage-1 block arrived";
          EXPECT_GT(c[1], 0u) << at << ": no stage-2 block arrived";
          EXPECT_EQ(static_cast<long long>(c[0]) + c[1], blocks)
              << at << ": arrivals against blocks launched";
          EXPECT_EQ(std::count_if(counted.begin(), counted.end(), [](float v) { return !std::isfinite(v); }),
                    0)
              << at;
          EXPECT_EQ(0, std::memcmp(waited.data(), counted.data(), waited.size() * 4)) << at << ": other bits";
          // Captured and replayed twice: the second replay starts from the counts the first left.
          expect_graph_replays(k, M, H, stream, waited, 2, at, [&](int replay) {
            EXPECT_EQ(counts(k.ws), c) << at << ": replay " << replay << " ended at other counts";
          });
          std::printf("[counter waits] %s: the wait's bits, directly and from a graph; counts %u, %u\n",
                      at.c_str(), c[0], c[1]);
        }
      });
  cuda::set_moe_counter_waits(counters_default);
  cuda::set_swap_ab_self_route(self_route_default);
  MOE_CUDA_CHECK(cudaStreamDestroy(stream));
}

// Stage 2 doing the combine itself (swap_ab_combine_max_tokens, here up to 8: the last block of each row tile
// adds the slots): the combine launch's bits at the decode token counts, with stage 1's self-routing (bf16)
// and the prologue (fp8), on a small layer and a wide one (H = 7168: 224 counters, several tiles per block),
// directly and from a graph replayed twice (the second replay starts from the counters the first left, which
// stage 1 zeroes).
TEST(FusedMoeGpuCombine, StageTwoCombinesSameBits) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream;
  MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int combines_default = cuda::swap_ab_combine_max_tokens();
  const auto counts = [](const cuda::MoeWorkspace& ws) {
    std::vector<uint32_t> c(ws.combine_counters.bytes() / 4);
    MOE_CUDA_CHECK(cudaMemcpy(c.data(), ws.combine_counters.get(), c.size() * 4, cudaMemcpyDeviceToHost));
    return c;
  };
  each_decode_layer(
      {NamedShape{"small", 64, 512, 256, 8, 0, false, false},
       NamedShape{"wide-k", 16, 7168, 256, 4, 0, false, false}},
      [&](const NamedShape& shape, WeightFormat f, GpuLayerCase& k) {
        const int H = static_cast<int>(shape.H);
        for (const int M : {1, 2, 3, 5, 8}) {
          const std::string at =
              std::string(shape.name) + " " + std::string(format_name(f)) + " M=" + std::to_string(M);
          cuda::set_swap_ab_combine_max_tokens(0);
          const std::vector<float> launched = run_gpu(k.layer, k.ws, k.x, k.logits, M, H, stream);
          for (uint32_t c : counts(k.ws)) EXPECT_EQ(c, 0xffffffffu) << at << ": off, a counter was touched";
          cuda::set_swap_ab_combine_max_tokens(8);
          const std::vector<float> combined = run_gpu(k.layer, k.ws, k.x, k.logits, M, H, stream);
          int active = 0;
          MOE_CUDA_CHECK(cudaMemcpy(&active, k.ws.num_active.get(), 4, cudaMemcpyDeviceToHost));
          // Each row tile counted every active expert once, on counters stage 1 zeroed (the poison left
          // past the tiles would read as 0xffffffff: zeroed too).
          const std::vector<uint32_t> c = counts(k.ws);
          const auto tiles = std::count(c.begin(), c.end(), static_cast<uint32_t>(active));
          EXPECT_GT(tiles, 0) << at << ": no tile counted " << active << " experts";
          EXPECT_EQ(tiles + std::count(c.begin(), c.end(), 0u), static_cast<long>(c.size()))
              << at << ": a counter neither zero nor the active count";
          EXPECT_EQ(
              std::count_if(combined.begin(), combined.end(), [](float v) { return !std::isfinite(v); }), 0)
              << at;
          EXPECT_EQ(0, std::memcmp(launched.data(), combined.data(), launched.size() * 4))
              << at << ": other bits than the combine launch's";
          expect_graph_replays(k, M, H, stream, launched, 2, at);
          std::printf(
              "[stage 2 combines] %s: the combine launch's bits, directly and from a graph; %ld tiles "
              "of %d experts\n",
              at.c_str(), static_cast<long>(tiles), active);
        }
      });
  cuda::set_swap_ab_combine_max_tokens(combines_default);
  MOE_CUDA_CHECK(cudaStreamDestroy(stream));
}

// Tensor-parallel shards on the GPU: Qwen3-235B-A22B's I=1536 at TP 2, 4, 8 (192 rows per rank: FP8 scale
// blocks straddle ranks) and 16, summed as an all-reduce would, against the unsharded CPU reference. FP8
// activation groups that cross a rank boundary are quantised per rank, so fp8 is compared within that
// quantisation noise.
TEST(FusedMoeGpuTp, ShardsSumToUnsharded) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  for (WeightFormat f : {WeightFormat::Bf16, WeightFormat::Fp8Block, WeightFormat::Mxfp4}) {
    CaseSpec spec;
    spec.config.format = f;
    spec.config.act_quant = f == WeightFormat::Fp8Block ? ActQuant::Fp8_1x128 : ActQuant::None;
    spec.config.router.top_k = 4;
    spec.M = 16;
    spec.E = 8;
    spec.H = 1024;
    spec.I = f == WeightFormat::Mxfp4 ? 1024 : 1536;
    spec.shared_inter = spec.I;
    spec.seed = 99;
    const GeneratedCase g = generate_case(spec);
    MemorySource src(g.tensors);
    const MoeCase c = build_case(g.metadata, src);
    auto backend = make_cuda_backend();
    for (int tp : {1, 2, 4, 8, 16}) {
      std::vector<float> out(static_cast<size_t>(c.M * c.weights.hidden));
      std::fill(out.begin(), out.end(), std::nanf(""));
      run_tensor_parallel(c, tp, *backend, true, out.data());
      const Comparison cmp =
          compare(out.data(), c.expected_out.as<float>(), static_cast<int64_t>(out.size()));
      const double tol = f == WeightFormat::Fp8Block && tp > 1 ? 3e-2 : default_tolerance(c.config);
      std::printf("[tp %s] I=%ld TP=%-2d (per rank %ld) %s\n", std::string(format_name(f)).c_str(),
                  static_cast<long>(spec.I), tp, static_cast<long>(spec.I / tp),
                  verdict_line(cmp, tol).c_str());
      EXPECT_TRUE(cmp.passed(tol)) << format_name(f) << " TP=" << tp;
    }
  }
}

}  // namespace
}  // namespace moe
