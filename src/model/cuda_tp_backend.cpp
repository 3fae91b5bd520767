// The tensor-parallel CUDA model backend: communicators, one rank backend per GPU, the step on every rank.
#include <cuda_runtime.h>

#include <cstdio>

#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/kernels/expert_fused.h"
#include "dist/staged_communicator.h"
#include "model/cuda/tp_model_backend.h"
#include "model/tp_weights.h"
#ifdef MOE_HAVE_NCCL
#include "dist/nccl_communicator.h"
#endif

namespace moe::model {
namespace gpu {
namespace {

constexpr bool kHaveNccl =
#ifdef MOE_HAVE_NCCL
    true;
#else
    false;
#endif

// "auto" takes NCCL when every rank can have its own GPU; otherwise the user chooses the host-staged check
// mode explicitly, since it is far slower than serving should be.
std::string choose_comm(const BackendOptions& opts, int gpus) {
  require_known_tp_comm(opts.tp_comm);
  if (opts.tp_comm == "host") return "host";
  const int N = opts.tp_size;
  if (kHaveNccl && gpus >= N) return "nccl";
  fail_input(
      "--tp ", N, opts.tp_comm == "nccl" ? " --tp-comm nccl" : "", " needs ", N,
      " GPUs for NCCL (one per rank), ", gpus, " visible", kHaveNccl ? "" : ", and this build has no NCCL",
      "; --tp-comm host runs the ranks on the visible GPUs through host memory (a check mode: eager and "
      "slow)");
}

std::vector<std::unique_ptr<dist::Communicator>> make_comms(const std::string& kind,
                                                            const std::vector<int>& devices) {
#ifdef MOE_HAVE_NCCL
  if (kind == "nccl") return dist::make_nccl_communicators(devices);
#endif
  require(kind == "host", "tp backend: communicator '", kind, "' is not built");
  return dist::make_staged_communicators(devices);
}

}  // namespace

TpCudaBackend::TpCudaBackend(const HfCheckpoint& ckpt, const BackendOptions& opts,
                             const CudaBackendOptions& cuda_opts) {
  const int N = opts.tp_size;
  const ModelSpec spec = make_model_spec(ckpt.config());
  const TpOptions tp = tp_options_of(opts);
  std::vector<ModelShardPlan> plans;
  for (int r = 0; r < N; ++r) plans.push_back(plan_model_shard(spec, r, tp));
  const int gpus = cuda::device_count();
  require_input(gpus > 0, "cuda backend: no CUDA device is visible on this machine");
  const std::string kind = choose_comm(opts, gpus);
  for (int r = 0; r < N; ++r) devices_.push_back(r % gpus);
  // Ranks that share a GPU run their steps at once, and two one-launch fused MoE kernels on one GPU could
  // each wait at their grid barrier for blocks the other holds SMs for.
  if (N > gpus) cuda::forbid_fused_decode();
  comms_ = make_comms(kind, devices_);
  for (int r = 0; r < N; ++r) {
    if (opts.verbose)
      std::fprintf(stderr, "tp rank %d/%d on cuda:%d: %s\n", r, N, devices_[static_cast<size_t>(r)],
                   plans[static_cast<size_t>(r)].describe().c_str());
    MOE_CUDA_CHECK(cudaSetDevice(devices_[static_cast<size_t>(r)]));
    // Every CUDA rank keeps its own embeddings, final norm and lm_head (replicated).
    const ModelWeights w = load_model_weights(ckpt, opts.verbose, plans[static_cast<size_t>(r)], true);
    ranks_.push_back(std::make_unique<CudaModelBackend>(upload_model(w, ckpt), opts, cuda_opts,
                                                        comms_[static_cast<size_t>(r)].get()));
  }
  workers_ = std::make_unique<dist::RankWorkers>(comms_);
  name_ = str("cuda tp ", N, " (", kind, ", ", opts.expert_parallel ? "ep" : "tp", " experts)");
}

TpCudaBackend::~TpCudaBackend() {
  workers_.reset();
  for (size_t r = 0; r < ranks_.size(); ++r) {
    cudaSetDevice(devices_[r]);  // each rank's buffers, streams and graphs are freed on its own GPU
    ranks_[r].reset();
  }
}

std::vector<float> TpCudaBackend::forward(const std::vector<StepSequence>& batch) {
  std::vector<float> out;
  workers_->run([&](dist::Communicator& c) {
    std::vector<float> logits = ranks_[static_cast<size_t>(c.rank())]->forward(batch);
    if (c.rank() == 0) out = std::move(logits);
  });
  return out;
}

void TpCudaBackend::copy_kv_page(int32_t src, int32_t dst) {
  for (int r = 0; r < tp_size(); ++r) rank(r).copy_kv_page(src, dst);
}

CudaModelBackend& TpCudaBackend::rank(int r) {
  MOE_CUDA_CHECK(cudaSetDevice(devices_[static_cast<size_t>(r)]));
  return *ranks_[static_cast<size_t>(r)];
}

void TpCudaBackend::fill_kv_random(uint64_t seed) {
  for (int r = 0; r < tp_size(); ++r) rank(r).fill_kv_random(seed + static_cast<uint64_t>(r));
}

double TpCudaBackend::time_step_ms(const std::vector<StepSequence>& batch, int reps) {
  double ms = 0;
  workers_->run([&](dist::Communicator& c) {
    const double t = ranks_[static_cast<size_t>(c.rank())]->time_step_ms(batch, reps);
    if (c.rank() == 0) ms = t;
  });
  return ms;
}

}  // namespace gpu

std::unique_ptr<ModelBackend> make_cuda_tp_backend(const HfCheckpoint& ckpt, const BackendOptions& opts,
                                                   const CudaBackendOptions& cuda_opts) {
  return std::make_unique<gpu::TpCudaBackend>(ckpt, opts, cuda_opts);
}

}  // namespace moe::model
