// The grouped GEMM's host-side plan (no GPU): the stage-1 column blocks that one block takes per 128-wide
// group of h when the wgmma kernel quantises h (they must partition the blocks and hold exactly the group's
// outputs, at every TP phase it takes), the swapped kernel's pair tile by the mean pairs per expert, the
// swap-AB launches' row tiles per block, the order of the swap-AB warps' L2 requests ahead, Auto's
// threshold between the swap-AB stages and the grouped GEMM, and where stage 2 starts per tile.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "cuda/kernels/expert_mma.h"
#include "cuda/kernels/expert_swap_ab.h"
#include "cuda/kernels/launchers.h"
#include "cuda/kernels/swap_ab_walk.h"
#include "cuda/moe_layer.h"

namespace moe::cuda {
namespace {

// Stage 2 per tile (tile_ready_target): only the swapped kernel, only where stage 2 reads what stage 1 wrote
// (fp8: stage 1 quantising h, not fp8_rows after it), only from the set number of stage-2 K steps; the count
// is every stage-1 consumer warp's arrival per run of a tile.
TEST(TileReadyTarget, OnlyWhereStage2FollowsTheSwappedStage1) {
  // Qwen3-30B-A3B fp8 at 64 tokens: 16-pair tiles, h quantised by stage 1 (6 groups: 6 runs a tile), 6 K
  // steps.
  EXPECT_EQ(tile_ready_target(16, true, true, 6, 6, 1), 8 * 6);
  EXPECT_EQ(tile_ready_target(16, true, true, 6, 6, 6), 8 * 6);
  EXPECT_EQ(tile_ready_target(16, true, true, 6, 6, 7), 0) << "fewer K steps than asked";
  EXPECT_EQ(tile_ready_target(16, true, true, 6, 6, 0), 0) << "off";
  EXPECT_EQ(tile_ready_target(16, true, false, 6, 12, 1), 0) << "fp8_rows between the stages";
  EXPECT_EQ(tile_ready_target(kMmaTileRows, true, true, 6, 6, 1), 0) << "the 128-pair kernel";
  // bf16: stage 1 writes h itself (12 column blocks of 64 outputs: 12 runs a tile), 12 K steps of 64.
  EXPECT_EQ(tile_ready_target(32, false, false, 12, 12, 1), 8 * 12);
  EXPECT_EQ(tile_ready_target(64, false, false, 12, 12, 13), 0);
}

// Stage 2 per tile takes its runs from a counter only from the set number of K steps (session 43: with 2-6
// steps the hand-over of each run cost more than the fixed shares' late blocks).
TEST(TakesRuns, FromTheSetNumberOfStage2KSteps) {
  const int by_default = grouped_gemm_take_runs();
  EXPECT_GT(by_default, 6) << "Qwen3-30B-A3B fp8's 6 K steps keep fixed shares";
  EXPECT_LE(by_default, 12) << "Qwen3-30B-A3B bf16's 12 K steps take runs";
  EXPECT_TRUE(takes_runs(16, by_default)) << "DeepSeek-V3 full fp8: I = 2048, 16 K steps";
  EXPECT_FALSE(takes_runs(2, by_default)) << "DeepSeek-V3 TP8 fp8: I = 256 a rank, 2 K steps";
  EXPECT_FALSE(takes_runs(16, 0)) << "off";
  EXPECT_TRUE(takes_runs(1, 1));
}

// A take covers the set number of K steps (session 44: at 2 steps a run, one run a take left the copier
// waiting on the counter's round trip), never fewer than one run.
TEST(TakesRuns, InBatchesThatCoverTheSetKSteps) {
  EXPECT_EQ(runs_per_take(2, 8), 4) << "DeepSeek-V3 TP8 fp8: 2 K steps a run";
  EXPECT_EQ(runs_per_take(3, 8), 3) << "a TP rank starting 64 into a block: 3 steps";
  EXPECT_EQ(runs_per_take(6, 8), 2) << "Qwen3-30B-A3B fp8";
  EXPECT_EQ(runs_per_take(16, 8), 1) << "DeepSeek-V3 full fp8";
  EXPECT_EQ(runs_per_take(2, 1), 1) << "one run a take";
  EXPECT_GE(grouped_gemm_take_steps(), 1);
}

// Where stage 2 keeps fixed shares by its K steps, it takes its runs anyway where stage 1's fixed shares
// leave a tail: few stage-1 blocks with a run more than the rest (most SMs start stage 2 a stage-1 run
// early), and few takes per stage-2 block. Session 46's rows (H100, 132 blocks; tiles from the bench's
// random routing), each with what taking measured against fixed shares.
TEST(TakesRunsAtTail, WhereStage1LeavesFewBlocksARunLate) {
  const int percent = grouped_gemm_take_at_tail();
  EXPECT_GT(percent, 0) << "on by default";
  struct Row {
    const char* what;
    int tiles, stage1_runs_a_tile, stage2_runs_a_tile, per_take;
    bool takes;
  };
  for (const Row& r : {
           Row{"Qwen3-235B-A22B TP8 fp8 M=384: 266 runs, 2 late; -15 %", 133, 2, 32, 4, true},
           Row{"Qwen3-235B-A22B TP8 fp8 M=192: 278 runs, 14 late; -8 %", 139, 2, 32, 4, true},
           Row{"Qwen3-30B-A3B fp8 M=384: 798 runs, 6 late; -5.5 %", 133, 6, 16, 2, true},
           Row{"Qwen3-30B-A3B fp8 M=192: 840 runs, 48 late; -1.5 %", 140, 6, 16, 2, true},
           Row{"Qwen3-30B-A3B fp8 M=128: 768 runs, 108 late; +0.6 %", 128, 6, 16, 2, false},
           Row{"Qwen3-30B-A3B fp8 M=64: 750 runs, 90 late; level", 125, 6, 16, 2, false},
           Row{"Qwen3-235B-A22B TP8 fp8 M=64: 250 runs, 118 late; +1.3 %", 125, 2, 32, 4, false},
           Row{"Qwen3-Next fp8 M=64: 1464 runs, 12 late, 23 takes a block; +0.8 %", 366, 4, 16, 2, false},
           Row{"Qwen3-Next fp8 M=256: 2032 runs, 52 late; +1.6 %", 508, 4, 16, 2, false},
           Row{"DeepSeek-V3 TP8 fp8 M=64: 442 runs, 46 late, 24 takes a block; +1.4 %", 221, 2, 56, 4, false},
       }) {
    EXPECT_EQ(stage1_tail_takes_runs(r.tiles * r.stage1_runs_a_tile, 132, r.tiles * r.stage2_runs_a_tile, 132,
                                     r.per_take, percent),
              r.takes)
        << r.what;
  }
  EXPECT_FALSE(stage1_tail_takes_runs(264, 132, 4224, 132, 4, percent)) << "no remainder: no tail";
  EXPECT_FALSE(stage1_tail_takes_runs(266, 132, 4256, 132, 4, 0)) << "off";
  EXPECT_FALSE(stage1_tail_takes_runs(5, 132, 80, 132, 4, percent)) << "fewer runs than blocks: one each";
  EXPECT_FALSE(stage1_tail_takes_runs(0, 132, 0, 132, 4, percent)) << "no tiles";
}

// The one-block prologue's reach: 8 tokens by default (a decode batch), more only when asked
// (MOE_SMALL_PROLOGUE_TOKENS), and never past the pairs its shared memory holds.
TEST(SmallPrologue, TakesUpToItsTokensAndPairs) {
  const int tokens_default = small_prologue_max_tokens();
  EXPECT_EQ(tokens_default, 8);
  EXPECT_TRUE(prologue_fits_one_block(8, 8));
  EXPECT_FALSE(prologue_fits_one_block(9, 8));
  set_small_prologue_max_tokens(32);
  EXPECT_TRUE(prologue_fits_one_block(32, 8));
  EXPECT_FALSE(prologue_fits_one_block(33, 8));
  set_small_prologue_max_tokens(1024);
  EXPECT_TRUE(prologue_fits_one_block(128, 8)) << "1024 pairs";
  EXPECT_FALSE(prologue_fits_one_block(129, 8)) << "1032 pairs: past its shared memory";
  EXPECT_FALSE(prologue_fits_one_block(103, 10)) << "Qwen3-Next's top 10";
  set_small_prologue_max_tokens(tokens_default);
}

// The crossovers measured (H100, scripts/path-thresholds and MOE_SWAP_AB_BELOW; session 46's Qwen3-Next bf16;
// session 45's where it measured them: Qwen3-30B-A3B both formats and Qwen3-235B-A22B TP8 bf16; session 32's
// Qwen3-Next fp8, Qwen3-235B-A22B TP8 fp8 and DeepSeek-V3 TP8 fp8; session 28's the rest): per shape and
// format, the most tokens at which the swap-AB stages were faster and the fewest at which the grouped GEMM
// was. Auto must switch between them. (Rows within 1 % are left out as noise; Qwen3-30B-A3B bf16 had the
// grouped GEMM ahead from 8 tokens, the fewest measured, and 1 stands for the swap-AB side: the next test
// keeps its decode batches on one path.)
TEST(AutoSwapAbBelow, FollowsTheMeasuredCrossovers) {
  struct Crossover {
    const char* shape;
    int hidden, inter, experts;
    bool fp8;
    int swap_ab_faster_at, grouped_gemm_faster_at;
  };
  for (const Crossover& c : {Crossover{"qwen3-30b-a3b", 2048, 768, 128, true, 8, 24},
                             Crossover{"qwen3-30b-a3b", 2048, 768, 128, false, 1, 16},
                             Crossover{"qwen3-next-80b-a3b", 2048, 512, 512, true, 32, 48},
                             Crossover{"qwen3-next-80b-a3b", 2048, 512, 512, false, 12, 16},
                             Crossover{"qwen3-235b-a22b-tp8", 4096, 192, 128, true, 56, 64},
                             Crossover{"qwen3-235b-a22b-tp8", 4096, 192, 128, false, 8, 24},
                             Crossover{"deepseek-v3-tp8", 7168, 256, 256, true, 28, 32},
                             Crossover{"deepseek-v3-tp8", 7168, 256, 256, false, 12, 16},
                             Crossover{"deepseek-v3", 7168, 2048, 256, true, 8, 12},
                             Crossover{"deepseek-v3", 7168, 2048, 256, false, 2, 4}}) {
    const int below = auto_swap_ab_below(c.hidden, c.inter, c.fp8, c.experts);
    EXPECT_GT(below, c.swap_ab_faster_at) << c.shape << (c.fp8 ? " fp8" : " bf16");
    EXPECT_LE(below, c.grouped_gemm_faster_at) << c.shape << (c.fp8 ? " fp8" : " bf16");
  }
}

// Where H <= 4096 a decode batch (up to kDecodeOnePathTokens) stays on the swap-AB stages, so a token's bits
// are the same alone and inside it (the GPU test FusedMoeGpu checks the bits at 8 tokens): the intermediate
// sizes of Qwen3-30B-A3B and its TP ranks, Qwen3-Next's, Qwen3-235B-A22B's and its ranks, both formats.
TEST(AutoSwapAbBelow, KeepsDecodeBatchesOnOnePath) {
  for (const int experts : {128, 512})
    for (const int hidden : {2048, 4096})
      for (const int inter : {96, 192, 384, 512, 768, 1536})
        for (const bool fp8 : {true, false})
          EXPECT_GT(auto_swap_ab_below(hidden, inter, fp8, experts), kDecodeOnePathTokens)
              << "H " << hidden << " I " << inter << " E " << experts << (fp8 ? " fp8" : " bf16");
}

// The swap-AB stages' K warps: 8 for a wide K and 4 otherwise with the balancing off; balanced, the count
// that pads the stage's steps least, so no K warp of a tile idles while another runs a step more; by default
// only for stages of at most 2 steps.
TEST(SwapAbKGroups, PadTheStepsLeast) {
  for (const int steps : {1, 2, 3, 4, 6, 7, 16, 23})
    EXPECT_EQ(swap_ab_k_groups(steps, false, kBalanceOff), 4) << steps << " steps, unbalanced";
  for (const int steps : {24, 56, 57})
    for (const int mode : {kBalanceOff, kBalanceShortK, kBalanceAnyK})
      EXPECT_EQ(swap_ab_k_groups(steps, true, mode), 8) << steps << " steps, wide, mode " << mode;
  // Qwen3-30B-A3B's stage 2 (K 768: 6 steps), the TP8 stage 2s (2 steps), stage 1s of 16 steps, odd counts.
  const std::pair<int, int> want[] = {{6, 2},  {2, 2}, {16, 4}, {4, 4}, {8, 4},
                                      {12, 4}, {3, 1}, {5, 1},  {1, 1}};
  for (const auto& [steps, groups] : want) {
    EXPECT_EQ(swap_ab_k_groups(steps, false, kBalanceAnyK), groups) << steps << " steps, balanced";
    EXPECT_EQ(swap_ab_k_groups(steps, false, kBalanceShortK), steps <= 2 ? groups : 4)
        << steps << " steps, short K only";
    const int g = groups;
    for (const int other : {1, 2, 4})
      EXPECT_LE((steps + g - 1) / g * g, (steps + other - 1) / other * other) << steps << " steps: " << other;
  }
}

TEST(HGroupColumnBlocks, PartitionTheBlocksIntoTheGroupsOfH) {
  // Per-rank intermediate sizes of the shapes we serve (Qwen3-30B-A3B 768, /2, /4, /8 = 96 excluded: its
  // phase 96 is not a multiple of 64; DeepSeek-V3 TP8 256; Qwen3-235B TP8 192; Qwen3-Next 512) and odd ones.
  for (const int P : {768, 384, 192, 256, 512, 1536, 2048, 720, 64, 128, 80}) {
    for (const int phase : {0, 64}) {
      const int n_blocks = (P + kStage1BlockOutputs - 1) / kStage1BlockOutputs;
      const int groups = (P + phase + 127) / 128;
      int next = 0;
      for (int j = 0; j < groups; ++j) {
        const ColumnBlocks b = h_group_column_blocks(j, phase, n_blocks);
        const int lo = std::max(0, 128 * j - phase), hi = std::min(P, 128 * j + 128 - phase);
        SCOPED_TRACE(testing::Message() << "P=" << P << " phase=" << phase << " group " << j);
        EXPECT_EQ(b.begin, next) << "the groups' blocks follow each other";
        EXPECT_GE(b.end - b.begin, 1);
        EXPECT_LE(b.end - b.begin, 2);
        EXPECT_EQ(b.begin * kStage1BlockOutputs, lo) << "the first block starts the group";
        EXPECT_EQ(std::min(P, b.end * kStage1BlockOutputs), hi) << "the last block ends it";
        next = b.end;
      }
      EXPECT_EQ(next, n_blocks) << "P=" << P << " phase=" << phase << ": every block in some group";
    }
  }
}

// DeepSeek-V3 TP8 (E=256, top 8, H=7168, a 256-wide shard): the swapped tiles only below 8 pairs per expert,
// where they measured faster; the other shapes keep them up to 48.
TEST(GroupedGemmPairTile, WideShallowStage2KeepsSwappedTilesForFewPairs) {
  EXPECT_EQ(swap_max_mean_pairs(7168, 256), 7);
  EXPECT_EQ(swap_max_mean_pairs(7168, 2048), kMaxSwappedMean);  // DeepSeek-V3 unsharded
  EXPECT_EQ(swap_max_mean_pairs(4096, 192), kMaxSwappedMean);   // Qwen3-235B-A22B TP8
  EXPECT_EQ(swap_max_mean_pairs(2048, 768), kMaxSwappedMean);   // Qwen3-30B-A3B
  const int ds = swap_max_mean_pairs(7168, 256);
  EXPECT_EQ(swapped_pair_tile(8 * 128, 256, 32, ds), 16);   // M=128: 4 per expert
  EXPECT_EQ(swapped_pair_tile(8 * 256, 256, 32, ds), 128);  // M=256: 8
  EXPECT_EQ(swapped_pair_tile(8 * 768, 256, 32, ds), 128);  // M=768: 24
  EXPECT_EQ(swapped_pair_tile(8 * 256, 256, 32), 16);       // the same call without the shape's limit
}

TEST(GroupedGemmPairTile, FollowsTheMeanPairsPerExpert) {
  set_grouped_gemm_wgmma(true);
  set_grouped_gemm_swap(true);
  // Qwen3-30B-A3B (E=128, top 8): M tokens give 8 M pairs.
  EXPECT_EQ(swapped_pair_tile(8 * 1, 128, 64), 16);      // one pair per expert
  EXPECT_EQ(swapped_pair_tile(8 * 192, 128, 64), 16);    // 12 per expert
  EXPECT_EQ(swapped_pair_tile(8 * 256, 128, 64), 32);    // 16
  EXPECT_EQ(swapped_pair_tile(8 * 512, 128, 64), 64);    // 32
  EXPECT_EQ(swapped_pair_tile(8 * 768, 128, 64), 64);    // 48
  EXPECT_EQ(swapped_pair_tile(8 * 1024, 128, 64), 128);  // 64: full tiles waste little
  // Capped: tiles the mean would make larger than the cap are 128-pair tiles.
  EXPECT_EQ(swapped_pair_tile(8 * 192, 128, 16), 16);
  EXPECT_EQ(swapped_pair_tile(8 * 256, 128, 16), 128);
  EXPECT_EQ(swapped_pair_tile(8 * 256, 128, 32), 32);
  EXPECT_EQ(swapped_pair_tile(8 * 512, 128, 32), 128);
  const int cap = grouped_gemm_swap_max_tile();
  EXPECT_TRUE(cap == 16 || cap == 32 || cap == 64) << cap;
  for (int pairs : {8, 8 * 192, 8 * 256, 8 * 512, 8 * 1024})
    EXPECT_EQ(grouped_gemm_pair_tile(pairs, 128, 2048, 768), swapped_pair_tile(pairs, 128, cap)) << pairs;
  set_grouped_gemm_swap(false);
  EXPECT_EQ(grouped_gemm_pair_tile(8, 128, 2048, 768), 128);
  set_grouped_gemm_swap(true);
  set_grouped_gemm_wgmma(false);
  EXPECT_EQ(grouped_gemm_pair_tile(8, 128, 2048, 768), 128) << "mma.sync has 128-pair tiles only";
  set_grouped_gemm_wgmma(true);
}

// Whether the two swap-AB launches are sized for one wave together: by default only where the hidden size is
// DeepSeek's (wider than kJointWaveMinHidden), where it measured faster; the setting forces it either way.
TEST(SwapAbJointWave, ByDefaultOnlyForWideHidden) {
  const int setting = swap_ab_joint_wave_setting();
  set_swap_ab_joint_wave_setting(-1);
  EXPECT_TRUE(swap_ab_joint_wave(7168)) << "DeepSeek-V3's hidden size";
  EXPECT_FALSE(swap_ab_joint_wave(2048)) << "Qwen3-Next's hidden size";
  EXPECT_FALSE(swap_ab_joint_wave(kJointWaveMinHidden));
  set_swap_ab_joint_wave_setting(0);
  EXPECT_FALSE(swap_ab_joint_wave(7168));
  set_swap_ab_joint_wave_setting(1);
  EXPECT_TRUE(swap_ab_joint_wave(2048));
  set_swap_ab_joint_wave_setting(setting);
}

// The shared expert's L2 warm budget follows the joint wave by default (16 MB with it, 8 MB without, where
// each measured faster on DeepSeek-V3 full), and a set budget (0: off) holds whatever the joint wave does.
TEST(SharedExpertWarm, BudgetFollowsTheJointWaveByDefault) {
  const int warm = shared_expert_warm_kb(), wave = swap_ab_joint_wave_setting();
  set_shared_expert_warm_kb(-1);
  set_swap_ab_joint_wave_setting(-1);
  EXPECT_EQ(shared_expert_warm_kb_for(7168), 16384) << "DeepSeek-V3: the joint wave on";
  EXPECT_EQ(shared_expert_warm_kb_for(2048), 8192) << "Qwen3-Next: the joint wave off";
  set_swap_ab_joint_wave_setting(0);
  EXPECT_EQ(shared_expert_warm_kb_for(7168), 8192);
  set_swap_ab_joint_wave_setting(1);
  EXPECT_EQ(shared_expert_warm_kb_for(2048), 16384);
  for (const int kb : {0, 4096}) {
    set_shared_expert_warm_kb(kb);
    EXPECT_EQ(shared_expert_warm_kb_for(7168), kb);
    EXPECT_EQ(shared_expert_warm_kb_for(2048), kb);
  }
  set_shared_expert_warm_kb(warm);
  set_swap_ab_joint_wave_setting(wave);
}

// The swap-AB launches of a decode call whose shared expert runs beside its routed experts
// (swap_ab_joint_wave): sized apart, DeepSeek-V3's stage 2 at M=1 asks for more blocks than an H200 holds at
// once (132 SMs x 2), so part of the shared expert waits for a routed block to finish; sized together
// (beside_groups), both launches fit one wave, at every decode M of the shapes with a shared expert, and each
// launch still covers all of its tiles.
TEST(SwapAbJointWave, SharedAndRoutedBlocksFitOneWave) {
  constexpr long kSlots = 132 * 2;
  const auto blocks = [](int groups, int tiles, int tpb) { return groups * ((tiles + tpb - 1) / tpb); };
  {
    const int routed = 8, tiles = 7168 / 64;  // DeepSeek-V3 stage 2 at M=1: 8 experts, 64-row tiles of H
    const int apart = blocks(routed, tiles, swap_ab_tiles_per_block(routed, tiles, kSlots)) +
                      blocks(1, tiles, swap_ab_tiles_per_block(1, tiles, kSlots));
    EXPECT_GT(apart, kSlots) << "sized apart, DeepSeek-V3's stage 2 at M=1 should exceed one wave";
  }
  // Each launch sized for the routed groups and the shared expert's one group together: the row tiles per
  // block and the blocks of both launches, worked by hand (tiles per block = ceil((groups + 1) x tiles /
  // 264)). Qwen3-Next's stage 2 at M=8 is the one over a wave: 81 groups of 32 tiles, 10 per block, round up
  // to 4 blocks a group.
  struct Stage {
    const char* name;
    int routed_groups, tiles;
    int want_tiles_per_block, want_blocks;
  };
  // Stage 1: 16 h columns per tile for DeepSeek-V3 (8 K groups: 56 K steps), 32 for Qwen3-Next; stage 2: 64
  // output rows per tile.
  for (const Stage& st :
       {Stage{"deepseek-v3 s1 M=1", 8, 2048 / 16, 5, 234}, Stage{"deepseek-v3 s2 M=1", 8, 7168 / 64, 4, 252},
        Stage{"deepseek-v3 s1 M=4", 32, 2048 / 16, 16, 264},
        Stage{"deepseek-v3 s2 M=8", 64, 7168 / 64, 28, 260}, Stage{"qwen3-next s1 M=1", 10, 512 / 32, 1, 176},
        Stage{"qwen3-next s2 M=1", 10, 2048 / 64, 2, 176},
        Stage{"qwen3-next s2 M=8", 80, 2048 / 64, 10, 324}}) {
    SCOPED_TRACE(st.name);
    const int routed_tpb = swap_ab_tiles_per_block(st.routed_groups + 1, st.tiles, kSlots);
    const int shared_tpb = swap_ab_tiles_per_block(1 + st.routed_groups, st.tiles, kSlots);
    const int total = blocks(st.routed_groups, st.tiles, routed_tpb) + blocks(1, st.tiles, shared_tpb);
    EXPECT_EQ(routed_tpb, st.want_tiles_per_block);
    EXPECT_EQ(shared_tpb, st.want_tiles_per_block);
    EXPECT_EQ(total, st.want_blocks);
    // Every tile is covered, by no more blocks than it takes.
    EXPECT_GE(static_cast<long>(routed_tpb) * ((st.tiles + routed_tpb - 1) / routed_tpb), st.tiles);
    EXPECT_LT(static_cast<long>(routed_tpb) * ((st.tiles + routed_tpb - 1) / routed_tpb - 1), st.tiles);
    if (static_cast<long>(st.routed_groups + 1) * st.tiles <= 8 * kSlots) {
      EXPECT_LE(total, kSlots) << "a call this size fits one wave";
    }
  }
}

// The swap-AB warp's L2 requests ahead (MOE_SWAP_AB_L2_AHEAD=D), walked as the kernel walks them: its first
// step loaded, then D requests (start_walk), then per loaded step (tile, b) the next step loaded and the one
// D + 1 past (tile, b) requested. Every step the warp loads after its first was requested D loads before
// (right after load n - D), every request is of a step it then loads (or past its tiles, where the kernel
// asks nothing), and no step is requested twice: for K lengths of 1 to 60 steps, 4 and 8 K groups, every
// warp, one to three row tiles, and D = 1, 2, 3.
TEST(SwapAbL2Ahead, EveryLoadedStepWasRequestedDLoadsBefore) {
  struct Event {
    bool load;
    WeightStep at;
  };
  for (const int steps : {1, 2, 3, 6, 7, 16, 24, 56, 60})
    for (const int k_groups : {1, 2, 4, 8})
      for (int wk = 0; wk < k_groups; ++wk)
        for (const int tiles : {1, 2, 3})
          for (const int D : {1, 2, 3}) {
            SCOPED_TRACE(testing::Message() << "steps " << steps << " K groups " << k_groups << " warp " << wk
                                            << " tiles " << tiles << " D " << D);
            const int tile_begin = 5, tile_end = tile_begin + tiles;
            const auto live = [&](WeightStep s) { return s.tile < tile_end && s.b < steps; };
            std::vector<Event> events;
            const auto request = [&](WeightStep s) {
              if (live(s)) events.push_back({false, s});
            };
            events.push_back({true, {tile_begin, wk}});
            WeightStep at{tile_begin, wk};
            for (int d = 0; d < D; ++d) request(at = next_weight_step(at, k_groups, steps, wk));
            for (int tile = tile_begin; tile < tile_end; ++tile)
              for (int b = wk; b < steps; b += k_groups) {
                events.push_back({true, next_weight_step({tile, b}, k_groups, steps, wk)});
                request(l2_request_in_loop({tile, b}, D, k_groups, steps, wk));
              }
            std::vector<WeightStep> loads;
            std::vector<std::pair<WeightStep, int>> requests;  // step, loads before it
            for (const Event& e : events) {
              if (e.load && live(e.at)) loads.push_back(e.at);
              if (!e.load) requests.push_back({e.at, static_cast<int>(loads.size())});
            }
            const auto same = [](WeightStep x, WeightStep y) { return x.tile == y.tile && x.b == y.b; };
            ASSERT_EQ(static_cast<int>(loads.size()),
                      wk < steps ? tiles * ((steps - wk + k_groups - 1) / k_groups) : 0);
            ASSERT_EQ(requests.size(), loads.empty() ? 0u : loads.size() - 1);
            for (size_t n = 1; n < loads.size(); ++n) {
              const auto& [step, loads_before] = requests[n - 1];
              EXPECT_TRUE(same(step, loads[n])) << "load " << n;
              // Asked right after load n - D (the first D right after the first load): D loads before it.
              EXPECT_EQ(loads_before, std::max<int>(1, static_cast<int>(n) - D + 1)) << "load " << n;
            }
          }
}

}  // namespace
}  // namespace moe::cuda
