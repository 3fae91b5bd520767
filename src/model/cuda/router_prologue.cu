#include "model/cuda/router_prologue.h"

#include <cooperative_groups.h>

#include <atomic>

#include "core/env_flag.h"
#include "core/error.h"
#include "cuda/kernels/cluster_barrier.cuh"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/param_warmup.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/prologue_small.cuh"
#include "cuda/kernels/router_kinds.h"
#include "model/cuda/common.cuh"
#include "model/cuda/f32_row_dot.cuh"
#include "model/cuda/kernel_attributes.h"
#include "model/cuda/norm_rows.cuh"

MOE_KERNEL_TIMELINE_TU(router_prologue)

namespace moe::model::gpu {
namespace {

namespace cg = cooperative_groups;

// A warp per router row, as f32_gemv, and 16 warps per block: the prologue's grouping wants a thread per
// expert in block 0, and 16 rows per block keep the cluster within CUDA's portable 8 blocks for 128 experts.
constexpr int kWarps = 16, kThreads = 32 * kWarps, kMaxCluster = 8, kMaxExperts = kWarps * kMaxCluster;
// warp_route's experts per lane for up to 128 experts.
constexpr int kPerLane = 4;
static_assert(kPerLane * 32 >= kMaxExperts, "the warp router holds every expert");

// On by default since its cluster of 8 blocks passed RouterPrologueKeepsTheBits on a 128-expert model (session
// 22, H100); session 21 measured it faster (H200, model batch 1 2.702 / 2.707 ms on against 2.721 / 2.727
// off). MOE_ROUTER_PROLOGUE=0 turns it off.
EnvSwitch router_prologue_switch("MOE_ROUTER_PROLOGUE");
std::atomic<int64_t> launches{0};

template <int M, int kKind>
__global__ void __launch_bounds__(kThreads)
    router_prologue_kernel(const float* w, int rows, int cols, NormInput norm, cuda::RouteArgs route,
                           cuda::AlignArgs align) {
  extern __shared__ float4 smem4[];  // [M][cols]: the normalised rows
  __shared__ float scratch[32];
  __shared__ float logits[M * kMaxExperts];  // block 0: every block's logits, [M][rows]
  __shared__ cuda::PrologueShared prologue;  // block 0
  cuda::KernelTimelineScope timeline(cuda::kTlF32Gemv);
  cg::cluster_group cluster = cg::this_cluster();
  cuda::cluster_arrive_relaxed();  // this block has started (the sends below wait for the others')
  const int lane = threadIdx.x % 32;
  F32WarpRow<kWarps> wr(w, rows, cols);
  // The norm's parameters are read by every block right after the wait; block 0's routing and grouping
  // read theirs after the cluster barrier (the first: the ints to zero).
  if (threadIdx.x == 0) {
    cuda::warm_param_lines(norm);
    if (cluster.block_rank() == 0) {
      cuda::warm_param_lines(route);
      cuda::warm_param_lines(align);
    }
  }
  pdl_wait();
  timeline.waited();
  pdl_trigger();
  float* x = reinterpret_cast<float*>(smem4);
  norm_rows_to_shared(norm, M, cols, x, scratch);
  timeline.mark(0);  // measuring builds: the norm done
  // f32_gemv's dot products, in its order (the same bits); dead warps (past the last row) only keep to the
  // cluster's barriers below.
  float acc[M] = {};
  if (wr.live) wr.dot<M>(x, acc);
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = warp_sum(acc[m]);
  cuda::cluster_wait();  // every block has started: block 0's logits may be written
  if (wr.live && lane == 0) {
    float* dst = cluster.map_shared_rank(logits, 0);
#pragma unroll
    for (int m = 0; m < M; ++m) dst[m * rows + wr.row] = acc[m];
  }
  cluster.sync();    // every block's logits are in block 0 (release / acquire at cluster scope)
  timeline.mark(1);  // the logits gathered
  if (cluster.block_rank() != 0) return;
  // Block 0 wrote norm.xn_bf16_out (route.x) itself, before the norm's closing barrier; it quantises x from
  // its fp32 rows in shared memory, whose bf16 rounding that is.
  cuda::prologue_small<kPerLane, kKind>(route, align, M, logits, prologue, timeline, 2, x);
}

template <int M, int kKind>
void launch(const float* w, int rows, int cols, const NormInput& norm, const cuda::RouteArgs& route,
            const cuda::AlignArgs& align, cudaStream_t s) {
  allow_dynamic_smem(reinterpret_cast<const void*>(router_prologue_kernel<M, kKind>),
                     static_cast<int>(M * kFp8GemvMaxCols * sizeof(float)));
  const int blocks = (rows + kWarps - 1) / kWarps;
  const size_t smem = static_cast<size_t>(M) * cols * sizeof(float);
  cuda::launch_overlapped_clusters(router_prologue_kernel<M, kKind>, dim3(blocks), dim3(kThreads), smem, s,
                                   static_cast<unsigned>(blocks), w, rows, cols, norm, route, align);
  launches.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

bool router_prologue_fits(int experts, int cols, int M) {
  return experts >= 1 && experts <= kMaxExperts && M >= 1 && M <= kF32GemvMaxM && cols % 4 == 0 &&
         cols <= kFp8GemvMaxCols;
}

bool router_prologue_on() {
  return router_prologue_switch.get();
}

void set_router_prologue(bool on) {
  router_prologue_switch.set(on);
}

int64_t router_prologue_launches() {
  return launches.load(std::memory_order_relaxed);
}

void router_prologue(const float* w, int rows, int cols, int M, const NormInput& norm,
                     const cuda::RouteArgs& route, const cuda::AlignArgs& align, cudaStream_t s) {
  require(router_prologue_fits(rows, cols, M), "router_prologue: ", rows, " experts of ", cols,
          " columns at M=", M, " unsupported");
  // (align's experts are this rank's, at most the router's: block 0 has a thread for each.)
  require(
      route.router.num_experts == rows && align.num_experts <= rows && align.n_pairs <= cuda::kSmallMaxPairs,
      "router_prologue: the prologue's experts or pairs do not match the router");
  const NormInput n = checked_norm_input(&norm, "router_prologue");
  require(!n.combine.y && n.xn_bf16_out == route.x && route.hidden == cols,
          "router_prologue: the MoE must read the norm's bf16 rows");
  with_rows<kF32GemvMaxM>(M, [&](auto m) {
    cuda::with_router_kind(route.router.kind, [&](auto kind) {
      launch<decltype(m)::value, decltype(kind)::value>(w, rows, cols, n, route, align, s);
    });
  });
}

}  // namespace moe::model::gpu
