// Linked when the build has no CUDA: the cuda backend explains itself instead of crashing.
#include "core/error.h"
#include "layout/backend.h"

namespace moe {
std::unique_ptr<MoeBackend> make_cuda_backend() {
  fail_input("this build of moe has no CUDA backend (nvcc was not found at configure time)");
}
}  // namespace moe

#include "cuda/bench.h"
#include "cuda/boundary_latency.h"
#include "cuda/read_in_flight.h"
namespace moe::cuda {
int run_read_in_flight_sweep() {
  fail_input(
      "moe bench --read-sweep: this build of moe has no CUDA backend (nvcc was not found at configure time)");
}
int run_boundary_bench(const BoundaryBenchOptions&) {
  fail_input(
      "moe bench --boundaries: this build of moe has no CUDA backend (nvcc was not found at configure time)");
}
int run_moe_bench(const BenchOptions&) {
  fail_input("moe bench: this build of moe has no CUDA backend (nvcc was not found at configure time)");
}
}  // namespace moe::cuda
