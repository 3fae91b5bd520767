// Stage 1 (x · W13ᵀ, SiLU(gate) * up, bf16 h) and stage 2 (h · W2ᵀ) of the fused MoE for small token counts
// per expert: a grouped GEMV on CUDA cores that streams each touched expert's weights once per pass of up to
// kTokens tokens. One block = one active expert x one tile of weight rows; lanes of a row group split K, each
// lane keeps fp32 partial sums in a fixed order (deterministic, batch invariant), then a shuffle tree reduces
// them.
#include <cuda_runtime.h>

#include <type_traits>

#include "core/codecs.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/gemv_rows.cuh"
#include "cuda/kernels/launchers.h"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/weight_decode.cuh"

namespace moe::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTokens = 4;  // tokens per pass over the weights

struct Tile {
  int lanes_per_row;  // LPR: lanes that split one row's K
  int rows;           // weight rows per block
};

// Lanes per row: fewer lanes per row means more rows per block and fewer blocks. The estimate is waves x (a
// block's fixed latency chain + its chunks per lane), in units of one memory latency; ties keep more lanes.
template <WFormat F, int STAGE>
Tile choose_tile(int K, int groups, int out_rows) {
  constexpr int kElems = WeightTraits<F>::kElems, kRows = WeightTraits<F>::kRows;
  constexpr int kFixedLatencies = 4, kBlocksPerSm = 2;
  const int chunks = K / kElems, slots = sm_count() * kBlocksPerSm;
  Tile best{32, 0};
  long best_cost = -1;
  for (int lpr : {32, 16, 8}) {
    if (lpr > 8 && chunks < lpr / 2) continue;  // most lanes would idle
    const int rows = kWarps * (32 / lpr) * kRows;
    const int per_block = STAGE == 1 ? rows / 2 : rows;
    const long blocks = static_cast<long>(groups) * ((out_rows + per_block - 1) / per_block);
    const long cost = (blocks + slots - 1) / slots * (kFixedLatencies + (chunks + lpr - 1) / lpr);
    if (best_cost < 0 || cost < best_cost) best = {lpr, rows}, best_cost = cost;
  }
  return best;
}

// Loads the pass's token rows into shared memory as floats, quantised as the kernels' inputs are: stage 1
// copies the prologue's quantised x; stage 2 widens h and quantises it, every warp taking (token, group)
// pairs.
template <int STAGE>
__device__ void load_activations(const GemvArgs& a, float* act, int K, int pair0, int nt) {
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32;
  if (STAGE == 1) {
    for (int i = threadIdx.x; i < kTokens * (K / 4); i += blockDim.x) {
      const int t = i / (K / 4), k4 = i % (K / 4);
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (t < nt) {
        const int token = a.g.sorted_pairs[pair0 + t] / a.g.pair_div;
        v = reinterpret_cast<const float4*>(a.xq + static_cast<size_t>(token) * K)[k4];
      }
      reinterpret_cast<float4*>(act + t * K)[k4] = v;
    }
    __syncthreads();
    return;
  }
  const GroupGrid grid(a.act.quant, K, a.w.phase);
  const int groups = grid.count();
  for (int p = warp; p < kTokens * groups; p += warps) {
    const int t = p / groups, g = p % groups;
    float* row = act + t * K;
    if (t >= nt) {
      for (int k = grid.begin(g) + threadIdx.x % 32; k < grid.end(g); k += 32) row[k] = 0.0f;
      continue;
    }
    const int pair = a.g.sorted_pairs[pair0 + t];
    warp_load_quantize_group(a.act.quant, a.h + static_cast<size_t>(pair) * K, row, grid.begin(g),
                             grid.end(g));
  }
  __syncthreads();
}

