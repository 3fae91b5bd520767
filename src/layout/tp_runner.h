#pragma once
// Runs a case as N tensor-parallel ranks would: each rank's shard from the layout plan, run on a backend, the
// partial outputs summed in rank order (what an all-reduce computes). N = 1 is the plain single-GPU call.
#include "layout/backend.h"
#include "layout/plan.h"
#include "moe/case_file.h"

namespace moe {

layout::MoeLayerSpec layer_spec_of(const MoeCase& c);
void run_tensor_parallel(const MoeCase& c, int tp_size, MoeBackend& backend, bool poison, float* out);

}  // namespace moe
