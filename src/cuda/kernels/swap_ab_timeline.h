#pragma once
// The swap-AB stages' per-block timeline: in a measuring build (scripts/build-measuring MOE_SWAP_AB_TIMELINE)
// run with MOE_SWAP_AB_TIMELINE=1, thread 0 of each block writes the globaltimer at these events of the
// stage's last launch; moe bench prints them. For finding where a decode
// call's time goes inside the graph (programmatic launches overlap, so kernel-level timers cannot say).
namespace moe::cuda {

enum SwapAbEvent : int {
  kSwStart,
  kSwWaited,
  kSwRouted,     // self-routed stage 1: warp 0's token routed
  kSwGrouped,    // self-routed stage 1: the grouping done (x staged)
  kSwStaged,     // the pass's tokens staged (not self-routed)
  kSwFirstStep,  // the first row tile's K steps done (its weights all arrived)
  kSwWritten,    // every row tile's outputs stored (stage 2: before its one-token combine)
  kSwEnd,        // stage 2: after the combine, where it does one
  kSwEvents
};
constexpr int kSwTimelineBlocks = 1024;

// Null unless MOE_SWAP_AB_TIMELINE is set: [stage 0..1][kSwTimelineBlocks][kSwEvents].
unsigned long long* swap_ab_timeline_buffer();
void swap_ab_timeline_report();

}  // namespace moe::cuda
