// The call's prologue: routing (a warp per token), the shared expert's gate, and each token's activations
// quantised once for stage 1 (xq, dequantised fp32 values). For small M one block also groups the pairs by
// expert, so the whole prologue is a single launch; for large M routing spreads over many blocks and a
// separate single-block kernel groups.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/codecs.h"
#include "core/env_flag.h"
#include "core/error.h"
#include "cuda/kernels/kernel_timeline.cuh"
#include "cuda/kernels/launchers.h"
#include "cuda/kernels/param_warmup.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/prologue_small.cuh"
#include "cuda/kernels/router_kinds.h"

MOE_KERNEL_TIMELINE_TU(route)

namespace moe::cuda {
namespace {

constexpr int kRouteWarps = 8;

template <int kPerLane, int kKind>
__global__ void __launch_bounds__(kRouteWarps * 32) route_kernel(RouteArgs a, int M) {
  // The first kernel of a call: launched to overlap the previous kernel's tail, it waits for it before
  // touching memory (the previous call still reads the workspaces), then lets the next kernel start early.
  KernelTimelineScope timeline(kTlPrologue);
  if (threadIdx.x == 0) {
    warm_param_lines(a);
    warm_param_lines(M);
  }
  pdl_wait();
  timeline.waited();
  pdl_trigger();
  // Warp w routes token w (w < M) and quantises the (token, group) item w (w < M x groups): one group per
  // warp, so the quantisation is spread over the grid instead of a token's groups running one after another.
  const int w = blockIdx.x * kRouteWarps + threadIdx.x / 32;
  if (w < M) {
    const int K = a.router.top_k, E = a.router.num_experts;
    warp_route<kPerLane, kKind>(a.router, a.logits + static_cast<size_t>(w) * E,
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
  if (w < M * grid.count()) warp_quantize_token_group(a, w / grid.count(), w % grid.count(), grid, nullptr);
}

// Past a few tokens the one-block prologue's 32 warps quantise many (token, group) items each, one after
// another (measured in the model at 64 tokens: 88 us against 11 at one token); the many-block route kernel
// gives every item its own warp, for one more launch (the grouping). small_prologue_max_tokens (launchers.h).
EnvCount small_prologue_tokens_setting("MOE_SMALL_PROLOGUE_TOKENS", 8, 1, kSmallMaxPairs);

template <int kPerLane, int kKind>
__global__ void __launch_bounds__(kAlignThreads) prologue_small_kernel(RouteArgs a, AlignArgs al, int M) {
  __shared__ PrologueShared s;
  KernelTimelineScope timeline(kTlPrologue);
  if (threadIdx.x == 0) {  // warp 0 routes first after the wait
    warm_param_lines(a);
    warm_param_lines(al);
  }
  pdl_wait();  // the first kernel of a call: as route_kernel
  timeline.waited();
  pdl_trigger();
  // marks 0, 1: routed; the grouping starts
  prologue_small<kPerLane, kKind>(a, al, M, a.logits, s, timeline, 0);
}

}  // namespace

bool prologue_fits_one_block(int M, int top_k) {
  return M * top_k <= kSmallMaxPairs && M <= small_prologue_max_tokens();
}

int small_prologue_max_tokens() {
  return small_prologue_tokens_setting.get();
}

void set_small_prologue_max_tokens(int tokens) {
  small_prologue_tokens_setting.set(tokens);
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
    with_router_kind(a.router.kind, [&](auto kind) {
      launch_overlapped(route_kernel<decltype(per_lane)::value, decltype(kind)::value>,
                        dim3((warps + kRouteWarps - 1) / kRouteWarps), dim3(kRouteWarps * 32), 0, stream, a,
                        M);
    });
  });
}

void launch_prologue_small(const RouteArgs& a, const AlignArgs& al, int M, cudaStream_t stream) {
  with_per_lane(a.router.num_experts, [&](auto per_lane) {
    with_router_kind(a.router.kind, [&](auto kind) {
      launch_overlapped(prologue_small_kernel<decltype(per_lane)::value, decltype(kind)::value>, dim3(1),
                        dim3(kAlignThreads), 0, stream, a, al, M);
    });
  });
}

}  // namespace moe::cuda
