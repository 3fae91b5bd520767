#pragma once
// Stages 1 and 2 of the fused MoE for few tokens per expert on tensor cores, "swap AB": the weight rows are
// the MMA's 16-row side and the tokens its 8-wide column side, so every weight byte is read once per pass of
// up to 32 tokens and multiplied without being decoded on CUDA cores (the grouped GEMV spends ~300
// instructions per 16-byte chunk of four rows at one token; an MMA takes the chunk as it is). Same contract
// as the GEMV stages (launch_stage1 / launch_stage2 in launchers.h): bf16 weights with unquantised
// activations, or fp8_block weights with fp8 1x128 activations.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/kernels/launchers.h"

namespace moe::cuda {

// Whether this projection can run on the swap-AB stages (format, activation quantisation, and staged token
// rows that fit in shared memory).
bool swap_ab_supported(const ExpertWeightsDev& w, AQuant q);

// Stage 1 reads x as fp8 codes and 1x128 scales (fp8_block; the prologue writes them) or as bf16 (bf16).
struct SwapAbInputs {
  const uint16_t* x;              // [tokens, H] bf16
  const uint8_t* x_codes;         // [tokens, H] fp8 e4m3 codes, or null (bf16)
  const float* x_scales;          // [tokens, ceil(H/128)]
  int max_pairs_per_expert;       // an estimate for this call: it sizes the token pass, never the arithmetic
  int tokens = 0;                 // the call's tokens (M)
  const int* topk_ids = nullptr;  // [M, K] routed experts' ids (the prologue's): stage 1 stages a call of a
                                  // few tokens by token with them
  // Set when stage 1 routes the call itself (no prologue launched before it; swap_ab_routes_itself): the
  // router's logits and where the prologue's outputs go (route's topk_ids and topk_weights, align's
  // grouping).
  const RouteArgs* route = nullptr;
  const AlignArgs* align = nullptr;
  // (Expert, pass) groups of a launch that runs beside this one on another stream (the shared expert beside
  // the routed experts: swap_ab_joint_wave): the row tiles per block are sized so that both launches' blocks
  // fill one wave together. Never changes a dot product.
  int beside_groups = 0;
  // Counter boundaries (moe_counter_waits, chain_count.cuh), zeroed by this call's prologue: each block of
  // the launch adds one to `arrive` when its outputs are written; a stage 2 waits for `wait_target`
  // arrivals on `wait_on` (stage 1's blocks) instead of the programmatic-launch wait. Null: the wait.
  unsigned* arrive = nullptr;
  const unsigned* wait_on = nullptr;
  unsigned wait_target = 0;
  // Stage 2 does the call's combine itself (swap_ab_combine_max_tokens; routed experts without a shared one,
  // up to 8 tokens): out [tokens, H] bf16, as combine.cu writes it, from the last block to finish each row
  // tile (tile_counters: n_tile_counters of them, at least H / 32, zeroed by stage 1 after its wait), with
  // the routing's weights beside topk_ids. Null: a combine launch follows.
  uint16_t* combine_out = nullptr;
  unsigned* tile_counters = nullptr;
  int n_tile_counters = 0;
  const float* topk_weights = nullptr;
};

// The most tokens (0 to 8) of a swap-AB call without a shared expert whose stage 2 does the combine (the last
// block of each row tile, counted by integer atomics; the same bits as the combine launch, one launch
// fewer). 1 by default: on an H100 (session 31) the model's decode step at batch 1 took 2.516 against
// 2.544-2.555 ms and the op at one token was level (24.9-25.1 us), but at 2-8 tokens a block that arrives
// last for several row tiles combines them all alone (Qwen3-30B-A3B fp8 M=8 115.8 against 100.8 us).
// MOE_SWAP_AB_COMBINE=N (read once); set_swap_ab_combine_max_tokens overrides it.
int swap_ab_combine_max_tokens();
void set_swap_ab_combine_max_tokens(int tokens);

// Whether stage 1 can route a call of M tokens itself (block_route.cuh): bf16 weights, a few tokens, a router
// of up to 128 experts.
bool swap_ab_routes_itself(const ExpertWeightsDev& w, int M, int top_k, int router_experts);

// Row tiles per block for `groups` (expert, pass) groups of `tiles` row tiles each on `block_slots` blocks at
// once (SMs x blocks per SM): enough that the blocks fill about one wave, at least 1, at most `tiles`. A
// launch with beside_groups counts them into `groups`. Host arithmetic, tested without a GPU.
int swap_ab_tiles_per_block(int groups, int tiles, long block_slots);

// Steps (128 bytes of each weight row a warp streams) that each warp asks L2 for beyond the one it loads into
// registers ahead of its MMAs, so more of the weight stream is in flight than one step of registers holds
// (0: off). MOE_SWAP_AB_L2_AHEAD=N (0-3; session 18, written without a GPU: off until measured);
// set_swap_ab_l2_ahead overrides it. Never changes a dot product.
int swap_ab_l2_ahead();
void set_swap_ab_l2_ahead(int steps);

// Whether the fp8 stage 2 reads its first pass's pairs (the grouping) before its wait, so that after it the
// h rows are requested at once: one dependent round trip fewer after the wait (bf16 does it already, with a
// check, because its stage 1 may write the grouping itself; an fp8 call always has a prologue). On unless
// MOE_SWAP_AB_FP8_PAIRS_EARLY=0 (H100, session 18, in one lease: Qwen3-30B-A3B fp8 M=1 26.7 vs 27.0 us, M=8
// 107.8 vs 108.2, M=64 248.0 vs 249.9; DeepSeek-V3 TP8 M=1 62.2 vs 62.6); set_swap_ab_fp8_pairs_early
// overrides it. Never changes a bit.
bool swap_ab_fp8_pairs_early();
void set_swap_ab_fp8_pairs_early(bool on);

// Whether a stage whose K steps do not split evenly over its four K warps (Qwen3-30B-A3B's stage 2: 6 steps,
// warps of 2, 2, 1 and 1 with the tile waiting for the longest; TP8 stage 2 of DeepSeek-V3 and
// Qwen3-235B-A22B: 2 steps, two warps idle) takes 2 or 1 K warps instead, over taller row tiles
// (swap_ab_k_groups): another summation order, fixed per layer shape, never by M.
// MOE_SWAP_AB_BALANCED_K: -1 (kBalanceShortK, the default) where a stage takes at most 2 steps, 0 never,
// 1 wherever the split is uneven; set_swap_ab_balanced_k overrides it.
constexpr int kBalanceShortK = -1, kBalanceOff = 0, kBalanceAnyK = 1;
int swap_ab_balanced_k();
void set_swap_ab_balanced_k(int mode);
// The K warps (of the block's 8) for a stage of `steps` K steps: 8 for a wide K, else 4, or where `balance`
// says so the one of 4, 2 and 1 that pads the steps least (the most on a tie). Host arithmetic, tested
// without a GPU.
int swap_ab_k_groups(int steps, bool wide, int balance);

// Blocks the swap-AB stages have launched in this process (both stages, every launch): the tests' view of
// how the launches were sized (the joint wave changes only the block counts, never a bit).
long long swap_ab_blocks_launched();

// Each returns the blocks it launched (a counter boundary's target: SwapAbInputs::wait_target).
int launch_swap_ab_stage1(const GemvArgs& a, const SwapAbInputs& in, cudaStream_t stream);
int launch_swap_ab_stage2(const GemvArgs& a, const SwapAbInputs& in, cudaStream_t stream);

}  // namespace moe::cuda
