// The fused decode path (expert_decode.h): stage 1 with the routing, grouping and activation quantisation
// folded in, stage 2 with the shared expert and the weighted combine folded in. Both keep several 16-byte
// weight loads in flight per lane (unit_stream.cuh) and compute every dot product as the GEMV does.
#include "cuda/kernels/expert_decode.h"

#include <algorithm>
#include <cstdint>

#include "core/codecs.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/act_quant.cuh"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"
#include "cuda/kernels/shared_gate.cuh"
#include "cuda/kernels/unit_stream.cuh"
#include "cuda/kernels/warp_router.cuh"

namespace moe::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kTokens = 4;       // stage 1: tokens per pass over an expert's weights
constexpr int kStage1Units = 2;  // stage 1: units per warp in a block's tile
constexpr int kStage2Rows = 8;   // stage 2: output rows per block
constexpr int kMaxSlots = 32;    // top_k bound
constexpr int kMaxPairs = kDecodeMaxTokens * kMaxSlots;
constexpr int kMaxExpertWords = 32;  // E <= 1024

static_assert(kDecodeMaxTokens <= kWarps, "stage 1 routes one token per warp");

// Stage-1 tile: rows per block (gate rows then up rows of tile_rows / 2 intermediate columns).
__host__ __device__ constexpr int stage1_tile_rows(int lpr) {
  return kWarps * kStage1Units * (32 / lpr) * kUnitRows;
}

struct Stage1Shared {
  int ids[kMaxPairs];
  float weights[kMaxPairs];
  unsigned used[kMaxExpertWords];
  int pairs[kDecodeMaxTokens];
  int expert, num_pairs;
};

// The block's expert: the `slot`-th smallest distinct expert the call's pairs chose (-1 when there are
// fewer), and its pairs in ascending order. Called by every thread; ids must be complete.
__device__ void find_slot_expert(Stage1Shared& s, int n_pairs, int slot) {
  if (threadIdx.x < kMaxExpertWords) s.used[threadIdx.x] = 0u;
  __syncthreads();
  for (int p = threadIdx.x; p < n_pairs; p += blockDim.x) {
    const int id = s.ids[p];
    if (id >= 0) atomicOr(&s.used[id / 32], 1u << (id % 32));  // integer OR: order does not matter
  }
  __syncthreads();
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    const unsigned word = s.used[lane];
    const int count = __popc(word);
    int incl = count;
    for (int off = 1; off < 32; off *= 2) {
      const int o = __shfl_up_sync(kFullMask, incl, off);
      if (lane >= off) incl += o;
    }
    const int excl = incl - count;
    if (lane == 31 && slot >= incl) s.expert = -1;
    if (slot >= excl && slot < incl) s.expert = lane * 32 + static_cast<int>(__fns(word, 0, slot - excl + 1));
    __syncwarp();
    const int e = s.expert;
    int n = 0;
    for (int p0 = 0; p0 < n_pairs && e >= 0; p0 += 32) {
      const int p = p0 + lane;
      const bool mine = p < n_pairs && s.ids[p] == e;
      const unsigned ballot = __ballot_sync(kFullMask, mine);
      if (mine) s.pairs[n + __popc(ballot & ((1u << lane) - 1u))] = p;
      n += __popc(ballot);
    }
    if (lane == 0) s.num_pairs = n;
  }
  __syncthreads();
}

// Widens the bf16 rows src(i)[0, len) for i < n into dst + i * dst_stride (len a multiple of 8, rows 16-byte
// aligned): 16-byte loads spread over the whole block, so the rows cost one memory latency, not one per
// group. Rows src(i) == nullptr are skipped.
template <class Src>
__device__ __forceinline__ void block_widen_rows(Src src, int n, int len, float* dst, int dst_stride) {
  const int per_row = len / 8;
  for (int i = threadIdx.x; i < n * per_row; i += blockDim.x) {
    const int row = i / per_row, c = i % per_row;
    const uint16_t* from = src(row);
    if (!from) continue;
    const uint4 v = *reinterpret_cast<const uint4*>(from + c * 8);
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    float f[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      f[2 * j] = bf16_to_f32(static_cast<uint16_t>(w[j] & 0xffffu));
      f[2 * j + 1] = bf16_to_f32(static_cast<uint16_t>(w[j] >> 16));
    }
    float4* d = reinterpret_cast<float4*>(dst + static_cast<size_t>(row) * dst_stride + c * 8);
    d[0] = make_float4(f[0], f[1], f[2], f[3]);
    d[1] = make_float4(f[4], f[5], f[6], f[7]);
  }
}

