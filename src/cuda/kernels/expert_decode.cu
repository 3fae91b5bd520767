// The fused decode path (expert_decode.h). Both stages are the GEMV's blocks (one expert x one tile of weight
// rows, the GEMV's tile and lane split, gemv_rows.cuh), after the GEMV path's one-block prologue (routing and
// grouping, route.cu), with three changes:
//   - each stage-1 block quantises its tokens' x itself (16-byte loads, then in place);
//   - two chunks of each lane's rows are in flight instead of one;
//   - no combine kernel: each stage-2 block adds itself to a per-row-tile integer counter after writing its
//     fp32 outputs, and the block that arrives last sums the tile's outputs in the combine kernel's order
//     (slots, then the shared expert). The sum's order never depends on which block is last, so the bits
//     are the same on every run and the same as the GEMV path's. Stage 1 zeroes the counters.
#include "cuda/kernels/expert_decode.h"

#include <algorithm>
#include <cstdint>

#include "core/codecs.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/gemv_rows.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/slot_sum.cuh"

namespace moe::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTokens = 4;  // tokens per pass over an expert's weights (as the GEMV)
constexpr int kAhead = 2;   // chunks in flight per lane

// The GEMV's tile for `lpr` lanes per row: weight rows per block.
template <WFormat F>
__host__ __device__ constexpr int tile_rows(int lpr) {
  return kWarps * (32 / lpr) * WeightTraits<F>::kRows;
}

// Widens the bf16 rows src(i)[0, len) for i < n into dst + i * len (len a multiple of 8, rows 16-byte
// aligned) with 16-byte loads spread over the block: the rows cost one memory latency, not one per group.
template <class Src>
__device__ __forceinline__ void block_widen_rows(Src src, int n, int len, float* dst) {
  const int per_row = len / 8;
  for (int i = threadIdx.x; i < n * per_row; i += blockDim.x) {
    const int row = i / per_row, c = i % per_row;
    const uint4 v = *reinterpret_cast<const uint4*>(src(row) + c * 8);
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    float f[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      f[2 * j] = bf16_to_f32(static_cast<uint16_t>(w[j] & 0xffffu));
      f[2 * j + 1] = bf16_to_f32(static_cast<uint16_t>(w[j] >> 16));
    }
    float4* d = reinterpret_cast<float4*>(dst + static_cast<size_t>(row) * len + c * 8);
    d[0] = make_float4(f[0], f[1], f[2], f[3]);
    d[1] = make_float4(f[4], f[5], f[6], f[7]);
  }
}

// The lane group's R rows dotted with the nt activation rows in act (K floats apart), each lane's chunks
// lg, lg + lpr, ... in order with kAhead chunks requested ahead; `ring` holds the first kAhead already.
template <WFormat F, int R>
__device__ __forceinline__ void dot_rows(Chunk<F, R> (&ring)[kAhead], const RowRef* rows, const float* act,
                                         int K, int nt, int lg, int lpr, int k_phase,
                                         float (&acc)[kTokens][R]) {
  constexpr int E = WeightTraits<F>::kElems;
  const int chunks = K / E;
  for (int j0 = lg; j0 < chunks; j0 += kAhead * lpr) {
#pragma unroll
    for (int d = 0; d < kAhead; ++d) {
      const int j = j0 + d * lpr;
      if (j < chunks) accumulate_chunk<F, R, kTokens>(ring[d], act, K, j * E, nt, acc);
      load_chunk<F, R>(ring[d], rows, j + kAhead * lpr, chunks, k_phase);
    }
  }
}

