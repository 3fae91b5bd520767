// Stages 1 and 2 of the fused MoE as a grouped GEMM on tensor cores (see expert_mma.h). One block computes a
// tile of 128 pairs of one expert (rows gathered through the sorted pair list) x 128 weight rows, over K in
// steps of 128 bytes: 64 bf16 or 128 fp8 values, which for fp8 is exactly one block of the checkpoint's 128
// grid (stage 2's K starts `phase` before its first element, those columns zero-filled). A 4-stage cp.async
// pipeline feeds ldmatrix + mma.sync; 8 warps in a 2 x 4 layout each own 64 x 32 outputs. For fp8 each K step
// accumulates into a fresh fp32 partial that is added to the result times that block's activation and weight
// scales. No split K, no atomics: the same bits on every run.
#include "cuda/kernels/expert_mma.h"

#include <algorithm>

#include "core/codecs.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/fp8_rows.h"
#include "cuda/kernels/mma_sm80.cuh"
#include "cuda/kernels/mma_tiles.cuh"

namespace moe::cuda {
namespace {

constexpr int kBM = kMmaTileRows, kBN = 128, kStages = 4, kThreads = 256;
constexpr int kTileBytes = kBM * kTileRowBytes;  // one operand's tile of one K step

template <bool kFp8>
constexpr int stage_bytes() {
  return 2 * kTileBytes + (kFp8 ? (kBM + kBN) * 4 : 0);
}

struct MmaKernelArgs {
  ExpertWeightsDev w;
  ActivationParams act;
  const int* offsets;
  const int* sorted_pairs;
  const int2* tiles;
  const int* num_tiles;
  const uint8_t* a;       // A rows: [rows, k] bf16 or fp8 codes; row of pair p = p / a_div
  const float* a_scales;  // fp8: [rows, a_groups]
  int a_div, a_groups;
  int k, k_phase, steps;  // K elements, fp8 offset into the 128 grid, K steps of 128 bytes
  uint16_t* h;            // stage 1 out [pairs, P]
  float* y;               // stage 2 out [pairs, H]
};

// Weight row (and its validity) behind tile row r. Stage 1 interleaves per warp column: tile rows 32w..32w+15
// are gate rows of outputs n0 + 16w + (0..15), rows 32w+16..32w+31 the up rows of the same outputs, so each
// thread holds g and u of the same h element.
template <int kStage>
__device__ __forceinline__ int weight_row(const ExpertWeightsDev& w, int n0, int r, int* half, int* n) {
  if (kStage == 1) {
    const int q = r % 32;
    *half = q / 16;
    *n = n0 + (r / 32) * 16 + q % 16;
    return *n < w.inter ? *half * w.inter + *n : -1;
  }
  *half = 0;
  *n = n0 + r;
  return *n < w.hidden ? *n : -1;
}

template <bool kFp8, int kStage>
__global__ void __launch_bounds__(kThreads, 1) expert_mma_kernel(MmaKernelArgs a) {
  if (static_cast<int>(blockIdx.x) >= *a.num_tiles) return;
  constexpr int kEsz = kFp8 ? 1 : 2;
  constexpr int kStepElems = kTileRowBytes / kEsz, kChunkElems = 16 / kEsz;
  constexpr int kStageBytes = stage_bytes<kFp8>();
  const int2 tile = a.tiles[blockIdx.x];
  const int e = tile.x, m0 = tile.y, m_end = a.offsets[e + 1];
  const int n0 = blockIdx.y * (kStage == 1 ? kBN / 2 : kBN);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, wm = warp / 4, wn = warp % 4;
  const int gid = lane / 4, tig = lane % 4;
  const int H = a.w.hidden, P = a.w.inter;
  const size_t w_rows = static_cast<size_t>(kStage == 1 ? 2 * P : H);
  const uint8_t* wbase = (kStage == 1 ? a.w.w13 : a.w.w2) + static_cast<size_t>(e) * w_rows * a.k * kEsz;

  extern __shared__ __align__(128) uint8_t smem[];

  // This thread's copy assignments: 16-byte chunk `chunk` of tile rows tid/8 + 32i, of A and of B.
  const int chunk = tid % 8;
  const uint8_t* a_row[4];
  const uint8_t* b_row[4];
  unsigned ok_mask = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = tid / 8 + 32 * i;
    const bool aok = m0 + r < m_end;
    a_row[i] = a.a + (aok ? static_cast<size_t>(a.sorted_pairs[m0 + r] / a.a_div) * a.k * kEsz : 0);
    int half, n;
    const int wr = weight_row<kStage>(a.w, n0, r, &half, &n);
    b_row[i] = wbase + (wr >= 0 ? static_cast<size_t>(wr) * a.k * kEsz : 0);
    ok_mask |= (aok ? 1u : 0u) << i;
    ok_mask |= (wr >= 0 ? 1u : 0u) << (4 + i);
  }
  // fp8: thread t < 128 copies A row t's scale of each K step, thread 128 + r weight row r's.
  const float* s_row = nullptr;
  bool s_ok = false;
  if (kFp8) {
    if (tid < kBM) {
      s_ok = m0 + tid < m_end;
      s_row = a.a_scales + (s_ok ? static_cast<size_t>(a.sorted_pairs[m0 + tid] / a.a_div) * a.a_groups : 0);
    } else {
      int half, n;
      const int wr = weight_row<kStage>(a.w, n0, tid - kBM, &half, &n);
      s_ok = wr >= 0;
      const int hb = (H + 127) / 128, sb = a.w.scale_blocks;
      const float* ws = static_cast<const float*>(kStage == 1 ? a.w.w13_scale : a.w.w2_scale);
      if (s_ok)
        s_row = kStage == 1 ? ws + (static_cast<size_t>(e) * 2 * sb + half * sb + (n + a.w.phase) / 128) * hb
                            : ws + (static_cast<size_t>(e) * hb + n / 128) * sb;
      else
        s_row = ws;
    }
  }

