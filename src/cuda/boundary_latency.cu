// The boundary benchmark (boundary_latency.h). One chain: a seed kernel writes row 0 of `vals`; link k
// (a kernel, or a phase of the persistent kernel) has every block sum all of row k and write its own entry of
// row k + 1, so each link needs every block of the one before. A graph holds the poisoning of `vals`, the
// zeroing of the counters (so no kernel reads a count it did not see written in the same replay), the seed
// and the chain; the time per boundary is (graph with C + 1 links - graph with 1) / C, so both graphs start
// and end alike and the difference is C boundaries of the mode's own kind. Every block checks the sum it read
// against the host's (a read before its predecessor's write sees the poison) and counts a mismatch.
#include "cuda/boundary_latency.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/device_buffer.h"
#include "cuda/event_timing.h"
#include "cuda/kernels/chain_count.cuh"
#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/pdl_launch.h"

namespace moe::cuda {
namespace {

constexpr int kThreads = 128;

enum class Mode { Stream, Pdl, Counter, CounterSleep, Persistent };
constexpr Mode kModes[] = {Mode::Stream, Mode::Pdl, Mode::Counter, Mode::CounterSleep, Mode::Persistent};
constexpr const char* kModeNames[] = {"stream", "pdl", "counter", "counter-sleep", "persistent"};

struct Chain {
  uint32_t* vals;            // [links + 1][stride]: row k is link k's input
  unsigned* arrived;         // [links + 1]: blocks that have written row k
  const uint32_t* expected;  // [links]: the sum of row k, as the host computes it
  uint32_t* mismatches;      // blocks that read another sum, over every replay
  int blocks, stride;
};

__host__ __device__ inline uint32_t link_output(uint32_t sum, uint32_t block, uint32_t link) {
  return sum * 2654435761u + block + 7u * link;
}

// Warp 0 sums row `link` (L2 loads: the row was written by other SMs in this replay).
__device__ uint32_t read_row(const Chain& c, int link) {
  __shared__ uint32_t total;
  if (threadIdx.x < 32) {
    const uint32_t* row = c.vals + static_cast<size_t>(link) * c.stride;
    uint32_t s = 0;
    for (int b = threadIdx.x; b < c.blocks; b += 32) s += __ldcg(row + b);
    for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(~0u, s, o);
    if (threadIdx.x == 0) total = s;
  }
  __syncthreads();
  return total;
}

// Thread 0: the block's entry of the next row, after checking the sum it read.
__device__ void write_row(const Chain& c, int link, uint32_t sum) {
  if (sum != c.expected[link]) atomicAdd(c.mismatches, 1u);
  c.vals[static_cast<size_t>(link + 1) * c.stride + blockIdx.x] = link_output(sum, blockIdx.x, link);
}

__global__ void seed_kernel(Chain c) {
  if (threadIdx.x == 0) {
    c.vals[blockIdx.x] = blockIdx.x + 1;
    count_arrive(c.arrived);
  }
}

// One link of a chain kernel per launch (every mode but Persistent): it triggers its successor at once (as
// the model's kernels do), then waits its way.
template <Mode kMode>
__global__ void __launch_bounds__(kThreads) link_kernel(Chain c, int link) {
  if constexpr (kMode != Mode::Stream) pdl_trigger();
  if constexpr (kMode == Mode::Pdl) pdl_wait();
  constexpr bool kCounter = kMode == Mode::Counter || kMode == Mode::CounterSleep;
  if constexpr (kCounter) count_wait<kMode == Mode::CounterSleep>(c.arrived + link, c.blocks);
  const uint32_t sum = read_row(c, link);
  if (threadIdx.x == 0) {
    write_row(c, link, sum);
    if constexpr (kCounter) count_arrive(c.arrived + link + 1);
  }
}

// The whole chain in one launch; needs every block resident at once (checked by the host).
__global__ void __launch_bounds__(kThreads) persistent_kernel(Chain c, int links) {
  for (int link = 0; link < links; ++link) {
    count_wait(c.arrived + link, c.blocks);
    const uint32_t sum = read_row(c, link);
    if (threadIdx.x == 0) {
      write_row(c, link, sum);
      count_arrive(c.arrived + link + 1);
    }
  }
}

// The buffers' sizes, the same for every graph, so a chain's time and its empty chain's differ by links only.
struct Sizes {
  size_t vals_bytes, arrived_bytes;
};

void enqueue_chain(Mode mode, const Chain& c, int links, Sizes z, cudaStream_t s) {
  MOE_CUDA_CHECK(cudaMemsetAsync(c.vals, 0xff, z.vals_bytes, s));
  MOE_CUDA_CHECK(cudaMemsetAsync(c.arrived, 0, z.arrived_bytes, s));
  seed_kernel<<<c.blocks, 32, 0, s>>>(c);
  MOE_CUDA_CHECK_LAUNCH();
  if (mode == Mode::Persistent) {
    persistent_kernel<<<c.blocks, kThreads, 0, s>>>(c, links);
    MOE_CUDA_CHECK_LAUNCH();
    return;
  }
  // The overlapped modes' kernels; stream order launches plainly.
  void (*const overlapped)(Chain, int) = mode == Mode::Pdl       ? link_kernel<Mode::Pdl>
                                         : mode == Mode::Counter ? link_kernel<Mode::Counter>
                                                                 : link_kernel<Mode::CounterSleep>;
  for (int link = 0; link < links; ++link) {
    if (mode == Mode::Stream) {
      link_kernel<Mode::Stream><<<c.blocks, kThreads, 0, s>>>(c, link);
      MOE_CUDA_CHECK_LAUNCH();
    } else {
      launch_overlapped(overlapped, dim3(c.blocks), dim3(kThreads), 0, s, c, link);
    }
  }
}

// Median microseconds of one replay of the graph of `links` links.
double time_chain(Mode mode, const Chain& c, int links, Sizes z, int reps, cudaStream_t s) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  MOE_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  enqueue_chain(mode, c, links, z, s);
  MOE_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
  MOE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int w = 0; w < 3; ++w) MOE_CUDA_CHECK(cudaGraphLaunch(exec, s));
  const double ms = median(time_each_ms(s, reps, [&] { MOE_CUDA_CHECK(cudaGraphLaunch(exec, s)); }));
  MOE_CUDA_CHECK(cudaGraphExecDestroy(exec));
  MOE_CUDA_CHECK(cudaGraphDestroy(graph));
  return ms * 1e3;
}