template <WFormat F, int STAGE>
__global__ void __launch_bounds__(kThreads, 2) expert_gemv_kernel(GemvArgs a, Tile tile) {
  using Tr = WeightTraits<F>;
  constexpr int R = Tr::kRows, E = Tr::kElems;
  // Stage 1 needs the prologue's grouping at once. Stage 2 reads the grouping (complete before stage 1 could
  // start) and requests its first weights before waiting for stage 1's h: the fetch overlaps stage 1's tail.
  if (STAGE == 1) pdl_wait();
  const int expert = __ldcg(a.g.active + blockIdx.x);  // -1 past the active experts
  if (expert < 0) {
    pdl_trigger();
    return;
  }
  const int pair_begin = __ldcg(a.g.offsets + expert), pair_end = __ldcg(a.g.offsets + expert + 1);
  const int K = STAGE == 1 ? a.w.hidden : a.w.inter;
  const int k_phase = STAGE == 1 ? 0 : a.w.phase;
  const int LPR = tile.lanes_per_row, groups = 32 / LPR;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int lg = lane % LPR;
  const int row0 = (warp * groups + lane / LPR) * R;  // this lane group's first row in the tile
  const int tile_row0 = blockIdx.y * (STAGE == 1 ? tile.rows / 2 : tile.rows);
  const int chunks = K / E;

  extern __shared__ float smem[];
  float* act = smem;                // [kTokens][K]
  float* res = smem + kTokens * K;  // [kTokens][tile.rows]

  RowRef rows[R];
#pragma unroll
  for (int r = 0; r < R; ++r) rows[r] = row_ref<F, STAGE>(a.w, expert, tile_row0, row0 + r, tile.rows);

  for (int p0 = pair_begin; p0 < pair_end; p0 += kTokens) {
    const int nt = min(kTokens, pair_end - p0);
    // The first weight chunk is requested before the activations are loaded: its latency hides behind them.
    Chunk<F, R> next;
    load_chunk<F, R>(next, rows, lg, chunks, k_phase);
    if (STAGE == 2 && p0 == pair_begin) pdl_wait();
    if (p0 == pair_begin) pdl_trigger();
    __syncthreads();  // the previous pass is done with act and res
    load_activations<STAGE>(a, act, K, p0, nt);

    float acc[kTokens][R];
#pragma unroll
    for (int t = 0; t < kTokens; ++t)
#pragma unroll
      for (int r = 0; r < R; ++r) acc[t][r] = 0.0f;

    for (int j = lg; j < chunks; j += LPR) {
      const Chunk<F, R> cur = next;
      load_chunk<F, R>(next, rows, j + LPR, chunks, k_phase);  // one chunk ahead
      accumulate_chunk<F, R, kTokens>(cur, act, K, j * E, nt, acc);
    }

#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t >= nt) break;  // only the pass's tokens are summed (the shuffles dominate at one token)
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float v = lane_group_sum(acc[t][r], LPR);
        if (lg == 0 && row0 + r < tile.rows) res[t * tile.rows + row0 + r] = v;
      }
    }
    __syncthreads();

    const auto pair_of = [&](int t) { return a.g.sorted_pairs[p0 + t]; };
    if (STAGE == 1)
      write_stage1_h(a.w, a.act, expert, res, tile.rows, tile_row0, nt, pair_of, a.h);
    else
      write_stage2_y(a.w, expert, res, tile.rows, tile_row0, nt, pair_of, a.y);
  }
}

// The tile is chosen for the fewest experts a call can touch (top_k, one token), never for this call's M: the
// lanes that split K fix each dot product's summation order, so one choice for every M keeps a token's bits
// the same alone and inside any batch (and the same in the fused decode kernels, which take this choice).
template <WFormat F, int STAGE>
Tile tile_for(const GemvArgs& a) {
  const int K = STAGE == 1 ? a.w.hidden : a.w.inter;
  const int out_rows = STAGE == 1 ? a.w.inter : a.w.hidden;
  const int forced = STAGE == 1 ? a.stage1_lanes_per_row : a.stage2_lanes_per_row;
  return forced > 0 ? Tile{forced, kWarps * (32 / forced) * WeightTraits<F>::kRows}
                    : choose_tile<F, STAGE>(K, a.min_groups, out_rows);
}

template <WFormat F, int STAGE>
void launch_stage(const GemvArgs& a, cudaStream_t stream) {
  const int K = STAGE == 1 ? a.w.hidden : a.w.inter;
  const int out_rows = STAGE == 1 ? a.w.inter : a.w.hidden;
  const Tile tile = tile_for<F, STAGE>(a);
  const int per_block = STAGE == 1 ? tile.rows / 2 : tile.rows;
  const dim3 grid(a.max_groups, (out_rows + per_block - 1) / per_block);
  const size_t smem =
      sizeof(float) * (static_cast<size_t>(kTokens) * K + static_cast<size_t>(kTokens) * tile.rows);
  auto kernel = expert_gemv_kernel<F, STAGE>;
  MOE_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  launch_overlapped(kernel, grid, dim3(kThreads), smem, stream, a, tile);
}

template <int STAGE>
void dispatch(const GemvArgs& a, cudaStream_t stream) {
  switch (a.w.format) {
    case WFormat::Bf16:
      launch_stage<WFormat::Bf16, STAGE>(a, stream);
      break;
    case WFormat::Fp8Block:
      launch_stage<WFormat::Fp8Block, STAGE>(a, stream);
      break;
    case WFormat::Mxfp4:
      launch_stage<WFormat::Mxfp4, STAGE>(a, stream);
      break;
  }
}

}  // namespace

int gemv_lanes_per_row(const GemvArgs& a, int stage) {
  const auto lanes = [&](auto f) {
    constexpr WFormat F = decltype(f)::value;
    return stage == 1 ? tile_for<F, 1>(a).lanes_per_row : tile_for<F, 2>(a).lanes_per_row;
  };
  switch (a.w.format) {
    case WFormat::Bf16:
      return lanes(std::integral_constant<WFormat, WFormat::Bf16>{});
    case WFormat::Fp8Block:
      return lanes(std::integral_constant<WFormat, WFormat::Fp8Block>{});
    default:
      return lanes(std::integral_constant<WFormat, WFormat::Mxfp4>{});
  }
}

void launch_stage1(const GemvArgs& a, cudaStream_t stream) {
  dispatch<1>(a, stream);
}
void launch_stage2(const GemvArgs& a, cudaStream_t stream) {
  dispatch<2>(a, stream);
}

}  // namespace moe::cuda
