#include <cmath>
#include <limits>

#include "core/error.h"
#include "moe/backend.h"
#include "moe/reference.h"

namespace moe {
namespace {

class CpuBackend : public MoeBackend {
 public:
  std::string name() const override { return "cpu"; }
  void run(const MoeCase& c, bool poison, float* out) override {
    const int64_t n = c.M * c.weights.hidden;
    if (poison) std::fill(out, out + n, std::numeric_limits<float>::quiet_NaN());
    reference_moe(c.config, c.weights, c.x.as<float>(), c.router_logits.as<float>(), c.M, out);
  }
};

}  // namespace

std::unique_ptr<MoeBackend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace moe
