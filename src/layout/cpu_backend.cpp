#include <algorithm>
#include <limits>

#include "layout/backend.h"
#include "moe/reference.h"

namespace moe {
namespace {

// The reference on the rank's engine-layout buffers: so every check of the CPU backend also checks the plan's
// layout (padding, scale grids) against the checkpoint form.
class CpuBackend : public MoeBackend {
 public:
  std::string name() const override { return "cpu"; }
  void run(const MoeCase& c, const layout::RankWeights& rank, bool poison, float* out) override {
    const int64_t n = c.M * c.weights.hidden;
    if (poison) std::fill(out, out + n, std::numeric_limits<float>::quiet_NaN());
    reference_moe(c.config, rank.view, c.x.as<float>(), c.router_logits.as<float>(), c.M, out);
  }
};

}  // namespace

std::unique_ptr<MoeBackend> make_cpu_backend() {
  return std::make_unique<CpuBackend>();
}

}  // namespace moe
