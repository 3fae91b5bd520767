// Stages 1 and 2 of the fused MoE as a grouped GEMM on tensor cores (see expert_mma.h): the tile list, the
// activation quantisation, and the tiles on wgmma (expert_wgmma.cu) or, here, on mma.sync. One block computes
// a tile of 128 pairs of one expert x 128 weight rows over K steps of 128 bytes (expert_mma_tile.cuh). A
// 4-stage cp.async pipeline feeds ldmatrix + mma.sync; 8 warps in a 2 x 4 layout each own 64 x 32 outputs.
// For fp8 each K step accumulates into a fresh fp32 partial that is added to the result times that block's
// activation and weight scales. No split K, no atomics: the same bits on every run.
#include "cuda/kernels/expert_mma.h"

#include <algorithm>
#include <cstdlib>

#include "core/codecs.h"
#include "core/env_flag.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/activation.cuh"
#include "cuda/kernels/expert_mma_tile.cuh"
#include "cuda/kernels/expert_wgmma.h"
#include "cuda/kernels/fp8_rows.h"
#include "cuda/kernels/mma_sm80.cuh"
#include "cuda/kernels/mma_tiles.cuh"

namespace moe::cuda {
namespace {

constexpr int kBM = kMmaBM, kStages = 4, kThreads = kMmaThreads;

template <bool kFp8, int kStage>
__global__ void __launch_bounds__(kThreads, 1) expert_mma_kernel(MmaKernelArgs a) {
  if (static_cast<int>(blockIdx.x) >= *a.num_tiles) return;
  constexpr int kStageBytes = mma_stage_bytes<kFp8>();
  const int2 tile = a.tiles[blockIdx.x];
  const int e = tile.x, m0 = tile.y, m_end = a.offsets[e + 1];
  const int n0 = blockIdx.y * (kStage == 1 ? kMmaBN / 2 : kMmaBN);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, wm = warp / 4, wn = warp % 4;
  const int gid = lane / 4, tig = lane % 4;
  const int H = a.w.hidden, P = a.w.inter;
  extern __shared__ __align__(128) uint8_t smem[];
  const MmaTileLoader<kFp8, kStage, kThreads> loader(a, e, m0, m_end, n0, tid);
  const uint32_t smem0 = smem_addr(smem);
  auto load_step = [&](int slot, int step) { loader.load(a, smem0 + slot * kStageBytes, step); };

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
    const uint32_t a_base = smem0 + slot * kStageBytes, b_base = a_base + kMmaTileBytes;
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
      const float* sa = reinterpret_cast<const float*>(smem + slot * kStageBytes + 2 * kMmaTileBytes);
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
          if (n < P)
            store_h_pair(a, e, pair, n, acc[i][j][2 * hh], acc[i][j][2 * hh + 1], acc[i][j + 2][2 * hh],
                         acc[i][j + 2][2 * hh + 1]);
        }
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int n = n0 + wn * 32 + j * 8 + tig * 2;
          if (n < H) store_y_pair(a, e, pair, n, make_float2(acc[i][j][2 * hh], acc[i][j][2 * hh + 1]));
        }
      }
    }
  }
}

template <bool kFp8, int kStage>
void launch_gemm(const MmaKernelArgs& k, int pair_tile, int max_tiles, cudaStream_t stream) {
  if (pair_tile < kBM) return launch_wgmma_swap_gemm(k, kFp8, kStage, pair_tile, max_tiles, stream);
  if (grouped_gemm_uses_wgmma()) return launch_wgmma_gemm(k, kFp8, kStage, max_tiles, stream);
  const int out = kStage == 1 ? k.w.inter : k.w.hidden, per_block = kStage == 1 ? kMmaBN / 2 : kMmaBN;
  const dim3 grid(static_cast<unsigned>(max_tiles), static_cast<unsigned>((out + per_block - 1) / per_block));
  constexpr int smem = kStages * mma_stage_bytes<kFp8>();
  auto kernel = expert_mma_kernel<kFp8, kStage>;
  MOE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<grid, kThreads, smem, stream>>>(k);
  MOE_CUDA_CHECK_LAUNCH();
}

