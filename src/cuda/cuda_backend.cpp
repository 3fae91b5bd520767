// The CUDA backend of `moe check`: uploads a rank's weights, runs the fused op once on the GPU, widens the
// bf16 output. With --poison every output and workspace buffer is NaN-filled first.
#include <cuda_runtime.h>

#include <vector>

#include "core/codecs.h"
#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/moe_layer.h"
#include "layout/backend.h"

namespace moe {
namespace {

class CudaBackend : public MoeBackend {
 public:
  CudaBackend() {
    require_input(cuda::device_count() > 0, "cuda backend: no CUDA device is visible on this machine");
  }
  std::string name() const override { return "cuda"; }

  void run(const MoeCase& c, const layout::RankWeights& rank, bool poison, float* out) override {
    const int M = static_cast<int>(c.M), H = static_cast<int>(c.weights.hidden),
              E = static_cast<int>(c.weights.num_experts);
    cuda::DeviceMoeLayer layer(c.config, rank);
    cuda::MoeWorkspace ws(layer, M);
    std::vector<uint16_t> xb(static_cast<size_t>(M) * H);
    for (size_t i = 0; i < xb.size(); ++i) xb[i] = f32_to_bf16(c.x.as<float>()[i]);
    cuda::DeviceBuffer x(xb.size() * 2), logits(static_cast<size_t>(M) * E * 4), y(xb.size() * 2);
    x.upload(xb.data(), xb.size() * 2);
    logits.upload(c.router_logits.data, static_cast<size_t>(M) * E * 4);
    cudaStream_t stream;
    MOE_CUDA_CHECK(cudaStreamCreate(&stream));
    if (poison) {
      ws.poison(stream);
      y.poison(stream);
    }
    cuda::fused_moe(layer, ws, x.as<uint16_t>(), logits.as<float>(), M, y.as<uint16_t>(), stream);
    MOE_CUDA_CHECK(cudaStreamSynchronize(stream));
    MOE_CUDA_CHECK(cudaGetLastError());
    MOE_CUDA_CHECK(cudaStreamDestroy(stream));
    std::vector<uint16_t> yb(xb.size());
    MOE_CUDA_CHECK(cudaMemcpy(yb.data(), y.get(), yb.size() * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < yb.size(); ++i) out[i] = bf16_to_f32(yb[i]);
  }
};

}  // namespace

std::unique_ptr<MoeBackend> make_cuda_backend() {
  return std::make_unique<CudaBackend>();
}

}  // namespace moe
