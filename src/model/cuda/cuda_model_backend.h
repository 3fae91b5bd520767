#pragma once
// The CUDA model backend's class, for the factory, the benchmark and the GPU tests (which also time steps and
// look at routing). Host code with CUDA types: built only with CUDA.
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "dist/communicator.h"
#include "model/backend.h"
#include "model/cuda/device_model.h"
#include "model/cuda/gemm.h"
#include "model/cuda/launch.h"
#include "model/cuda/step_stamps.h"
#include "model/cuda_backend.h"

namespace moe::model::gpu {

// How one step is laid out on the device; decode steps with the same (padded batch, page-table width) share a
// graph.
struct StepPlan {
  int N = 0, B = 0, R = 0, real_B = 0, real_R = 0, tiles = 0, max_pages = 0, splits = 1;
  bool decode = false, graph = false;
  std::vector<int32_t> ints;  // token ids | seq | pos | kv_len | first | logit rows | tiles | page tables
  int off_seq = 0, off_pos = 0, off_len = 0, off_first = 0, off_rows = 0, off_tiles = 0, off_pages = 0;
};

class CudaModelBackend : public ModelBackend {
 public:
  // `comm` (not owned; null at TP 1): the model is one tensor-parallel rank's shard, and the partial outputs
  // of o_proj, the dense MLP and the MoE combine are summed over the ranks through it. A communicator that
  // cannot be captured in a graph turns the decode graphs off.
  CudaModelBackend(DeviceModel model, const BackendOptions& opts, const CudaBackendOptions& cuda_opts,
                   dist::Communicator* comm = nullptr);
  ~CudaModelBackend() override;

  std::string name() const override { return "cuda"; }
  const ModelSpec& spec() const override { return m_.spec; }
  int64_t page_size() const override { return page_size_; }
  int64_t num_pages() const override { return num_pages_; }
  std::vector<float> forward(const std::vector<StepSequence>& batch) override;
  void copy_kv_page(int32_t src, int32_t dst) override;

  // Benchmarks: median milliseconds of one step over `reps` runs (graph replays for decode steps when graphs
  // are on), logits left on the device. Re-running a step rewrites the same KV slots with the same values.
  double time_step_ms(const std::vector<StepSequence>& batch, int reps);
  // Distinct experts the last MoE layer's routing chose in the last step (0 without MoE layers).
  int last_step_unique_experts();
  // Random bf16 K/V in every page (benchmarks of long contexts without prefilling them).
  void fill_kv_random(uint64_t seed);
  const DeviceModel& model() const { return m_; }
  size_t kv_bytes_per_token() const;

 private:
  StepPlan plan_step(const std::vector<StepSequence>& batch) const;
  void ensure_capacity(const StepPlan& p);
  void upload(const StepPlan& p);
  void run_step(const StepPlan& p);
  void launch_step(const StepPlan& p);  // graph replay or eager; captures a graph the first time
  void linear(const DeviceLinear& L, const float* x_f32, const uint16_t* x_bf16, int M, float* y);
  // Whether the fp8 GEMV takes M rows of L, with the RMSNorm before it (normed: the q/k/v projection) or
  // without (`linear`): up to kFp8GemvMaxM rows, or up to fp8_gemv_mma_model_tokens() where the tensor-core
  // kernel fits.
  bool takes_fp8_gemv(const DeviceLinear& L, int M, bool normed) const;
  // Whether layer l's MoE call of M tokens leaves its combine to layer l + 1's q/k/v GEMV.
  bool combine_goes_to_next_norm(size_t l, int M) const;
  StepMetaDev meta_of(const StepPlan& p) const;
  // The sum over the ranks of data[0, count), in place, on the step's stream (nothing at TP 1).
  void all_reduce(void* data, int64_t count, dist::ReduceType type);

  DeviceModel m_;
  CudaBackendOptions copts_;
  dist::Communicator* comm_ = nullptr;
  int64_t page_size_, num_pages_;
  cudaStream_t stream_ = nullptr;
  Gemm gemm_;
  KvCacheDev kv_{};
  cuda::DeviceBuffer kv_data_;
  bool gemv_ = true;  // fp8 decode GEMV on (MOE_CUDA_NO_GEMV=1 turns it off)
  // A MoE layer's combine done inside the next layer's q/k/v GEMV norm where it fits (one launch fewer per
  // layer at decode sizes; the same bits); MOE_COMBINE_IN_NORM=0 turns it off.
  bool combine_in_norm_ = false;

  // Step buffers, sized for cap_rows_ token rows and cap_logit_rows_ logit rows; growing them drops the
  // graphs.
  int cap_rows_ = 0, cap_logit_rows_ = 0, cap_batch_ = 0;
  size_t cap_ints_ = 0;
  cuda::DeviceBuffer x_, x_spare_, xn_f32_, xn_bf16_, qkv_, q_, ctx_f32_, ctx_bf16_, y_, act_f32_, act_bf16_,
      router_logits_, moe_out_, gate_up_, h_f32_, h_bf16_, final_, logits_, partial_, attn_counters_, meta_;
  int32_t* meta_host_ = nullptr;  // pinned staging of the step's ints
  std::unique_ptr<cuda::MoeWorkspace> moe_ws_;
  std::map<std::pair<int, int>, cudaGraphExec_t> graphs_;
  int last_moe_rows_ = 0;
  std::unique_ptr<StepStamps> stamps_;  // MOE_STEP_STAMPS=1: where a step's time goes
};

}  // namespace moe::model::gpu
