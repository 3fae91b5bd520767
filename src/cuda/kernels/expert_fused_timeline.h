#pragma once
// The fused decode kernel's per-block timeline (MOE_FUSED_TIMELINE=1): thread 0 of each block writes the
// globaltimer at each of these events of the last launch into fused_timeline_buffer(); moe bench prints them.
namespace moe::cuda {

enum TimelineEvent : int {
  kStart,
  kWaited,
  kRouted,
  kPlanned,
  kScalesLoaded,
  kFirstItem,
  kStage1Done,
  kBarrierDone,
  kHRoundTrip,  // thread 0's one L2 read of h after the barrier returned (the round trip then)
  kHStaged,
  kStage2First,
  kStage2Computed,  // warp 0 through its tiles of stage 2's first item
  kStage2Second,    // the next items of stage 2 ready (their slots' data landed)
  kStage2Third,
  kStage2Last,
  kStage2Done,
  kEnd,
  kEvents
};

// The events' names, in order, for the report.
extern const char* const kTimelineEventNames[kEvents];

}  // namespace moe::cuda
