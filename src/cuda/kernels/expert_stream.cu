// The streaming tensor-core stages of expert_stream.h.
//
// Block (i, tile) takes active expert active[i] and 16 of its weight rows: for stage 1 the gate rows of
// outputs n0..n0+7 (MMA rows 0-7) and the up rows of the same outputs (MMA rows 8-15), so one thread's
// accumulators hold g and u of the same h element; for stage 2 the down-projection rows h0..h0+15. Its warps
// split K into fixed slices of 64-byte steps (fixed by the layer's shape alone, never by M). In one step each
// lane of a quad loads 16 bytes of each of its two rows (gid, gid + 8) and the 16 bytes of the same K range
// of one token from shared memory; the step's two MMAs read these bytes in a permuted K order that is the
// same for both operands, so the dot product is unchanged and every load is a coalesced 16-byte one. fp8: the
// raw sum of each step is multiplied by its K block's weight and activation scales (two masked sub-steps when
// a 128-block boundary of a TP shard's phase falls inside the step). The warps' partial sums are added in
// warp order: no split K across blocks, no atomics, the same bits on every run, and a token's result does not
// depend on the other tokens in its MMA column tile (each output column of an MMA is its own dot product).
#include "cuda/kernels/expert_stream.h"

#include <algorithm>

#include "core/codecs.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/fp8_rows.h"
#include "cuda/kernels/mma_sm80.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/weight_decode.cuh"

