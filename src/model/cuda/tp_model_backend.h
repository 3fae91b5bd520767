#pragma once
// Tensor parallelism on GPUs (docs/tensor-parallel.md): one CudaModelBackend per rank, each built from its
// rank's shard of the checkpoint on its GPU, tied together by a communicator per rank (NCCL, or host-staged
// when ranks share GPUs). The host scheduler stays single: forward hands the step to every rank on its own
// thread (dist::RankWorkers: persistent, one per rank) and returns rank 0's logits (every rank computes the
// same replicated lm_head).
#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "dist/rank_workers.h"
#include "io/hf_checkpoint.h"
#include "model/cuda/cuda_model_backend.h"

namespace moe::model::gpu {

class TpCudaBackend : public ModelBackend {
 public:
  // Plans every rank first (a model that cannot be split is refused before anything is read), then loads and
  // uploads one rank at a time, so the host holds one rank's weights at once.
  TpCudaBackend(const HfCheckpoint& ckpt, const BackendOptions& opts, const CudaBackendOptions& cuda_opts);
  ~TpCudaBackend() override;

  std::string name() const override { return name_; }
  const ModelSpec& spec() const override { return ranks_[0]->spec(); }
  int64_t page_size() const override { return ranks_[0]->page_size(); }
  int64_t num_pages() const override { return ranks_[0]->num_pages(); }
  std::vector<float> forward(const std::vector<StepSequence>& batch) override;
  void copy_kv_page(int32_t src, int32_t dst) override;

  // Rank 0's median step time (every rank runs the step; the all-reduces keep them in step).
  double time_step_ms(const std::vector<StepSequence>& batch, int reps);
  int tp_size() const { return static_cast<int>(ranks_.size()); }
  // Rank r's backend, with the calling thread's current device set to its GPU (host calls such as
  // last_step_unique_experts use that rank's stream).
  CudaModelBackend& rank(int r);
  bool graph_capturable() const { return comms_[0]->graph_capturable(); }
  void fill_kv_random(uint64_t seed);  // every rank's pages

 private:
  std::vector<int> devices_;  // rank r's GPU
  std::vector<std::unique_ptr<dist::Communicator>> comms_;
  std::vector<std::unique_ptr<CudaModelBackend>> ranks_;
  std::unique_ptr<dist::RankWorkers> workers_;  // after comms_: stopped before they go
  std::string name_;
};

}  // namespace moe::model::gpu