template <bool kFp8>
void run_stages(const GemvArgs& g, const uint16_t* x, int tokens, const MmaScratch& s, int pair_tile,
                cudaStream_t stream) {
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
  k.y_bf16 = g.y_bf16;

  // Stage 1: A = x rows of the pairs' tokens.
  k.k = H;
  k.k_phase = 0;
  k.a_div = g.g.pair_div;
  if (kFp8) {
    const int groups = (H + 127) / 128;
    if (!s.x_ready) {
      launch_fp8_rows({x, H, 0, groups, nullptr, nullptr, tokens, s.x_codes, s.x_scales}, stream);
      MOE_CUDA_CHECK_LAUNCH();
    }
    k.a = s.x_codes;
    k.a_rows = tokens;
    k.a_scales = s.x_scales;
    k.a_groups = groups;
    k.steps = groups;
    // The wgmma kernel (128-pair tiles) or the swapped one quantises h in its epilogue when h's 128-grid
    // falls on their 64-output column blocks.
    const bool epilogue_quantises_h = pair_tile == kBM
                                          ? grouped_gemm_uses_wgmma() && grouped_gemm_quantises_h()
                                          : grouped_gemm_swap_quantises_h();
    if (epilogue_quantises_h && g.w.phase % kStage1BlockOutputs == 0) {
      k.h_codes = s.h_codes;
      k.h_scales = s.h_scales;
      k.h_groups = (P + g.w.phase + 127) / 128;
    }
    // Stage 2's A tile as one box a step: h by sorted position (the tensor map's rows are the call's pairs,
    // all of them written by stage 1 only when every pair is this rank's).
    k.h_by_position = pair_tile == kBM && grouped_gemm_uses_wgmma() && grouped_gemm_h_by_position() &&
                      !k.h_codes && !grouped_gemm_tma_a() && g.pairs_all_local;
    k.uniform_col_scales = grouped_gemm_uniform_scales() && g.w.phase % 64 == 0;
    // The swapped stage 1 starts while the grouping runs and brings its probable first weights into L2 where
    // experts average 4 or more pairs (nearly every expert active, one tile each: the guess holds).
    k.prefetch_steps = pair_tile < kBM && tokens * g.g.pair_div >= 4 * g.w.num_experts && H % 16 == 0
                           ? grouped_gemm_prefetch_steps()
                           : 0;
  } else {
    k.a = reinterpret_cast<const uint8_t*>(x);
    k.a_rows = tokens;
    k.steps = (H + 63) / 64;
  }
  // Stage 2 per tile where tile_ready_target says so; a stage-1 run is a 128-wide group of h where stage 1
  // quantises it, else one 64-output column block. Stage 2's K steps: fp8's are h's 1x128 groups in the
  // rank's grid (its scales' count too), bf16's 64 elements each.
  const int stage2_steps = kFp8 ? (P + g.w.phase + 127) / 128 : (P + 63) / 64;
  const int stage1_runs = k.h_codes ? k.h_groups : (P + kStage1BlockOutputs - 1) / kStage1BlockOutputs;
  const int ready_target = s.tile_ready
                               ? tile_ready_target(pair_tile, kFp8, k.h_codes != nullptr, stage2_steps,
                                                   stage1_runs, grouped_gemm_tile_ready())
                               : 0;
  k.tile_ready = ready_target > 0 ? s.tile_ready : nullptr;
  launch_gemm<kFp8, 1>(k, pair_tile, s.max_tiles, stream);

  // Stage 2: A = h rows of the pairs (quantised in the grid of the rank's phase for fp8), or by sorted
  // position when stage 1 wrote them so (k.h_by_position: a_div 0).
  k.k = P;
  k.a_div = k.h_by_position ? 0 : 1;
  k.h_by_position = 0;
  k.prefetch_steps = 0;
  k.tile_ready_target = ready_target;
  const int per_take = runs_per_take(stage2_steps, grouped_gemm_take_steps());
  k.take_runs = ready_target > 0 && takes_runs(stage2_steps, grouped_gemm_take_runs()) ? per_take : 0;
  k.take_at_tail_percent = k.take_runs == 0 && ready_target > 0 ? grouped_gemm_take_at_tail() : 0;
  k.take_runs_at_tail = k.take_at_tail_percent > 0 ? per_take : 0;
  k.uniform_col_scales = kFp8 && grouped_gemm_uniform_scales();  // w2's column blocks are whole scale blocks
  if (kFp8) {
    const int groups = stage2_steps;
    const int pairs_bound = tokens * g.g.pair_div;
    if (!k.h_codes) {
      // By position: rows 0 .. the pair count, each its own.
      launch_fp8_rows({g.h, P, g.w.phase, groups, k.a_div ? g.g.sorted_pairs : nullptr,
                       g.g.offsets + g.w.num_experts, pairs_bound, s.h_codes, s.h_scales},
                      stream);
      MOE_CUDA_CHECK_LAUNCH();
    }
    k.h_codes = nullptr;
    k.h_scales = nullptr;
    k.a = s.h_codes;
    k.a_rows = pairs_bound;
    k.a_scales = s.h_scales;
    k.a_groups = groups;
    k.k_phase = g.w.phase;
    k.steps = groups;
  } else {
    k.a = reinterpret_cast<const uint8_t*>(g.h);
    k.a_rows = tokens * g.g.pair_div;
    k.k_phase = 0;
    k.steps = stage2_steps;
  }
  launch_gemm<kFp8, 2>(k, pair_tile, s.max_tiles, stream);
}