  const uint32_t smem0 = smem_addr(smem);
  auto load_step = [&](int slot, int step) {
    const uint32_t base = smem0 + slot * kStageBytes;
    const int kc = step * kStepElems - a.k_phase + chunk * kChunkElems;
    const bool k_ok = kc >= 0 && kc < a.k;
    const size_t koff = static_cast<size_t>(k_ok ? kc : 0) * kEsz;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int r = tid / 8 + 32 * i;
      cp_async16(base + swizzled(r, chunk), a_row[i] + koff, k_ok && (ok_mask >> i & 1u));
      cp_async16(base + kTileBytes + swizzled(r, chunk), b_row[i] + koff, k_ok && (ok_mask >> (4 + i) & 1u));
    }
    if (kFp8) cp_async4(base + 2 * kTileBytes + tid * 4, s_row + step, s_ok);
  };

  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[i][j][c] = 0.0f;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < a.steps) load_step(s, s);
    cp_async_commit();
  }

  for (int step = 0; step < a.steps; ++step) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // step's data is visible to all; everyone is done with the slot refilled next
    if (step + kStages - 1 < a.steps) load_step((step + kStages - 1) % kStages, step + kStages - 1);
    cp_async_commit();

    const int slot = step % kStages;
    const uint32_t a_base = smem0 + slot * kStageBytes, b_base = a_base + kTileBytes;
    float part[4][4][4];
    float(&dst)[4][4][4] = kFp8 ? part : acc;
    if (kFp8) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int c = 0; c < 4; ++c) part[i][j][c] = 0.0f;
    }
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      uint32_t af[4][4], bf[4][2];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        ldmatrix_x4(af[i], a_base + swizzled(wm * 64 + i * 16 + lane % 16, 2 * ks + lane / 16));
#pragma unroll
      for (int jj = 0; jj < 2; ++jj) {
        uint32_t t[4];
        ldmatrix_x4(
            t, b_base + swizzled(wn * 32 + jj * 16 + (lane / 16) * 8 + lane % 8, 2 * ks + (lane / 8) % 2));
        bf[2 * jj][0] = t[0];
        bf[2 * jj][1] = t[1];
        bf[2 * jj + 1][0] = t[2];
        bf[2 * jj + 1][1] = t[3];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) mma_16x8x32B<kFp8>(dst[i][j], af[i], bf[j]);
    }
    if (kFp8) {
      const float* sa = reinterpret_cast<const float*>(smem + slot * kStageBytes + 2 * kTileBytes);
      const float* sb = sa + kBM;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float sa0 = sa[wm * 64 + i * 16 + gid], sa1 = sa[wm * 64 + i * 16 + gid + 8];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float sb0 = sb[wn * 32 + j * 8 + tig * 2], sb1 = sb[wn * 32 + j * 8 + tig * 2 + 1];
          acc[i][j][0] = fmaf(part[i][j][0], sa0 * sb0, acc[i][j][0]);
          acc[i][j][1] = fmaf(part[i][j][1], sa0 * sb1, acc[i][j][1]);
          acc[i][j][2] = fmaf(part[i][j][2], sa1 * sb0, acc[i][j][2]);
          acc[i][j][3] = fmaf(part[i][j][3], sa1 * sb1, acc[i][j][3]);
        }
      }
    }
  }
  cp_async_wait<0>();

