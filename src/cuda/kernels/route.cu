// The call's prologue: routing (a warp per token), the shared expert's gate, and each token's activations
// quantised once for stage 1 (xq, dequantised fp32 values). For small M one block also groups the pairs by
// expert, so the whole prologue is a single launch; for large M routing spreads over many blocks and a
// separate single-block kernel groups.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/codecs.h"
#include "core/error.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/block_align.cuh"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/launchers.h"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/warp_router.cuh"

MOE_KERNEL_TIMELINE_TU(route)

namespace moe::cuda {
namespace {

constexpr int kRouteWarps = 8;

// Token t's shared-expert gate, sigmoid(shared_gate . x), by one warp in a fixed order (lane-strided
// products, then a shuffle tree); 1 when there is no gate weight (DeepSeek's shared_experts).
__device__ void warp_shared_gate(const RouteArgs& a, int t) {
  const int lane = threadIdx.x % 32;
  float g = 1.0f;
  if (a.shared_gate_weight) {
    const uint16_t* x = a.x + static_cast<size_t>(t) * a.hidden;
    float s = 0.0f;
    for (int h = lane; h < a.hidden; h += 32) s = fmaf(bf16_to_f32(x[h]), a.shared_gate_weight[h], s);
    s = warp_sum(s);
    g = 1.0f / (1.0f + expf(-s));
  }
  if (lane == 0) {
    a.shared_gate_out[t] = g;
    a.shared_pairs[t] = t;
  }
}

__device__ void write_shared_grouping(const RouteArgs& a, int M) {
  a.shared_offsets[0] = 0;
  a.shared_offsets[1] = M;
  a.shared_active[0] = 0;
  a.shared_num_active[0] = 1;
}

// Token t's activation group g for stage 1: fp8 codes + scale when the streaming path asks for them, else the
// dequantised values in xq (the GEMV path); nothing when neither is wanted (bf16 streamed straight from x).
__device__ __forceinline__ void warp_quantize_token_group(const RouteArgs& a, int t, int g,
                                                          const GroupGrid& grid) {
  const size_t row = static_cast<size_t>(t) * a.hidden;
  if (a.x_codes) {
    const float s = warp_quantize_fp8_codes(a.x + row, grid.begin(g), grid.end(g), a.x_codes + row);
    if (threadIdx.x % 32 == 0) a.x_scales[static_cast<size_t>(t) * grid.count() + g] = s;
  } else if (a.xq) {
    warp_load_quantize_group(a.quant, a.x + row, a.xq + row, grid.begin(g), grid.end(g));
  }
}

template <int kPerLane>
__global__ void __launch_bounds__(kRouteWarps * 32) route_kernel(RouteArgs a, int M) {
  // The first kernel of a call: launched to overlap the previous kernel's tail, it waits for it before
  // touching memory (the previous call still reads the workspaces), then lets the next kernel start early.
  KernelTimelineScope timeline(kTlPrologue);
  pdl_wait();
  timeline.waited();
  pdl_trigger();
  // Warp w routes token w (w < M) and quantises the (token, group) item w (w < M x groups): one group per
  // warp, so the quantisation is spread over the grid instead of a token's groups running one after another.
  const int w = blockIdx.x * kRouteWarps + threadIdx.x / 32;
  if (w < M) {
    const int K = a.router.top_k, E = a.router.num_experts;
    warp_route<kPerLane>(a.router, a.logits + static_cast<size_t>(w) * E,
                         a.topk_ids + static_cast<size_t>(w) * K,
                         a.topk_weights + static_cast<size_t>(w) * K);
    if (a.shared_gate_out) {
      warp_shared_gate(a, w);
      if (w == 0 && threadIdx.x % 32 == 0) write_shared_grouping(a, M);
    }
  }
  const GroupGrid grid(a.quant, a.hidden, 0);
  if (a.x_rows) {
    const int t = w - M;
    if (t >= 0 && t < M) {
      const size_t row = static_cast<size_t>(t) * a.hidden;
      warp_fp8_row(a.x + row, a.hidden, 0, grid.count(), a.x_codes + row,
                   a.x_scales + static_cast<size_t>(t) * grid.count());
    }
    return;
  }
  if (w < M * grid.count()) warp_quantize_token_group(a, w / grid.count(), w % grid.count(), grid);
}

constexpr int kSmallMaxPairs = 1024;
// Past a few tokens the one-block prologue's 32 warps quantise many (token, group) items each, one after
// another (measured in the model at 64 tokens: 88 us against 11 at one token); the many-block route kernel
// gives every item its own warp, for one more launch (the grouping).
constexpr int kSmallMaxTokens = 8;

template <int kPerLane>
__global__ void __launch_bounds__(kAlignThreads) prologue_small_kernel(RouteArgs a, AlignArgs al, int M) {
  __shared__ AlignShared s;
  __shared__ int ids[kSmallMaxPairs];
  KernelTimelineScope timeline(kTlPrologue);
  pdl_wait();  // the first kernel of a call: as route_kernel
  timeline.waited();
  pdl_trigger();
  for (int i = threadIdx.x; i < al.n_zero_ints; i += blockDim.x) al.zero_ints[i] = 0;
  const int warp = threadIdx.x / 32, warps = kAlignThreads / 32, lane = threadIdx.x % 32;
  const int K = a.router.top_k, E = a.router.num_experts;
  for (int t = warp; t < M; t += warps) {
    const int id = warp_route<kPerLane>(a.router, a.logits + static_cast<size_t>(t) * E,
                                        a.topk_ids + static_cast<size_t>(t) * K,
                                        a.topk_weights + static_cast<size_t>(t) * K);
    if (lane < K) ids[t * K + lane] = id;
    if (a.shared_gate_out) warp_shared_gate(a, t);
  }
  // Every (token, group) of the activations is quantised by some warp, in parallel; the items are dealt
  // from the last warp down, so the routing warps (the first M) start on them last.
  const GroupGrid grid(a.quant, a.hidden, 0);
  const int groups = grid.count();
  for (int p = warps - 1 - warp; p < M * groups; p += warps)
    warp_quantize_token_group(a, p / groups, p % groups, grid);
  if (a.shared_gate_out && threadIdx.x == 0) write_shared_grouping(a, M);
  __syncthreads();
  timeline.mark(0);  // measuring builds: routed and quantised; the grouping starts
  block_align(ids, al, s);
}

}  // namespace

bool prologue_fits_one_block(int M, int top_k) {
  return M * top_k <= kSmallMaxPairs && M <= kSmallMaxTokens;
}

// Experts per lane of the warp router: the smallest instantiation that holds E.
template <typename Launch>
void with_per_lane(int E, Launch&& launch) {
  if (E <= 128)
    launch(std::integral_constant<int, 4>{});
  else if (E <= 256)
    launch(std::integral_constant<int, 8>{});
  else if (E <= 512)
    launch(std::integral_constant<int, 16>{});
  else
    launch(std::integral_constant<int, 32>{});
}

void launch_route(const RouteArgs& a, int M, cudaStream_t stream) {
  // x by row (warp_fp8_row): 16-byte loads of each row.
  require(!a.x_rows || (a.hidden % 8 == 0 && reinterpret_cast<uintptr_t>(a.x) % 16 == 0),
          "route: x rows for the grouped GEMM must be 16-byte aligned (hidden ", a.hidden, ")");
  // No quantisation items when no stage wants x quantised here.
  const int items = a.x_rows ? 2 * M : (a.xq || a.x_codes) ? M * GroupGrid(a.quant, a.hidden, 0).count() : 0;
  const int warps = std::max(M, items);
  with_per_lane(a.router.num_experts, [&](auto per_lane) {
    launch_overlapped(route_kernel<decltype(per_lane)::value>, dim3((warps + kRouteWarps - 1) / kRouteWarps),
                      dim3(kRouteWarps * 32), 0, stream, a, M);
  });
}

void launch_prologue_small(const RouteArgs& a, const AlignArgs& al, int M, cudaStream_t stream) {
  with_per_lane(a.router.num_experts, [&](auto per_lane) {
    launch_overlapped(prologue_small_kernel<decltype(per_lane)::value>, dim3(1), dim3(kAlignThreads), 0,
                      stream, a, al, M);
  });
}

}  // namespace moe::cuda