// One block = one distinct expert of the call (or the shared expert: the grid's last x) x one GEMV tile of
// rows. STAGE 1: x W13ᵀ and the gated activation into bf16 h. STAGE 2: h W2ᵀ into fp32 y, then the combine
// by the tile's last block.
template <WFormat F, int STAGE>
__global__ void __launch_bounds__(kThreads, 2) decode_kernel(DecodeArgs a, int M) {
  constexpr int R = WeightTraits<F>::kRows;
  __shared__ int last_block;
  extern __shared__ float smem[];
  // Stage 1 waits for the prologue's grouping. Stage 2 reads the grouping (complete before stage 1 could
  // start) and requests its first weights before waiting for stage 1's h.
  if (STAGE == 1) pdl_wait();
  const bool is_shared = a.has_shared && blockIdx.x == gridDim.x - 1;
  const ExpertWeightsDev w = is_shared ? a.shared : a.experts;
  const int lpr = is_shared ? a.lanes[1][STAGE - 1] : a.lanes[0][STAGE - 1];
  const int rows_per_tile = tile_rows<F>(lpr), K = a.router.top_k, H = w.hidden, P = w.inter;
  const int out_per_tile = STAGE == 1 ? rows_per_tile / 2 : rows_per_tile;
  const int tile_row0 = blockIdx.y * out_per_tile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, lg = lane % lpr;
  if (STAGE == 1 && blockIdx.x == 0 && blockIdx.y == 0)
    for (int i = threadIdx.x; i < a.num_counters; i += blockDim.x) a.counters[i] = 0;  // for stage 2
  if (tile_row0 >= (STAGE == 1 ? P : H)) return;

  const int expert = is_shared ? 0 : __ldcg(a.grouping.active + blockIdx.x);  // -1 past the active experts
  if (expert < 0) return;
  const int pair_begin = is_shared ? 0 : __ldcg(a.grouping.offsets + expert);
  const int n = is_shared ? M : __ldcg(a.grouping.offsets + expert + 1) - pair_begin;
  const auto pair_of = [&](int i) {
    return is_shared ? i : __ldcg(a.grouping.sorted_pairs + pair_begin + i);
  };

  const int Kdim = STAGE == 1 ? H : P;
  const int k_phase = STAGE == 1 ? 0 : w.phase;
  float* act = smem;                   // [kTokens][Kdim]
  float* res = smem + kTokens * Kdim;  // [kTokens][rows_per_tile]
  const int row0 = (warp * (32 / lpr) + lane / lpr) * R;
  RowRef rows[R];
#pragma unroll
  for (int r = 0; r < R; ++r) rows[r] = row_ref<F, STAGE>(w, expert, tile_row0, row0 + r, rows_per_tile);
  const GroupGrid grid(a.act.quant, Kdim, k_phase);
  const int groups = grid.count();

  for (int p0 = 0; p0 < n; p0 += kTokens) {
    const int nt = min(kTokens, n - p0);
    // The weights are requested before the activations are ready (in stage 2, before stage 1 is done).
    Chunk<F, R> ring[kAhead];
#pragma unroll
    for (int d = 0; d < kAhead; ++d)
      load_chunk<F, R>(ring[d], rows, lg + d * lpr, Kdim / WeightTraits<F>::kElems, k_phase);
    if (STAGE == 2 && p0 == 0) pdl_wait();  // stage 1's h
    __syncthreads();                        // the previous pass is done with act and res
    block_widen_rows(
        [&](int t) -> const uint16_t* {
          const int pair = pair_of(p0 + t);
          if (STAGE == 1) return a.x + static_cast<size_t>(is_shared ? pair : pair / K) * H;
          return (is_shared ? a.shared_h : a.h) + static_cast<size_t>(pair) * P;
        },
        nt, Kdim, act);
    __syncthreads();
    for (int q = warp; q < nt * groups; q += kWarps)
      warp_quantize_group(a.act.quant, act + (q / groups) * Kdim, grid.begin(q % groups),
                          grid.end(q % groups));
    __syncthreads();

    float acc[kTokens][R];
#pragma unroll
    for (int t = 0; t < kTokens; ++t)
#pragma unroll
      for (int r = 0; r < R; ++r) acc[t][r] = 0.0f;
    dot_rows<F, R>(ring, rows, act, Kdim, nt, lg, lpr, k_phase, acc);
#pragma unroll
    for (int t = 0; t < kTokens; ++t) {
      if (t >= nt) break;  // only the pass's tokens are summed
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float v = lane_group_sum(acc[t][r], lpr);
        if (lg == 0) res[t * rows_per_tile + row0 + r] = v;
      }
    }
    if (p0 + kTokens >= n) pdl_trigger();  // past the weight loads: the next kernel may launch
    __syncthreads();

    const auto pass_pair = [&](int t) { return pair_of(p0 + t); };
    if (STAGE == 1)
      write_stage1_h(w, a.act, expert, res, rows_per_tile, tile_row0, nt, pass_pair,
                     is_shared ? a.shared_h : a.h);
    else
      write_stage2_y(w, expert, res, rows_per_tile, tile_row0, nt, pass_pair, is_shared ? a.shared_y : a.y);
  }
  if (STAGE == 1) return;

  // Stage 2: count this block into its combine tile; the last of the tile's blocks sums it.
  const int combine_tile = tile_row0 / a.combine_rows;
  const int row_begin = combine_tile * a.combine_rows, rows_here = min(a.combine_rows, H - row_begin);
  const auto tiles_in = [&](int per_tile) { return (rows_here + per_tile - 1) / per_tile; };  // tiles of it
  const int contributions = __ldcg(a.grouping.num_active) * tiles_in(tile_rows<F>(a.lanes[0][1])) +
                            (a.has_shared ? tiles_in(tile_rows<F>(a.lanes[1][1])) : 0);
  __threadfence();  // this block's y before its count
  __syncthreads();
  if (threadIdx.x == 0) last_block = atomicAdd(a.counters + combine_tile, 1) == contributions - 1;
  __syncthreads();
  if (!last_block) return;
  __threadfence();  // the other blocks' y, after their counts
  for (int i = threadIdx.x; i < M * rows_here; i += blockDim.x) {
    const int t = i / rows_here, hrow = row_begin + i % rows_here;
    float sum = slot_sum(a.topk_ids, a.topk_weights, a.y, K, H, t, hrow);
    if (a.has_shared)
      sum = fmaf(__ldcg(a.shared_gate + t), __ldcg(a.shared_y + static_cast<size_t>(t) * H + hrow), sum);
    a.out[static_cast<size_t>(t) * H + hrow] = f32_to_bf16(sum);
  }
}

