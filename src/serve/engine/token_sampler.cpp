#include "serve/engine/token_sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"

namespace moe::serve {

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

void TokenHistory::add_prompt(const std::vector<int32_t>& ids, int64_t vocab) {
  in_prompt_or_generated.assign(static_cast<size_t>(vocab), false);
  for (const int32_t id : ids)
    if (id >= 0 && id < vocab) in_prompt_or_generated[static_cast<size_t>(id)] = true;
}

void TokenHistory::add_generated(int32_t id, int64_t vocab) {
  ++generated_counts[id];
  if (id >= 0 && id < vocab) in_prompt_or_generated[static_cast<size_t>(id)] = true;
}

void apply_penalties(const SamplingParams& p, const TokenHistory& history, float* logits, int64_t vocab) {
  if (p.repetition_penalty != 1.0f) {
    for (int64_t i = 0; i < vocab && i < static_cast<int64_t>(history.in_prompt_or_generated.size()); ++i) {
      if (!history.in_prompt_or_generated[static_cast<size_t>(i)]) continue;
      logits[i] = logits[i] > 0 ? logits[i] / p.repetition_penalty : logits[i] * p.repetition_penalty;
    }
  }
  if (p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) {
    for (const auto& [id, count] : history.generated_counts) {
      if (id < 0 || id >= vocab) continue;
      logits[id] -= p.frequency_penalty * static_cast<float>(count) + p.presence_penalty;
    }
  }
}

void mask_tokens(const std::vector<int32_t>& ids, float* logits, int64_t vocab) {
  for (const int32_t id : ids)
    if (id >= 0 && id < vocab) logits[id] = -std::numeric_limits<float>::infinity();
}

namespace {

int32_t argmax_lower_id(const float* logits, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[best]) best = i;
  return static_cast<int32_t>(best);
}

}  // namespace

int32_t sample_token(const SamplingParams& p, const float* logits, int64_t vocab, SplitMix64& rng) {
  if (p.temperature == 0.0f) return argmax_lower_id(logits, vocab);
  // Candidates in descending logit order (stable: ties keep the lower id first). -inf (masked) are dropped.
  std::vector<int32_t> ids;
  ids.reserve(static_cast<size_t>(vocab));
  for (int32_t i = 0; i < vocab; ++i)
    if (logits[i] > -std::numeric_limits<float>::infinity()) ids.push_back(i);
  if (ids.empty()) return argmax_lower_id(logits, vocab);
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  if (p.top_k > 0 && p.top_k < static_cast<int64_t>(ids.size())) ids.resize(static_cast<size_t>(p.top_k));
  std::vector<double> prob(ids.size());
  const double mx = logits[ids[0]];
  double sum = 0;
  for (size_t i = 0; i < ids.size(); ++i) sum += (prob[i] = std::exp((logits[ids[i]] - mx) / p.temperature));
  size_t keep = ids.size();
  if (p.top_p < 1.0f) {
    double acc = 0;
    for (size_t i = 0; i < keep; ++i) {
      acc += prob[i] / sum;
      if (acc >= p.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    // prob[0] is the best token's weight; relative thresholds need no normalisation.
    const double threshold = p.min_p * prob[0];
    size_t k = 1;
    while (k < keep && prob[k] >= threshold) ++k;
    keep = k;
  }
  const double total = std::accumulate(prob.begin(), prob.begin() + static_cast<std::ptrdiff_t>(keep), 0.0);
  const double u = rng.uniform() * total;
  double acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += prob[i];
    if (u < acc) return ids[i];
  }
  return ids[keep - 1];
}

TokenLogprob token_logprob(const float* logits, int64_t vocab, int32_t id, int top) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < vocab; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const double lse = mx + std::log(sum);
  TokenLogprob out;
  out.id = id;
  out.logprob = static_cast<float>(static_cast<double>(logits[id]) - lse);
  if (top > 0) {
    std::vector<int32_t> ids(static_cast<size_t>(vocab));
    std::iota(ids.begin(), ids.end(), 0);
    const size_t k = std::min<size_t>(static_cast<size_t>(top), ids.size());
    std::partial_sort(
        ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
        [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    for (size_t i = 0; i < k; ++i)
      out.top.emplace_back(ids[i], static_cast<float>(static_cast<double>(logits[ids[i]]) - lse));
  }
  return out;
}

void validate_sampling(const SamplingParams& p) {
  require_input(std::isfinite(p.temperature) && p.temperature >= 0, "temperature must be >= 0, got ",
                p.temperature);
  require_input(p.top_p > 0 && p.top_p <= 1, "top_p must be in (0, 1], got ", p.top_p);
  require_input(p.min_p >= 0 && p.min_p <= 1, "min_p must be in [0, 1], got ", p.min_p);
  require_input(std::isfinite(p.repetition_penalty) && p.repetition_penalty > 0,
                "repetition_penalty must be > 0, got ", p.repetition_penalty);
  require_input(std::isfinite(p.frequency_penalty) && std::isfinite(p.presence_penalty),
                "frequency_penalty and presence_penalty must be finite");
  require_input(p.max_tokens >= 1, "max_tokens must be >= 1, got ", p.max_tokens);
  require_input(p.min_tokens >= 0 && p.min_tokens <= p.max_tokens, "min_tokens must be in [0, max_tokens (",
                p.max_tokens, ")], got ", p.min_tokens);
  require_input(p.n >= 1 && p.n <= 128, "n must be in [1, 128], got ", p.n);
  require_input(p.top_logprobs >= 0 && p.top_logprobs <= 20, "top_logprobs must be in [0, 20], got ",
                p.top_logprobs);
  for (const std::string& s : p.stop) require_input(!s.empty(), "stop strings must not be empty");
}

}  // namespace moe::serve
