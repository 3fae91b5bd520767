#pragma once
// Host side of the phase timelines' per-block stamp buffers ([blocks][events] globaltimer stamps, 0 where a
// block wrote none): the fused decode kernel's (expert_fused_timeline.h) and the swap-AB stages'
// (swap_ab_timeline.h).
#include <cstddef>
#include <vector>

namespace moe::cuda {

// A zeroed device buffer of `words` stamps when the environment variable `env` is set, else null.
unsigned long long* stamp_buffer_if_set(const char* env, size_t words);

// The device buffer's first `words` stamps, after the device has finished writing them.
std::vector<unsigned long long> fetch_stamps(const unsigned long long* device, size_t words);

// The earliest stamp of event `ev` over blocks [0, blocks) that wrote it (~0 when none did).
unsigned long long earliest_stamp(const unsigned long long* t, int blocks, int events, int ev);

// Event `ev` of blocks [0, blocks) of the [blocks][events] stamps at `t`: the times of the blocks that wrote
// it, not before t0, in us after t0, sorted.
std::vector<double> event_times_us(const unsigned long long* t, int blocks, int events, int ev,
                                   unsigned long long t0);

}  // namespace moe::cuda