template <WFormat F>
size_t smem_bytes(const DecodeArgs& a, int stage) {
  const int K = stage == 1 ? a.experts.hidden : std::max(a.experts.inter, a.has_shared ? a.shared.inter : 0);
  int rows = tile_rows<F>(a.lanes[0][stage - 1]);
  if (a.has_shared) rows = std::max(rows, tile_rows<F>(a.lanes[1][stage - 1]));
  return sizeof(float) * kTokens * (static_cast<size_t>(K) + rows);
}

template <WFormat F>
int grid_tiles(const DecodeArgs& a, int stage) {
  const auto tiles = [&](int out_rows, int lpr) {
    const int per = stage == 1 ? tile_rows<F>(lpr) / 2 : tile_rows<F>(lpr);
    return (out_rows + per - 1) / per;
  };
  const int routed_out = stage == 1 ? a.experts.inter : a.experts.hidden;
  int t = tiles(routed_out, a.lanes[0][stage - 1]);
  if (a.has_shared)
    t = std::max(t, tiles(stage == 1 ? a.shared.inter : a.shared.hidden, a.lanes[1][stage - 1]));
  return t;
}

template <WFormat F>
int combine_rows(const DecodeArgs& a) {
  int rows = tile_rows<F>(a.lanes[0][1]);
  if (a.has_shared) rows = std::max(rows, tile_rows<F>(a.lanes[1][1]));
  return rows;
}

constexpr size_t kMaxDynamicSmem = 200 * 1024;  // below the 227 KB opt-in limit, with the static arrays

bool lanes_ok(int lpr) {
  return lpr == 8 || lpr == 16 || lpr == 32;
}

template <WFormat F>
bool supported_format(const DecodeArgs& a) {
  return smem_bytes<F>(a, 1) <= kMaxDynamicSmem && smem_bytes<F>(a, 2) <= kMaxDynamicSmem &&
         (a.experts.hidden + combine_rows<F>(a) - 1) / combine_rows<F>(a) <= a.num_counters;
}

template <WFormat F, int STAGE>
void launch_stage(DecodeArgs a, int M, cudaStream_t stream) {
  const int E = a.router.experts_local;
  const int slots = std::min(E, M * a.router.top_k) + (a.has_shared ? 1 : 0);
  a.combine_rows = combine_rows<F>(a);
  auto kernel = decode_kernel<F, STAGE>;
  const size_t smem = smem_bytes<F>(a, STAGE);
  MOE_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  launch_overlapped(kernel, dim3(slots, grid_tiles<F>(a, STAGE)), dim3(kThreads), smem, stream, a, M);
  MOE_CUDA_CHECK_LAUNCH();
}

template <int STAGE>
void launch_stage_for(const DecodeArgs& a, int M, cudaStream_t stream) {
  switch (a.experts.format) {
    case WFormat::Bf16:
      return launch_stage<WFormat::Bf16, STAGE>(a, M, stream);
    case WFormat::Fp8Block:
      return launch_stage<WFormat::Fp8Block, STAGE>(a, M, stream);
    case WFormat::Mxfp4:
      return launch_stage<WFormat::Mxfp4, STAGE>(a, M, stream);
  }
}

}  // namespace

bool decode_supported(const DecodeArgs& a, int M) {
  if (M < 1 || M > kDecodeMaxTokens) return false;
  if (!lanes_ok(a.lanes[0][0]) || !lanes_ok(a.lanes[0][1])) return false;
  if (a.has_shared && (!lanes_ok(a.lanes[1][0]) || !lanes_ok(a.lanes[1][1]))) return false;
  if (a.has_shared && a.shared.hidden != a.experts.hidden) return false;
  if (reinterpret_cast<uintptr_t>(a.x) % 16 != 0) return false;  // x rows are read 16 bytes at a time
  switch (a.experts.format) {
    case WFormat::Bf16:
      return supported_format<WFormat::Bf16>(a);
    case WFormat::Fp8Block:
      return supported_format<WFormat::Fp8Block>(a);
    default:
      return supported_format<WFormat::Mxfp4>(a);
  }
}

void launch_decode(const DecodeArgs& a, int M, cudaStream_t stream) {
  launch_stage_for<1>(a, M, stream);
  launch_stage_for<2>(a, M, stream);
}

void launch_decode_stage2(const DecodeArgs& a, int M, cudaStream_t stream) {
  launch_stage_for<2>(a, M, stream);
}

}  // namespace moe::cuda
