#include "model/mlp.h"

#include <cmath>
#include <vector>

#include "moe/reference.h"

namespace moe::model {

void dense_mlp(const DenseMlpWeights& w, const float* x, int64_t M, float* out) {
  const int64_t I = w.gate.rows;
  std::vector<float> g(static_cast<size_t>(M * I)), u(static_cast<size_t>(M * I));
  w.gate.forward(x, M, g.data());
  w.up.forward(x, M, u.data());
  for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  w.down.forward(g.data(), M, out);
}

void moe_mlp(const MoeLayerWeights& w, const float* x, int64_t M, float* out) {
  std::vector<float> logits(static_cast<size_t>(M * w.router.rows));
  w.router.forward(x, M, logits.data());
  reference_moe(w.config, w.experts.view, x, logits.data(), M, out);
}

}  // namespace moe::model
