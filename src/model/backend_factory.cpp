#include "core/error.h"
#include "io/hf_checkpoint.h"
#include "model/backend.h"
#include "model/cpu_backend.h"
#include "model/cuda_backend.h"
#include "model/tp_weights.h"

namespace moe::model {

void require_known_tp_comm(const std::string& tp_comm) {
  require_input(tp_comm == "auto" || tp_comm == "nccl" || tp_comm == "host", "--tp-comm '", tp_comm,
                "': unknown (auto, nccl or host)");
}

std::unique_ptr<ModelBackend> open_model_backend(const std::string& dir, const std::string& backend,
                                                 const BackendOptions& opts) {
  require_input(backend == "cpu" || backend == "cuda", "--backend '", backend,
                "': unknown model backend (cpu or cuda)");
  require_input(backend != "cuda" || cuda_model_backend_available(),
                "--backend cuda: no CUDA device is visible (or this build has no CUDA)");
  require_known_tp_comm(opts.tp_comm);
  const auto ckpt = HfCheckpoint::open(dir, opts.verbose);
  if (backend == "cuda" && opts.tp_size > 1) return make_cuda_tp_backend(*ckpt, opts);
  if (backend == "cuda") return make_cuda_model_backend(load_model_weights(*ckpt, opts.verbose), *ckpt, opts);
  if (opts.tp_size > 1) return make_cpu_model_backend(load_tp_rank_weights(*ckpt, opts), opts);
  return make_cpu_model_backend(load_model_weights(*ckpt, opts.verbose), opts);
}

}  // namespace moe::model