namespace moe::cuda {
namespace {

constexpr int kStepBytes = 64;  // K bytes of one step: 16 per lane of a quad
constexpr int kBatch = 4;       // steps whose weights one warp holds in flight at once
constexpr int kMaxWarps = 16;
constexpr int kColTile = 8;       // tokens per MMA column tile
constexpr int kMaxPassTiles = 4;  // column tiles per pass over the weights (32 tokens)
constexpr size_t kMaxSmem = 227 * 1024;

struct StreamKernelArgs {
  ExpertWeightsDev w;
  GroupingDev g;
  ActivationParams act;
  const uint8_t* in;  // input rows: stage 1 x (bf16 or fp8 codes); stage 2 h (bf16) or its fp8 codes
  const float*
      in_scales;  // fp8: the input rows' 1x128 scales [rows, groups]; null in stage 2: quantise h here
  int in_div;     // input row of pair p: p / in_div
  int k, k_bytes, k_phase;  // K elements and bytes; fp8: K's offset into the checkpoint's 128 grid
  int steps, steps_per_warp, groups, act_stride, pass_tokens;
  uint16_t* h;  // stage 1 out [pairs, P] bf16
  float* y;     // stage 2 out [pairs, H] fp32
};

// Shape-only geometry of one stage.
struct StreamGeom {
  int k, k_bytes, k_phase, steps, steps_per_warp, warps, groups, act_stride, tiles;
};

StreamGeom geometry(const ExpertWeightsDev& w, int stage) {
  const bool fp8 = w.format == WFormat::Fp8Block;
  StreamGeom g{};
  g.k = stage == 1 ? w.hidden : w.inter;
  g.k_bytes = g.k * (fp8 ? 1 : 2);
  g.k_phase = stage == 1 || !fp8 ? 0 : w.phase;
  g.steps = (g.k_bytes + kStepBytes - 1) / kStepBytes;
  g.warps = std::min(kMaxWarps, (g.steps + kBatch - 1) / kBatch);
  g.steps_per_warp = (g.steps + g.warps - 1) / g.warps;
  g.warps = (g.steps + g.steps_per_warp - 1) / g.steps_per_warp;  // every warp has at least one step
  g.groups = fp8 ? (g.k + g.k_phase + 127) / 128 : 0;
  // Rows 64 bytes past a multiple of 128: the 8 token rows one B-fragment load touches hit distinct banks.
  g.act_stride = (g.k_bytes + 127) / 128 * 128 + 64;
  g.tiles = stage == 1 ? (w.inter + 7) / 8 : (w.hidden + 15) / 16;
  return g;
}

size_t weight_scale_bytes(const StreamGeom& g) {
  return (static_cast<size_t>(2 * g.groups) * 4 + 15) / 16 * 16;
}

size_t smem_bytes(const StreamGeom& g, int col_tiles) {
  const size_t rows = static_cast<size_t>(col_tiles) * kColTile;
  const size_t act = rows * g.act_stride + rows * g.groups * 4;
  const size_t red = static_cast<size_t>(g.warps) * col_tiles * 32 * 16;
  return weight_scale_bytes(g) + std::max(act, red);
}

// The 16 input bytes of one step for the thread's token row, from shared memory.
__device__ __forceinline__ uint4 lds16(const uint8_t* p) {
  return *reinterpret_cast<const uint4*>(p);
}

// One step (64 K bytes) of this thread's rows against the pass's column tiles.
template <bool kFp8, int kNT>
__device__ __forceinline__ void stream_step(const StreamKernelArgs& a, int s, const uint4& lo,
                                            const uint4& hi, const uint8_t* act, const float* sx,
                                            const float* sw, int nt, float (&acc)[kNT][4]) {
  const int lane = threadIdx.x % 32, gid = lane / 4, tig = lane % 4;
  const uint8_t* brow = act + gid * a.act_stride + s * kStepBytes + tig * 16;
  if constexpr (!kFp8) {
    const uint32_t a0[4] = {lo.x, hi.x, lo.y, hi.y}, a1[4] = {lo.z, hi.z, lo.w, hi.w};
#pragma unroll
    for (int j = 0; j < kNT; ++j) {
      if (j >= nt) break;
      const uint4 b = lds16(brow + j * kColTile * a.act_stride);
      const uint32_t b0[2] = {b.x, b.y}, b1[2] = {b.z, b.w};
      mma_16x8x32B<false>(acc[j], a0, b0);
      mma_16x8x32B<false>(acc[j], a1, b1);
    }
  } else {
    const int k0 = s * kStepBytes;
    const int b_first = (k0 + a.k_phase) / 128, b_last = (min(k0 + kStepBytes, a.k) - 1 + a.k_phase) / 128;
    const int b_mine = (k0 + tig * 16 + a.k_phase) / 128;
    for (int b = b_first; b <= b_last; ++b) {
      const uint32_t m = b_mine == b ? 0xffffffffu : 0u;  // this lane's 16 bytes lie in block b
      const uint32_t a0[4] = {lo.x & m, hi.x & m, lo.y & m, hi.y & m};
      const uint32_t a1[4] = {lo.z & m, hi.z & m, lo.w & m, hi.w & m};
      const float sw_lo = sw[b], sw_hi = sw[a.groups + b];
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        if (j >= nt) break;
        const uint4 bv = lds16(brow + j * kColTile * a.act_stride);
        const uint32_t b0[2] = {bv.x, bv.y}, b1[2] = {bv.z, bv.w};
        float raw[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        mma_16x8x32B<true>(raw, a0, b0);
        mma_16x8x32B<true>(raw, a1, b1);
        const float* sxj = sx + (j * kColTile + 2 * tig) * a.groups + b;
        const float sx0 = sxj[0], sx1 = sxj[a.groups];
        acc[j][0] = fmaf(raw[0], sw_lo * sx0, acc[j][0]);
        acc[j][1] = fmaf(raw[1], sw_lo * sx1, acc[j][1]);
        acc[j][2] = fmaf(raw[2], sw_hi * sx0, acc[j][2]);
        acc[j][3] = fmaf(raw[3], sw_hi * sx1, acc[j][3]);
      }
    }
  }
}

// Fills the pass's input rows in shared memory (zero past the pass's tokens and past K): copies of x / h rows
// (codes and scales for fp8), or, for stage 2 fp8 without prequantised codes, h quantised here (FORMATS.md
// section 3, the 1x128 grid shifted by the shard's phase), one warp per (row, group).
template <bool kFp8, int kStage, int kNT>
__device__ void stage_inputs(const StreamKernelArgs& a, uint8_t* act, float* sx, const int* pairs, int tp) {
  constexpr int kRows = kNT * kColTile;
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32, lane = threadIdx.x % 32;
  const int chunks = a.act_stride / 16;
  const bool quantise = kFp8 && kStage == 2 && a.in_scales == nullptr;
  if (!quantise) {
    for (int idx = threadIdx.x; idx < kRows * chunks; idx += blockDim.x) {
      const int i = idx / chunks, byte = (idx % chunks) * 16;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (i < tp && byte < a.k_bytes)
        v = __ldcg(reinterpret_cast<const uint4*>(
            a.in + static_cast<size_t>(pairs[i] / a.in_div) * a.k_bytes + byte));
      *reinterpret_cast<uint4*>(act + i * a.act_stride + byte) = v;
    }
    if (kFp8) {
      for (int idx = threadIdx.x; idx < kRows * a.groups; idx += blockDim.x) {
        const int i = idx / a.groups, b = idx % a.groups;
        sx[idx] =
            i < tp ? __ldcg(a.in_scales + static_cast<size_t>(pairs[i] / a.in_div) * a.groups + b) : 0.0f;
      }
    }
    return;
  }
  const uint16_t* h = reinterpret_cast<const uint16_t*>(a.in);
  const GroupGrid grid(AQuant::Fp8, a.k, a.k_phase);
  for (int task = warp; task < kRows * a.groups; task += warps) {
    const int i = task / a.groups, gi = task % a.groups;
    uint8_t* row = act + i * a.act_stride;
    const int g0 = grid.begin(gi), g1 = grid.end(gi);
    float s = 0.0f;
    if (i < tp) {
      s = warp_quantize_fp8_codes(h + static_cast<size_t>(pairs[i]) * a.k, g0, g1, row);
    } else {
      for (int k = g0 + lane * 4; k < g1; k += 128) *reinterpret_cast<uint32_t*>(row + k) = 0u;
    }
    if (lane == 0) sx[i * a.groups + gi] = s;
  }
  const int tail = (a.act_stride - a.k_bytes) / 16;
  for (int idx = threadIdx.x; idx < kRows * tail; idx += blockDim.x)
    *reinterpret_cast<uint4*>(act + (idx / tail) * a.act_stride + a.k_bytes + (idx % tail) * 16) =
        make_uint4(0, 0, 0, 0);
}

template <bool kFp8, int kStage, int kNT>
__global__ void __launch_bounds__(kMaxWarps * 32) expert_stream_kernel(StreamKernelArgs a) {
  // Stage 1 needs the prologue's grouping at once. Stage 2 reads the grouping (complete before stage 1 could
  // start) and requests its first weights before waiting for stage 1's h: the fetch overlaps stage 1's tail.
  if (kStage == 1) pdl_wait();
  const int expert = __ldcg(a.g.active + blockIdx.x);  // -1 past the active experts
  if (expert < 0) {
    pdl_trigger();
    return;
  }
  const int pair_begin = __ldcg(a.g.offsets + expert), pair_end = __ldcg(a.g.offsets + expert + 1);
  const int warp = threadIdx.x / 32, warps = blockDim.x / 32, lane = threadIdx.x % 32;
  const int gid = lane / 4, tig = lane % 4;
  const int H = a.w.hidden, P = a.w.inter;

  // This thread's two weight rows (MMA rows gid and gid + 8).
  int n0;
  bool lo_ok, hi_ok;
  const uint8_t* row_lo;
  const uint8_t* row_hi;
  if (kStage == 1) {
    n0 = blockIdx.y * 8;
    const int n = n0 + gid;
    lo_ok = hi_ok = n < P;
    const uint8_t* base = a.w.w13 + static_cast<size_t>(expert) * 2 * P * a.k_bytes;
    row_lo = base + static_cast<size_t>(lo_ok ? n : 0) * a.k_bytes;
    row_hi = base + static_cast<size_t>(P + (lo_ok ? n : 0)) * a.k_bytes;
  } else {
    n0 = blockIdx.y * 16;
    lo_ok = n0 + gid < H;
    hi_ok = n0 + gid + 8 < H;
    const uint8_t* base = a.w.w2 + static_cast<size_t>(expert) * H * a.k_bytes;
    row_lo = base + static_cast<size_t>(lo_ok ? n0 + gid : 0) * a.k_bytes;
    row_hi = base + static_cast<size_t>(hi_ok ? n0 + gid + 8 : 0) * a.k_bytes;
  }
  const int s_begin = warp * a.steps_per_warp, s_end = min(a.steps, s_begin + a.steps_per_warp);

  uint4 wlo[kBatch], whi[kBatch];
  auto load_batch = [&](int sb) {
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int s = sb + i, kb = s * kStepBytes + tig * 16;
      const bool ok = s < s_end && kb < a.k_bytes;
      wlo[i] = ok && lo_ok ? load_stream16(row_lo + kb) : make_uint4(0, 0, 0, 0);
      whi[i] = ok && hi_ok ? load_stream16(row_hi + kb) : make_uint4(0, 0, 0, 0);
    }
  };

  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ int pass_pairs[kNT * kColTile];
  float* sw = reinterpret_cast<float*>(smem);  // fp8: [2][groups] scales of the lo and hi rows per K block
  uint8_t* region = smem + (static_cast<size_t>(2 * a.groups) * 4 + 15) / 16 * 16;
  uint8_t* act = region;                                                         // [kNT*8][act_stride]
  float* sx = reinterpret_cast<float*>(region + kNT * kColTile * a.act_stride);  // fp8: [kNT*8][groups]
  float* red = reinterpret_cast<float*>(region);  // after the K loop: [warps][kNT][32 lanes][4]