// One block = one distinct expert of the call (or the shared expert, the grid's last x) x one tile of
// intermediate columns.
template <WFormat F, int PER_LANE>
__global__ void __launch_bounds__(kThreads, 2) decode_stage1_kernel(DecodeArgs a, int M) {
  // The first kernel of a call: the logits and x come from the previous kernel, and the previous call may
  // still read h. Stage 2 is let in only once every block is past its weight loads (below): blocks of it
  // launched earlier would sit in SM slots that this grid's later blocks need.
  pdl_wait();
  __shared__ Stage1Shared s;
  extern __shared__ float smem[];
  const bool is_shared = a.has_shared && blockIdx.x == gridDim.x - 1;
  const ExpertWeightsDev w = is_shared ? a.shared : a.experts;
  const int lpr = is_shared ? a.lanes[1][0] : a.lanes[0][0], tile_rows = stage1_tile_rows(lpr),
            half = tile_rows / 2;
  const int tile_col0 = blockIdx.y * half;
  if (tile_col0 >= w.inter) return;
  const int K = a.router.top_k, H = w.hidden, P = w.inter;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  int expert = 0, n = M;
  if (!is_shared) {
    if (warp < M)
      warp_route<PER_LANE>(a.router, a.logits + static_cast<size_t>(warp) * a.router.num_experts,
                           s.ids + warp * K, s.weights + warp * K);
    __syncthreads();
    find_slot_expert(s, M * K, blockIdx.x);
    expert = s.expert;
    n = s.num_pairs;
    if (expert < 0) return;
  }

  float* act = smem;                // [kTokens][H]
  float* res = smem + kTokens * H;  // [kTokens][tile_rows]
  const int chunks = H / WeightTraits<F>::kElems;
  const auto unit_row0 = [&](int u) {
    return ((warp * kStage1Units + u) * (32 / lpr) + lane / lpr) * kUnitRows;
  };
  const auto unit_at = [&](int u) {
    DotUnit d;
    const int row0 = unit_row0(u);
#pragma unroll
    for (int r = 0; r < kUnitRows; ++r) d.rows[r] = row_ref<F, 1>(w, expert, tile_col0, row0 + r, tile_rows);
    d.act = act;
    d.act_stride = H;
    d.chunks = chunks;
    d.lpr = lpr;
    d.k_phase = 0;
    return d;
  };
  const auto pair_of = [&](int i) { return is_shared ? i : s.pairs[i]; };
  const GroupGrid grid(a.act.quant, H, 0);
  const int groups = grid.count();

  for (int p0 = 0; p0 < n; p0 += kTokens) {
    const int nt = min(kTokens, n - p0);
    UnitStream<F, kTokens, decltype(unit_at)> stream(unit_at, kStage1Units);
    stream.prefill();  // the weights are requested before the activations are quantised
    __syncthreads();   // the previous pass is done with act and res
    block_widen_rows(
        [&](int t) {
          const int token = is_shared ? pair_of(p0 + t) : pair_of(p0 + t) / K;
          return a.x + static_cast<size_t>(token) * H;
        },
        nt, H, act, H);
    __syncthreads();
    for (int q = warp; q < nt * groups; q += kWarps)
      warp_quantize_group(a.act.quant, act + (q / groups) * H, grid.begin(q % groups), grid.end(q % groups));
    __syncthreads();
    stream.run(nt, [&](int u, float(&acc)[kTokens][kUnitRows]) {
      const int row0 = unit_row0(u);
      if (lane % lpr != 0) return;
#pragma unroll
      for (int t = 0; t < kTokens; ++t)
#pragma unroll
        for (int r = 0; r < kUnitRows; ++r) res[t * tile_rows + row0 + r] = acc[t][r];
    });
    if (p0 + kTokens >= n) pdl_trigger();  // stage 2 may start requesting its weights
    __syncthreads();
    uint16_t* h = is_shared ? a.shared_h : a.h;
    for (int i = threadIdx.x; i < nt * half; i += blockDim.x) {
      const int t = i / half, c = i % half, col = tile_col0 + c;
      if (col >= P) continue;
      float g = res[t * tile_rows + c], u = res[t * tile_rows + half + c];
      if (w.w13_bias) {
        g += w.w13_bias[static_cast<size_t>(expert) * 2 * P + col];
        u += w.w13_bias[static_cast<size_t>(expert) * 2 * P + P + col];
      }
      h[static_cast<size_t>(pair_of(p0 + t)) * P + col] = f32_to_bf16(gated_activation(a.act, g, u));
    }
  }
}

