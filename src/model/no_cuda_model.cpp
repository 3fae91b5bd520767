// Linked when the build has no CUDA: the cuda model backend and its benchmark explain themselves.
#include "core/error.h"
#include "model/cuda_backend.h"
#include "model/cuda_bench.h"

namespace moe::model {

bool cuda_model_backend_available() {
  return false;
}

int64_t cuda_combines_in_norm() {
  return 0;
}

bool cuda_gemv_compact() {
  return false;
}

void set_cuda_gemv_compact(bool) {}

int64_t cuda_gemv_compact_launches() {
  return 0;
}

bool cuda_router_prologue() {
  return false;
}

void set_cuda_router_prologue(bool) {}

int64_t cuda_router_prologue_launches() {
  return 0;
}

std::unique_ptr<ModelBackend> make_cuda_model_backend(const ModelWeights&, const TensorSource&,
                                                      const BackendOptions&, const CudaBackendOptions&) {
  fail_input("this build of moe has no CUDA backend (nvcc was not found at configure time)");
}

std::unique_ptr<ModelBackend> make_cuda_tp_backend(const HfCheckpoint&, const BackendOptions&,
                                                   const CudaBackendOptions&) {
  fail_input("this build of moe has no CUDA backend (nvcc was not found at configure time)");
}

int run_model_bench(const ModelBenchOptions&) {
  fail_input("moe bench: this build of moe has no CUDA backend (nvcc was not found at configure time)");
}

}  // namespace moe::model