  if (kFp8) {
    const float* ws = static_cast<const float*>(kStage == 1 ? a.w.w13_scale : a.w.w2_scale);
    const int SB = a.w.scale_blocks, hb = (H + 127) / 128;
    const float* lo_scales;
    const float* hi_scales;
    if (kStage == 1) {
      lo_scales = ws + (static_cast<size_t>(expert) * 2 * SB + (n0 + a.w.phase) / 128) * hb;
      hi_scales = lo_scales + static_cast<size_t>(SB) * hb;
    } else {
      lo_scales = hi_scales = ws + (static_cast<size_t>(expert) * hb + n0 / 128) * SB;
    }
    for (int i = threadIdx.x; i < a.groups; i += blockDim.x) {
      sw[i] = lo_scales[i];
      sw[a.groups + i] = hi_scales[i];
    }
  }

  for (int p0 = pair_begin; p0 < pair_end; p0 += a.pass_tokens) {
    const int tp = min(a.pass_tokens, pair_end - p0), nt = (tp + kColTile - 1) / kColTile;
    load_batch(s_begin);  // requested before the inputs are staged: the latency hides behind them
    if (p0 == pair_begin) {
      if (kStage == 2) pdl_wait();
      pdl_trigger();
    }
    __syncthreads();  // the previous pass is done with the shared region
    if (threadIdx.x < kNT * kColTile)
      pass_pairs[threadIdx.x] =
          static_cast<int>(threadIdx.x) < tp ? __ldcg(a.g.sorted_pairs + p0 + threadIdx.x) : -1;
    __syncthreads();
    stage_inputs<kFp8, kStage, kNT>(a, act, sx, pass_pairs, tp);
    __syncthreads();

    float acc[kNT][4];
#pragma unroll
    for (int j = 0; j < kNT; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[j][c] = 0.0f;
    for (int sb = s_begin; sb < s_end; sb += kBatch) {
      if (sb != s_begin) load_batch(sb);
#pragma unroll
      for (int i = 0; i < kBatch; ++i)
        if (sb + i < s_end) stream_step<kFp8, kNT>(a, sb + i, wlo[i], whi[i], act, sx, sw, nt, acc);
    }
    __syncthreads();  // every warp is done reading act before red overwrites it
#pragma unroll
    for (int j = 0; j < kNT; ++j)
      if (j < nt)
        *reinterpret_cast<float4*>(red + ((warp * kNT + j) * 32 + lane) * 4) =
            make_float4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
    __syncthreads();

    // Element (row r, column c) of column tile j sits in lane (r % 8) * 4 + (c % 8) / 2, register
    // (r / 8) * 2 + c % 2 of every warp's fragment; the warps' slices are added in warp order.
    auto reduced = [&](int r, int col) {
      const int j = col / kColTile, c = col % kColTile;
      const int idx = ((r % 8) * 4 + c / 2) * 4 + (r / 8) * 2 + c % 2;
      float v = 0.0f;
      for (int w = 0; w < warps; ++w) v += red[(w * kNT + j) * 128 + idx];
      return v;
    };
    if (kStage == 1) {
      for (int i = threadIdx.x; i < 8 * tp; i += blockDim.x) {
        const int r = i % 8, col = i / 8, n = n0 + r;
        if (n >= P) continue;
        float g = reduced(r, col), u = reduced(r + 8, col);
        if (a.w.w13_bias) {
          g += a.w.w13_bias[static_cast<size_t>(expert) * 2 * P + n];
          u += a.w.w13_bias[static_cast<size_t>(expert) * 2 * P + P + n];
        }
        a.h[static_cast<size_t>(pass_pairs[col]) * P + n] = f32_to_bf16(gated_activation(a.act, g, u));
      }
    } else {
      for (int i = threadIdx.x; i < 16 * tp; i += blockDim.x) {
        const int r = i % 16, col = i / 16, hrow = n0 + r;
        if (hrow >= H) continue;
        float v = reduced(r, col);
        if (a.w.w2_bias) v += a.w.w2_bias[static_cast<size_t>(expert) * H + hrow];
        a.y[static_cast<size_t>(pass_pairs[col]) * H + hrow] = v;
      }
    }
  }
}

template <bool kFp8, int kStage, int kNT>
void launch_one(const StreamKernelArgs& k, const StreamGeom& g, int max_groups, cudaStream_t stream) {
  const size_t smem = smem_bytes(g, kNT);
  auto kernel = expert_stream_kernel<kFp8, kStage, kNT>;
  MOE_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  launch_overlapped(kernel, dim3(static_cast<unsigned>(max_groups), static_cast<unsigned>(g.tiles)),
                    dim3(static_cast<unsigned>(g.warps * 32)), smem, stream, k);
}

template <bool kFp8, int kStage>
void launch_stage(const StreamKernelArgs& k, const StreamGeom& g, int col_tiles, int max_groups,
                  cudaStream_t stream) {
  if (col_tiles == 1)
    launch_one<kFp8, kStage, 1>(k, g, max_groups, stream);
  else if (col_tiles == 2)
    launch_one<kFp8, kStage, 2>(k, g, max_groups, stream);
  else
    launch_one<kFp8, kStage, 4>(k, g, max_groups, stream);
}

// Column tiles per pass: enough for the call's largest possible group (at most 4), fewer when shared memory
// is short. The choice changes no result: each token's column is computed the same way in any tile count.
int column_tiles(const StreamGeom& g1, const StreamGeom& g2, int max_tokens_per_expert) {
  int nt = std::min(kMaxPassTiles, (max_tokens_per_expert + kColTile - 1) / kColTile);
  nt = nt == 3 ? 4 : std::max(nt, 1);
  while (nt > 1 && std::max(smem_bytes(g1, nt), smem_bytes(g2, nt)) > kMaxSmem) nt /= 2;
  return nt;
}

template <bool kFp8>
void run_stages(const GemvArgs& a, const StreamInputs& in, cudaStream_t stream) {
  const StreamGeom g1 = geometry(a.w, 1), g2 = geometry(a.w, 2);
  const int nt = column_tiles(g1, g2, in.max_tokens_per_expert);
  StreamKernelArgs k{};
  k.w = a.w;
  k.g = a.g;
  k.act = a.act;
  k.h = a.h;
  k.y = a.y;
  k.pass_tokens = nt * kColTile;

  const auto set_geom = [&k](const StreamGeom& g) {
    k.k = g.k;
    k.k_bytes = g.k_bytes;
    k.k_phase = g.k_phase;
    k.steps = g.steps;
    k.steps_per_warp = g.steps_per_warp;
    k.groups = g.groups;
    k.act_stride = g.act_stride;
  };
  set_geom(g1);
  k.in = kFp8 ? in.x_codes : reinterpret_cast<const uint8_t*>(in.x);
  k.in_scales = kFp8 ? in.x_scales : nullptr;
  k.in_div = a.g.pair_div;
  launch_stage<kFp8, 1>(k, g1, nt, a.max_groups, stream);

  set_geom(g2);
  k.in = reinterpret_cast<const uint8_t*>(a.h);
  k.in_scales = nullptr;
  k.in_div = 1;
  if (kFp8 && in.h_codes) {
    launch_fp8_rows({a.h, g2.k, g2.k_phase, g2.groups, a.g.sorted_pairs, a.g.offsets + a.w.num_experts,
                     in.pairs_bound, in.h_codes, in.h_scales},
                    stream);
    MOE_CUDA_CHECK_LAUNCH();
    k.in = in.h_codes;
    k.in_scales = in.h_scales;
  }
  launch_stage<kFp8, 2>(k, g2, nt, a.max_groups, stream);
}

}  // namespace

bool stream_supported(const ExpertWeightsDev& w, AQuant q) {
  const bool fp8 = w.format == WFormat::Fp8Block && q == AQuant::Fp8;
  if (!fp8 && !(w.format == WFormat::Bf16 && q == AQuant::None)) return false;
  const StreamGeom g1 = geometry(w, 1), g2 = geometry(w, 2);
  if (fp8 && g2.groups > w.scale_blocks) return false;
  return std::max(smem_bytes(g1, 1), smem_bytes(g2, 1)) <= kMaxSmem;
}

void launch_expert_stream(const GemvArgs& a, const StreamInputs& in, cudaStream_t stream) {
  if (a.w.format == WFormat::Fp8Block)
    run_stages<true>(a, in, stream);
  else
    run_stages<false>(a, in, stream);
}

}  // namespace moe::cuda