// One block = kStage2Rows output rows x one token: its top-k experts' rows and the shared expert's, summed in
// the combine kernel's order.
template <WFormat F, int PER_LANE>
__global__ void __launch_bounds__(kThreads, 2) decode_stage2_kernel(DecodeArgs a) {
  __shared__ int ids[kMaxSlots];
  __shared__ float weights[kMaxSlots];
  __shared__ float gate;
  __shared__ float y[kMaxSlots + 1][kStage2Rows];
  extern __shared__ float a2[];  // [top_k][P] then [Ps]: the quantised h of each slot, then the shared one
  const int t = blockIdx.y, row_base = blockIdx.x * kStage2Rows;
  const int K = a.router.top_k, H = a.experts.hidden, P = a.experts.inter, Ps = a.shared.inter;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  // Before waiting for stage 1, what needs only the call's inputs: this token's routing, the shared gate, and
  // the first weight loads.
  if (warp == 0)
    warp_route<PER_LANE>(a.router, a.logits + static_cast<size_t>(t) * a.router.num_experts, ids, weights);
  if (warp == 1 && a.has_shared) {
    const float g = warp_shared_gate_value(a.x + static_cast<size_t>(t) * H, a.shared_gate_weight, H);
    if (lane == 0) gate = g;
  }
  __syncthreads();

  const int lpr_r = a.lanes[0][1], lpr_s = a.lanes[1][1];
  const int sets_r = kStage2Rows / ((32 / lpr_r) * kUnitRows);
  const int sets_s = a.has_shared ? kStage2Rows / ((32 / lpr_s) * kUnitRows) : 0;
  const int total = K * sets_r + sets_s;
  const int my_units = warp < total ? (total - warp + kWarps - 1) / kWarps : 0;
  // Unit u of this warp: (slot, row set) of the routed experts, then the shared expert's row sets.
  struct Where {
    int proj, set;
  };
  const auto where = [&](int u) {
    const int id = warp + u * kWarps;
    return id < K * sets_r ? Where{id / sets_r, id % sets_r} : Where{K, id - K * sets_r};
  };
  const auto unit_row0 = [&](const Where& wh) {
    const int lpr = wh.proj < K ? lpr_r : lpr_s;
    return (wh.set * (32 / lpr) + lane / lpr) * kUnitRows;
  };
  const auto unit_at = [&](int u) {
    const Where wh = where(u);
    const bool sh = wh.proj == K;
    const ExpertWeightsDev w = sh ? a.shared : a.experts;
    const int e = sh ? 0 : ids[wh.proj];
    DotUnit d;
    const int row0 = unit_row0(wh);
#pragma unroll
    for (int r = 0; r < kUnitRows; ++r)
      d.rows[r] = e >= 0 ? row_ref<F, 2>(w, e, row_base, row0 + r, kStage2Rows) : RowRef{};
    d.act = a2 + wh.proj * P;
    d.act_stride = 0;
    d.chunks = w.inter / WeightTraits<F>::kElems;
    d.lpr = sh ? lpr_s : lpr_r;
    d.k_phase = w.phase;
    return d;
  };
  UnitStream<F, 1, decltype(unit_at)> stream(unit_at, my_units);
  stream.prefill();

  pdl_wait();                                      // stage 1's h
  if (blockIdx.x == 0 && lane < K && warp == 0) {  // the routing, for whoever reads the workspace after
    a.topk_ids[static_cast<size_t>(t) * K + lane] = ids[lane];
    a.topk_weights[static_cast<size_t>(t) * K + lane] = weights[lane];
  }
  const GroupGrid grid_r(a.act.quant, P, a.experts.phase), grid_s(a.act.quant, Ps, a.shared.phase);
  const int gr = grid_r.count(), gs = a.has_shared ? grid_s.count() : 0;
  block_widen_rows(
      [&](int slot) { return ids[slot] >= 0 ? a.h + (static_cast<size_t>(t) * K + slot) * P : nullptr; }, K,
      P, a2, P);
  if (a.has_shared)
    block_widen_rows([&](int) { return a.shared_h + static_cast<size_t>(t) * Ps; }, 1, Ps, a2 + K * P, Ps);
  __syncthreads();
  for (int q = warp; q < K * gr + gs; q += kWarps) {
    if (q < K * gr)
      warp_quantize_group(a.act.quant, a2 + (q / gr) * P, grid_r.begin(q % gr), grid_r.end(q % gr));
    else
      warp_quantize_group(a.act.quant, a2 + K * P, grid_s.begin(q - K * gr), grid_s.end(q - K * gr));
  }
  __syncthreads();
  stream.run(1, [&](int u, float(&acc)[1][kUnitRows]) {
    const Where wh = where(u);
    const int lpr = wh.proj < K ? lpr_r : lpr_s;
    if (lane % lpr != 0) return;
    const int row0 = unit_row0(wh);
#pragma unroll
    for (int r = 0; r < kUnitRows; ++r) y[wh.proj][row0 + r] = acc[0][r];
  });
  pdl_trigger();  // the next call's first kernel waits for this grid's end anyway; it may launch now
  __syncthreads();

  // The combine: slots in order, then the shared expert, each output as the GEMV's y (sum + bias).
  if (threadIdx.x < kStage2Rows) {
    const int r = threadIdx.x, hrow = row_base + r;
    if (hrow >= H) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      const int e = ids[k];
      if (e < 0) continue;
      float v = y[k][r];
      if (a.experts.w2_bias) v += a.experts.w2_bias[static_cast<size_t>(e) * H + hrow];
      acc = fmaf(weights[k], v, acc);
    }
    if (a.has_shared) {
      float v = y[K][r];
      if (a.shared.w2_bias) v += a.shared.w2_bias[hrow];
      acc = fmaf(gate, v, acc);
    }
    a.out[static_cast<size_t>(t) * H + hrow] = f32_to_bf16(acc);
  }
}