EnvSwitch wgmma_switch("MOE_MMA_WGMMA");
EnvSwitch swap_switch("MOE_WGMMA_SWAP");
EnvSwitch grouping_tiles_switch("MOE_GROUPING_TILES", true);
// The smallest pair tile (sizes the tile list).
constexpr int kMinPairTile = 16;
// Off by default: on an H200 (session 15) fp8_rows after the GEMM measured faster than the epilogue's
// quantisation, Qwen3-30B-A3B fp8 M=4096 839 against 876 us, DeepSeek-V3 TP8 1641 against 1713.
EnvSwitch quantise_h_switch("MOE_WGMMA_QUANT_H", false);
// The swapped kernel's, on by default: it measured faster (session 40, expert_mma.h).
EnvSwitch swap_quantise_h_switch("MOE_WGMMA_SWAP_QUANT_H", true);
// Session 40: the swapped stage 1's prefetch while the grouping runs (grouped_gemm_prefetch_steps), 8 steps:
// measured faster (expert_mma.h).
EnvCount prefetch_steps_setting("MOE_WGMMA_PREFETCH_STEPS", 8, 0, 16);
// Sessions 42-43: the swapped stage 2 per tile (grouped_gemm_tile_ready) and, from 8 K steps, its blocks
// taking their runs (grouped_gemm_take_runs): measured faster (expert_mma.h).
EnvCount tile_ready_setting("MOE_WGMMA_TILE_READY", 1, 0, 1 << 20);
EnvCount take_runs_setting("MOE_WGMMA_TAKE_RUNS", 8, 0, 1 << 20);
// Session 44: the K steps a take of stage 2's runs covers (grouped_gemm_take_steps).
EnvCount take_steps_setting("MOE_WGMMA_TAKE_STEPS", 8, 1, 1 << 20);
// Session 46: stage 2 taking its runs where stage 1's fixed shares leave a tail (grouped_gemm_take_at_tail),
// from an 8 % head start: measured faster (expert_mma.h).
EnvCount take_at_tail_setting("MOE_WGMMA_TAKE_AT_TAIL", 8, 0, 100);
// Stage 2's pair outputs in bf16, on by default from the token count below (measured in sessions 18 and 40:
// expert_mma.h).
EnvSwitch y_bf16_switch("MOE_GROUPED_Y_BF16", true);
EnvCount y_bf16_min_tokens_setting("MOE_GROUPED_Y_BF16_MIN_TOKENS", 0, 0, 1 << 30);

}  // namespace

bool grouped_gemm_uses_wgmma() {
  return wgmma_switch.get();
}

void set_grouped_gemm_wgmma(bool on) {
  wgmma_switch.set(on);
}

bool grouped_gemm_swaps() {
  return swap_switch.get();
}

void set_grouped_gemm_swap(bool on) {
  swap_switch.set(on);
}

int grouped_gemm_swap_max_tile() {
  static const int tile = [] {
    const char* v = std::getenv("MOE_WGMMA_SWAP_MAX_TILE");
    const int t = v ? std::atoi(v) : 32;
    return t == 16 || t == 64 ? t : 32;
  }();
  return tile;
}

int swapped_pair_tile(int pairs, int experts, int max_tile, int max_mean) {
  // Tiles about the mean pairs per expert (an expert with more takes several tiles), so few rows of a tile
  // are zeros; from 48 a pair tile of 128 wastes little.
  const int mean = pairs / std::max(1, std::min(experts, pairs));
  if (mean > max_mean) return kBM;
  const int tile = mean <= 12 ? 16 : mean <= 24 ? 32 : mean <= 48 ? 64 : kBM;
  return tile <= max_tile ? tile : kBM;
}

int swap_max_mean_pairs(int hidden, int inter) {
  // A wide, shallow stage 2 (DeepSeek-V3 TP8: H = 7168 output rows, K = 256, two K steps): on the H200
  // (sessions 15 and 16) the swapped tiles won there only at 4 pairs per expert (M=128: 376 against 421 us)
  // and lost from 8 (M=256 520 against 466, M=384 655 against 507, M=768 840 against 574). Elsewhere they won
  // or tied up to 48 (Qwen3-30B-A3B, Qwen3-Next, Qwen3-235B-A22B TP8).
  return hidden > 4096 && inter <= 256 ? 7 : kMaxSwappedMean;
}

int grouped_gemm_pair_tile(int pairs, int experts, int hidden, int inter) {
  if (!grouped_gemm_uses_wgmma() || !grouped_gemm_swaps()) return kBM;
  return swapped_pair_tile(pairs, experts, grouped_gemm_swap_max_tile(), swap_max_mean_pairs(hidden, inter));
}

