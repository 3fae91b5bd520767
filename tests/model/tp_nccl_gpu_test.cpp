// The NCCL communicator on every visible GPU (one thread per GPU, ncclCommInitAll, NVLS off): an in-place
// all-reduce of fp32 and bf16 buffers equals the sum of the ranks' inputs, eagerly and replayed from a CUDA
// graph (the decode step is captured with its all-reduces), and the barrier returns on every rank. On one GPU
// it checks initialisation, the identity sum and graph capture; on 2 / 4 / 8 GPUs the real sums
// (docs/tensor-parallel.md).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/codecs.h"
#include "cuda/cuda_check.h"
#include "dist/launch.h"
#include "dist/nccl_communicator.h"

namespace moe::dist {
namespace {

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x

float value(int rank, int64_t i) {
  return std::ldexp(static_cast<float>((i * 7 + rank * 13) % 61 - 30), -3);
}

TEST(nccl_communicator, AllReduceEagerAndInGraph) {
  const int devices = cuda::device_count();
  if (devices == 0) GTEST_SKIP() << "no CUDA device";
  std::vector<int> ids;
  for (int d = 0; d < devices; ++d) ids.push_back(d);
  const auto comms = make_nccl_communicators(ids);
  ASSERT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  const int64_t n = 4099;  // not a multiple of anything NCCL likes
  std::vector<std::vector<float>> got(ids.size());
  std::vector<std::vector<uint16_t>> got_b(ids.size());
  run_ranks(comms, [&](Communicator& c) {
    const int r = c.rank();
    std::vector<float> h(static_cast<size_t>(n));
    std::vector<uint16_t> hb(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      h[static_cast<size_t>(i)] = value(r, i);
      hb[static_cast<size_t>(i)] = f32_to_bf16(value(r, i));
    }
    float* d = nullptr;
    uint16_t* db = nullptr;
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc(&d, static_cast<size_t>(n) * 4));
    CUDA_OK(cudaMalloc(&db, static_cast<size_t>(n) * 2));
    CUDA_OK(cudaMemcpy(d, h.data(), static_cast<size_t>(n) * 4, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(db, hb.data(), static_cast<size_t>(n) * 2, cudaMemcpyHostToDevice));
    // Eager f32, then bf16 captured in a graph and replayed once.
    c.all_reduce_sum(d, n, ReduceType::F32, s);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    c.all_reduce_sum(db, n, ReduceType::BF16, s);
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
    CUDA_OK(cudaGraphLaunch(ge, s));
    CUDA_OK(cudaStreamSynchronize(s));
    c.barrier();
    got[static_cast<size_t>(r)].resize(static_cast<size_t>(n));
    got_b[static_cast<size_t>(r)].resize(static_cast<size_t>(n));
    CUDA_OK(cudaMemcpy(got[static_cast<size_t>(r)].data(), d, static_cast<size_t>(n) * 4,
                       cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(got_b[static_cast<size_t>(r)].data(), db, static_cast<size_t>(n) * 2,
                       cudaMemcpyDeviceToHost));
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaFree(d);
    cudaFree(db);
    cudaStreamDestroy(s);
  });
  // Values are multiples of 1/8 below 4 in magnitude: every partial sum is exact in fp32 and in bf16 up to 8
  // ranks, whatever order NCCL sums in.
  for (size_t r = 0; r < ids.size(); ++r)
    for (int64_t i = 0; i < n; ++i) {
      float want = 0;
      for (size_t q = 0; q < ids.size(); ++q) want += value(static_cast<int>(q), i);
      ASSERT_EQ(got[r][static_cast<size_t>(i)], want) << "f32 rank " << r << " element " << i;
      ASSERT_EQ(bf16_to_f32(got_b[r][static_cast<size_t>(i)]), want)
          << "bf16 (graph) rank " << r << " element " << i;
    }
  std::printf("[ nccl ] %zu GPU(s): f32 eager and bf16 graph all-reduce of %ld elements exact\n", ids.size(),
              static_cast<long>(n));
}

}  // namespace
}  // namespace moe::dist
