#pragma once
// The order in which a swap-AB warp walks its weight steps, shared by the kernel and the CPU test of its L2
// requests ahead: K steps wk, wk + G, ... (G: the block's K groups) of one row tile, then the next tile's.
// A warp loads each step into registers one step ahead of its MMAs; with D steps asked of L2 ahead of that,
// every step the warp loads from the second one on was requested D loads earlier (the first D right after
// the warp's first load, the rest one per loaded step).
#include "core/codecs.h"  // MOE_HD

namespace moe::cuda {

struct WeightStep {
  int tile, b;  // row tile, K step
};

MOE_HD WeightStep next_weight_step(WeightStep s, int k_groups, int steps, int wk) {
  s.b += k_groups;
  if (s.b >= steps) {
    s.b = wk;
    ++s.tile;
  }
  return s;
}

// The step `n` places after s.
MOE_HD WeightStep weight_step_after(WeightStep s, int n, int k_groups, int steps, int wk) {
  for (int i = 0; i < n; ++i) s = next_weight_step(s, k_groups, steps, wk);
  return s;
}

// The step a warp asks L2 for in the loop, at its step s (having just loaded the one after s): D loads ahead
// of its load.
MOE_HD WeightStep l2_request_in_loop(WeightStep s, int d, int k_groups, int steps, int wk) {
  return weight_step_after(s, d + 1, k_groups, steps, wk);
}

// L2's line: a row's 128-byte step is one line, or two where it is not line-aligned.
constexpr int kL2LineBytes = 128;

}  // namespace moe::cuda