bool grouping_lists_tiles() {
  return grouping_tiles_switch.get();
}

void set_grouping_lists_tiles(bool on) {
  grouping_tiles_switch.set(on);
}

bool grouped_gemm_quantises_h() {
  return quantise_h_switch.get();
}

void set_grouped_gemm_quantises_h(bool on) {
  quantise_h_switch.set(on);
}

int grouped_gemm_prefetch_steps() {
  return prefetch_steps_setting.get();
}

void set_grouped_gemm_prefetch_steps(int steps) {
  prefetch_steps_setting.set(steps);
}

int grouped_gemm_tile_ready() {
  return tile_ready_setting.get();
}

void set_grouped_gemm_tile_ready(int min_steps) {
  tile_ready_setting.set(min_steps);
}

int grouped_gemm_take_runs() {
  return take_runs_setting.get();
}

void set_grouped_gemm_take_runs(int min_steps) {
  take_runs_setting.set(min_steps);
}

int grouped_gemm_take_at_tail() {
  return take_at_tail_setting.get();
}

void set_grouped_gemm_take_at_tail(int min_idle_percent) {
  take_at_tail_setting.set(min_idle_percent);
}

int grouped_gemm_take_steps() {
  return take_steps_setting.get();
}

void set_grouped_gemm_take_steps(int steps) {
  take_steps_setting.set(steps);
}

namespace {
// Both stage-2 settings in K steps (MOE_WGMMA_TILE_READY, MOE_WGMMA_TAKE_RUNS) read N as "from N steps", 0
// as never.
bool from_min_steps(int steps, int min_steps) {
  return min_steps > 0 && steps >= min_steps;
}
}  // namespace

bool takes_runs(int stage2_steps, int min_steps) {
  return from_min_steps(stage2_steps, min_steps);
}

int runs_per_take(int stage2_steps, int take_steps) {
  return std::max(1, (take_steps + stage2_steps - 1) / std::max(1, stage2_steps));
}

int tile_ready_target(int pair_tile, bool fp8, bool stage1_quantises_h, int stage2_steps, int stage1_runs,
                      int min_steps) {
  const bool applies =
      pair_tile < kBM && (!fp8 || stage1_quantises_h) && from_min_steps(stage2_steps, min_steps);
  return applies ? kSwapConsumerWarps * stage1_runs : 0;
}

bool grouped_gemm_swap_quantises_h() {
  return swap_quantise_h_switch.get();
}

void set_grouped_gemm_swap_quantises_h(bool on) {
  swap_quantise_h_switch.set(on);
}

bool grouped_gemm_y_bf16() {
  return y_bf16_switch.get();
}

void set_grouped_gemm_y_bf16(bool on) {
  y_bf16_switch.set(on);
}

int grouped_gemm_y_bf16_min_tokens() {
  return y_bf16_min_tokens_setting.get();
}

void set_grouped_gemm_y_bf16_min_tokens(int tokens) {
  y_bf16_min_tokens_setting.set(tokens);
}

bool mma_supported(WFormat f, AQuant q) {
  return (f == WFormat::Bf16 && q == AQuant::None) || (f == WFormat::Fp8Block && q == AQuant::Fp8);
}

int mma_max_tiles(int pairs, int experts) {
  return (pairs + kMinPairTile - 1) / kMinPairTile + std::min(experts, pairs);
}

void launch_expert_mma(const GemvArgs& a, const uint16_t* x, int tokens, const MmaScratch& s,
                       cudaStream_t stream) {
  const int pair_tile = grouped_gemm_pair_tile(tokens * a.g.pair_div, a.w.num_experts, a.w.hidden, a.w.inter);
  const auto tiles = [&](auto rows) {
    mma_tiles_kernel<decltype(rows)::value>
        <<<1, kTileListThreads, 0, stream>>>(a.g, s.tiles, s.num_tiles, s.tile_ready);
  };
  if (a.tiles_listed_rows != pair_tile) {  // else the grouping listed them (AlignArgs::tiles)
    if (pair_tile == 16)
      tiles(std::integral_constant<int, 16>{});
    else if (pair_tile == 32)
      tiles(std::integral_constant<int, 32>{});
    else if (pair_tile == 64)
      tiles(std::integral_constant<int, 64>{});
    else
      tiles(std::integral_constant<int, kBM>{});
    MOE_CUDA_CHECK_LAUNCH();
  }
  if (a.w.format == WFormat::Fp8Block)
    run_stages<true>(a, x, tokens, s, pair_tile, stream);
  else
    run_stages<false>(a, x, tokens, s, pair_tile, stream);
}

}  // namespace moe::cuda
