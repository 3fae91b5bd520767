#pragma once
// Loading every tensor-parallel rank's shard of a checkpoint for the simulated mode of the CPU backend.
#include <vector>

#include "io/hf_checkpoint.h"
#include "model/backend.h"
#include "model/weights.h"

namespace moe::model {

TpOptions tp_options_of(const BackendOptions& opts);

// Plans every rank first (so a model that cannot be split is refused before anything is read), then loads
// each rank's slice; rank 0 also holds the replicated embeddings, final norm and lm_head.
std::vector<ModelWeights> load_tp_rank_weights(const HfCheckpoint& ckpt, const BackendOptions& opts);

}  // namespace moe::model