#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int p = m0 + wm * 64 + i * 16 + gid + hh * 8;
      if (p >= m_end) continue;
      const size_t pair = static_cast<size_t>(a.sorted_pairs[p]);
      if (kStage == 1) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int n = n0 + wn * 16 + j * 8 + tig * 2;
          if (n >= P) continue;
          float g0 = acc[i][j][2 * hh], g1 = acc[i][j][2 * hh + 1];
          float u0 = acc[i][j + 2][2 * hh], u1 = acc[i][j + 2][2 * hh + 1];
          if (a.w.w13_bias) {
            const float* b = a.w.w13_bias + static_cast<size_t>(e) * 2 * P;
            g0 += b[n];
            g1 += b[n + 1];
            u0 += b[P + n];
            u1 += b[P + n + 1];
          }
          const uint32_t packed = static_cast<uint32_t>(f32_to_bf16(gated_activation(a.act, g0, u0))) |
                                  static_cast<uint32_t>(f32_to_bf16(gated_activation(a.act, g1, u1))) << 16;
          *reinterpret_cast<uint32_t*>(a.h + pair * P + n) = packed;
        }
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int n = n0 + wn * 32 + j * 8 + tig * 2;
          if (n >= H) continue;
          float2 v = make_float2(acc[i][j][2 * hh], acc[i][j][2 * hh + 1]);
          if (a.w.w2_bias) {
            v.x += a.w.w2_bias[static_cast<size_t>(e) * H + n];
            v.y += a.w.w2_bias[static_cast<size_t>(e) * H + n + 1];
          }
          *reinterpret_cast<float2*>(a.y + pair * H + n) = v;
        }
      }
    }
  }
}

template <bool kFp8, int kStage>
void launch_gemm(const MmaKernelArgs& k, int max_tiles, cudaStream_t stream) {
  const int out = kStage == 1 ? k.w.inter : k.w.hidden, per_block = kStage == 1 ? kBN / 2 : kBN;
  const dim3 grid(static_cast<unsigned>(max_tiles), static_cast<unsigned>((out + per_block - 1) / per_block));
  constexpr int smem = kStages * stage_bytes<kFp8>();
  auto kernel = expert_mma_kernel<kFp8, kStage>;
  MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<grid, kThreads, smem, stream>>>(k);
  MOE_CUDA_CHECK_LAUNCH();
}

template <bool kFp8>
void run_stages(const GemvArgs& g, const uint16_t* x, int tokens, const MmaScratch& s, cudaStream_t stream) {
  const int H = g.w.hidden, P = g.w.inter;
  MmaKernelArgs k{};
  k.w = g.w;
  k.act = g.act;
  k.offsets = g.g.offsets;
  k.sorted_pairs = g.g.sorted_pairs;
  k.tiles = s.tiles;
  k.num_tiles = s.num_tiles;
  k.h = g.h;
  k.y = g.y;

  // Stage 1: A = x rows of the pairs' tokens.
  k.k = H;
  k.k_phase = 0;
  k.a_div = g.g.pair_div;
  if (kFp8) {
    const int groups = (H + 127) / 128;
    launch_fp8_rows({x, H, 0, groups, nullptr, nullptr, tokens, s.x_codes, s.x_scales}, stream);
    MOE_CUDA_CHECK_LAUNCH();
    k.a = s.x_codes;
    k.a_scales = s.x_scales;
    k.a_groups = groups;
    k.steps = groups;
  } else {
    k.a = reinterpret_cast<const uint8_t*>(x);
    k.steps = (H + 63) / 64;
  }
  launch_gemm<kFp8, 1>(k, s.max_tiles, stream);

  // Stage 2: A = h rows of the pairs (quantised in the grid of the rank's phase for fp8).
  k.k = P;
  k.a_div = 1;
  if (kFp8) {
    const int groups = (P + g.w.phase + 127) / 128;
    const int pairs_bound = tokens * g.g.pair_div;
    launch_fp8_rows({g.h, P, g.w.phase, groups, g.g.sorted_pairs, g.g.offsets + g.w.num_experts, pairs_bound,
                     s.h_codes, s.h_scales},
                    stream);
    MOE_CUDA_CHECK_LAUNCH();
    k.a = s.h_codes;
    k.a_scales = s.h_scales;
    k.a_groups = groups;
    k.k_phase = g.w.phase;
    k.steps = groups;
  } else {
    k.a = reinterpret_cast<const uint8_t*>(g.h);
    k.k_phase = 0;
    k.steps = (P + 63) / 64;
  }
  launch_gemm<kFp8, 2>(k, s.max_tiles, stream);
}

}  // namespace

bool mma_supported(WFormat f, AQuant q) {
  return (f == WFormat::Bf16 && q == AQuant::None) || (f == WFormat::Fp8Block && q == AQuant::Fp8);
}

int mma_max_tiles(int pairs, int experts) {
  return (pairs + kBM - 1) / kBM + std::min(experts, pairs);
}

void launch_expert_mma(const GemvArgs& a, const uint16_t* x, int tokens, const MmaScratch& s,
                       cudaStream_t stream) {
  mma_tiles_kernel<kBM><<<1, kTileListThreads, 0, stream>>>(a.g, s.tiles, s.num_tiles);
  MOE_CUDA_CHECK_LAUNCH();
  if (a.w.format == WFormat::Fp8Block)
    run_stages<true>(a, x, tokens, s, stream);
  else
    run_stages<false>(a, x, tokens, s, stream);
}

}  // namespace moe::cuda
