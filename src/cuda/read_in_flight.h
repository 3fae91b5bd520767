#pragma once
// How the card's read bandwidth depends on the bytes each SM keeps in flight and on the access pattern the
// swap-AB stages use (a warp's 4 KB step: 128 bytes of each of 32 weight rows; `moe bench --read-sweep`).
// The decode stages hold one such step per warp in registers, 16 warps per SM (64 KB): this says what that
// reaches on a given card, and what more in flight would buy, before a kernel is rewritten for it.
#include <vector>

namespace moe::cuda {

struct InFlightRow {
  int row_bytes;      // the weight rows' pitch (128: one contiguous stream)
  int blocks_per_sm;  // 256-thread blocks per SM (at most what occupancy allows)
  int warp_steps;     // 4 KB steps each warp has in flight at once (cp.async into shared memory)
  double kb_per_sm;   // blocks_per_sm x 8 warps x warp_steps x 4 KB
  double mb_total;    // kb_per_sm over every SM
  double gb_per_s;
};

// Every (row pitch, blocks per SM, steps per warp) combination, each the median of several timed reads of a
// buffer many times the L2. Prints progress to stderr.
std::vector<InFlightRow> sweep_read_in_flight(const std::vector<int>& row_bytes);

// The sweep's table on stdout, each rate also as a share of measure_read_bandwidth's: returns 0.
int run_read_in_flight_sweep();

}  // namespace moe::cuda