size_t stage1_smem(const DecodeArgs& a) {
  int rows = stage1_tile_rows(a.lanes[0][0]);
  if (a.has_shared) rows = std::max(rows, stage1_tile_rows(a.lanes[1][0]));
  return sizeof(float) * kTokens * (static_cast<size_t>(a.experts.hidden) + rows);
}

size_t stage2_smem(const DecodeArgs& a) {
  return sizeof(float) *
         (static_cast<size_t>(a.router.top_k) * a.experts.inter + (a.has_shared ? a.shared.inter : 0));
}

constexpr size_t kMaxDynamicSmem = 200 * 1024;  // below the 227 KB opt-in limit, with the static arrays

bool lanes_ok(int lpr) {
  return lpr == 8 || lpr == 16 || lpr == 32;
}

template <WFormat F>
void launch_format(const DecodeArgs& a, int M, cudaStream_t stream) {
  const int K = a.router.top_k, E = a.router.num_experts;
  const int slots = std::min(E, M * K) + (a.has_shared ? 1 : 0);
  const auto tiles = [](int inter, int lpr) {
    const int half = stage1_tile_rows(lpr) / 2;
    return (inter + half - 1) / half;
  };
  int col_tiles = tiles(a.experts.inter, a.lanes[0][0]);
  if (a.has_shared) col_tiles = std::max(col_tiles, tiles(a.shared.inter, a.lanes[1][0]));
  const size_t smem1 = stage1_smem(a), smem2 = stage2_smem(a);
  with_per_lane(E, [&](auto per_lane) {
    constexpr int kPerLane = decltype(per_lane)::value;
    auto k1 = decode_stage1_kernel<F, kPerLane>;
    auto k2 = decode_stage2_kernel<F, kPerLane>;
    MOE_CUDA_CHECK(
        cudaFuncSetAttribute(k1, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem1)));
    MOE_CUDA_CHECK(
        cudaFuncSetAttribute(k2, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem2)));
    launch_overlapped(k1, dim3(slots, col_tiles), dim3(kThreads), smem1, stream, a, M);
    MOE_CUDA_CHECK_LAUNCH();
    const int row_tiles = (a.experts.hidden + kStage2Rows - 1) / kStage2Rows;
    launch_overlapped(k2, dim3(row_tiles, M), dim3(kThreads), smem2, stream, a);
    MOE_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace

bool decode_supported(const DecodeArgs& a, int M) {
  if (M < 1 || M > kDecodeMaxTokens || a.router.top_k > kMaxSlots ||
      a.router.num_experts > 32 * kMaxExpertWords)
    return false;
  if (!lanes_ok(a.lanes[0][0]) || !lanes_ok(a.lanes[0][1])) return false;
  if (a.has_shared && (!lanes_ok(a.lanes[1][0]) || !lanes_ok(a.lanes[1][1]))) return false;
  if (a.has_shared && a.shared.hidden != a.experts.hidden) return false;
  if (reinterpret_cast<uintptr_t>(a.x) % 16 != 0) return false;  // x rows are read 16 bytes at a time
  return stage1_smem(a) <= kMaxDynamicSmem && stage2_smem(a) <= kMaxDynamicSmem;
}

void launch_decode(const DecodeArgs& a, int M, cudaStream_t stream) {
  switch (a.experts.format) {
    case WFormat::Bf16:
      launch_format<WFormat::Bf16>(a, M, stream);
      break;
    case WFormat::Fp8Block:
      launch_format<WFormat::Fp8Block>(a, M, stream);
      break;
    case WFormat::Mxfp4:
      launch_format<WFormat::Mxfp4>(a, M, stream);
      break;
  }
}

}  // namespace moe::cuda
