#pragma once
// The card's read bandwidth as our kernels can get it: a streaming 16-byte-load reduction over a buffer many
// times the L2, median of several runs. Bytes per second.
namespace moe::cuda {
double measure_read_bandwidth();
}