// The sum of each row 0 .. links, as the host computes it.
std::vector<uint32_t> expected_sums(int blocks, int links) {
  std::vector<uint32_t> row(blocks), sums;
  for (int b = 0; b < blocks; ++b) row[b] = b + 1;
  for (int link = 0;; ++link) {
    uint32_t sum = 0;
    for (uint32_t v : row) sum += v;
    sums.push_back(sum);
    if (link == links) return sums;
    for (int b = 0; b < blocks; ++b) row[b] = link_output(sum, b, link);
  }
}

uint32_t read_count(const uint32_t* p) {
  uint32_t v = 0;
  MOE_CUDA_CHECK(cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost));
  return v;
}

int resident_blocks() {
  int per_sm = 0;
  MOE_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, persistent_kernel, kThreads, 0));
  return per_sm * sm_count();
}

}  // namespace

int run_boundary_bench(const BoundaryBenchOptions& o) {
  require_input(device_count() > 0, "moe bench --boundaries: no CUDA device");
  require_input(o.chain >= 1 && o.reps >= 1, "moe bench --boundaries: chain and reps must be positive");
  cudaDeviceProp prop{};
  MOE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int stride = *std::max_element(o.blocks.begin(), o.blocks.end());
  const int longest = o.chain + 1;  // links in the longer of the two graphs
  const Sizes z{sizeof(uint32_t) * static_cast<size_t>(longest + 1) * stride,
                sizeof(uint32_t) * (longest + 1)};
  DeviceBuffer vals(z.vals_bytes), arrived(z.arrived_bytes), expected(sizeof(uint32_t) * (longest + 1)),
      mismatches(sizeof(uint32_t));
  cudaStream_t s;
  MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::printf(
      "# boundaries: %s, %d SMs; chains of %d dependent links, each block reading every block of the "
      "link before; us per boundary, median of %d graph replays\n",
      prop.name, prop.multiProcessorCount, o.chain, o.reps);
  std::printf("%8s", "blocks");
  for (const char* name : kModeNames) std::printf(" %14s", name);
  std::printf("\n");
  int failures = 0;
  for (int blocks : o.blocks) {
    require_input(blocks >= 1 && blocks <= 65535, "moe bench --boundaries: bad block count ", blocks);
    const std::vector<uint32_t> sums = expected_sums(blocks, longest);
    expected.upload(sums.data(), sizeof(uint32_t) * sums.size());
    const Chain c{vals.as<uint32_t>(),
                  arrived.as<unsigned>(),
                  expected.as<uint32_t>(),
                  mismatches.as<uint32_t>(),
                  blocks,
                  stride};
    std::printf("%8d", blocks);
    for (size_t m = 0; m < std::size(kModes); ++m) {
      const Mode mode = kModes[m];
      if (mode == Mode::Persistent && blocks > resident_blocks()) {
        std::printf(" %14s", "n/a");
        continue;
      }
      MOE_CUDA_CHECK(cudaMemset(c.mismatches, 0, sizeof(uint32_t)));
      const double base = time_chain(mode, c, 1, z, o.reps, s);
      const double full = time_chain(mode, c, longest, z, o.reps, s);
      MOE_CUDA_CHECK(cudaStreamSynchronize(s));
      const uint32_t bad = read_count(c.mismatches);
      failures += bad != 0;
      std::printf(" %13.3f%s", (full - base) / o.chain, bad ? "!" : " ");
      std::fflush(stdout);
    }
    std::printf("\n");
  }
  MOE_CUDA_CHECK(cudaStreamDestroy(s));
  if (failures)
    std::printf("FAIL: %d mode(s) had a block read a sum other than the host's (marked !)\n", failures);
  return failures ? 1 : 0;
}

}  // namespace moe::cuda
