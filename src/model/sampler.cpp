#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"

namespace moe::model {

int32_t argmax(const float* logits, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return static_cast<int32_t>(best);
}

Sampler::Sampler(const SamplerOptions& opts) : opts_(opts), state_(opts.seed) {
  require_input(opts.temperature >= 0, "temperature must be >= 0, got ", opts.temperature);
  require_input(opts.top_p > 0 && opts.top_p <= 1, "top_p must be in (0, 1], got ", opts.top_p);
}

double Sampler::uniform() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(const float* logits, int64_t vocab) {
  if (opts_.temperature == 0) return argmax(logits, vocab);
  // Candidates in descending logit order (stable: ties keep the lower id first).
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  if (opts_.top_k > 0 && opts_.top_k < vocab) ids.resize(static_cast<size_t>(opts_.top_k));
  std::vector<double> p(ids.size());
  const double mx = logits[ids[0]];
  double sum = 0;
  for (size_t i = 0; i < ids.size(); ++i) sum += (p[i] = std::exp((logits[ids[i]] - mx) / opts_.temperature));
  size_t keep = ids.size();
  if (opts_.top_p < 1) {
    double acc = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      acc += p[i] / sum;
      if (acc >= opts_.top_p) {
        keep = i + 1;
        break;
      }
    }
    sum = std::accumulate(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(keep), 0.0);
  }
  const double u = uniform() * sum;
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += p[i];
    if (u < acc) return ids[i];
  }
  return ids[keep - 1];
}

}  // namespace moe::model
