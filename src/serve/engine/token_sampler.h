#pragma once
// Per-request logit processing and sampling, in the order vLLM / HF apply it:
//   1. logprobs are taken from the raw logits (log-softmax before any penalty or temperature, as vLLM's
//      default "raw_logprobs"), so a token's reported logprob does not depend on the sampling settings;
//   2. penalties: repetition (HF: over prompt and generated tokens, a positive logit is divided by it, a
//      negative one multiplied), then frequency and presence (OpenAI: over generated tokens only,
//      logit -= frequency * count + presence * [count > 0]);
//   3. tokens that may not end the text yet (eos / stop ids before min_tokens) are masked;
//   4. temperature 0: argmax, ties to the lower id; otherwise softmax(logits / T) restricted to top_k, then
//      top_p (smallest prefix of the sorted distribution whose mass reaches top_p), then min_p (tokens with
//      at least min_p times the best probability), and one draw from our own splitmix64 stream.
// The random stream belongs to one choice, so a seeded request draws the same tokens alone or in a batch.
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "serve/engine/engine_api.h"

namespace moe::serve {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();  // [0, 1)

 private:
  uint64_t state_;
};

// Counts of generated tokens and the set of prompt tokens, as the penalties need them.
struct TokenHistory {
  std::unordered_map<int32_t, int64_t> generated_counts;
  std::vector<bool> in_prompt_or_generated;  // by id, for the repetition penalty
  void add_prompt(const std::vector<int32_t>& ids, int64_t vocab);
  void add_generated(int32_t id, int64_t vocab);
};

// Applies steps 2 and 3 above to `logits` in place.
void apply_penalties(const SamplingParams& p, const TokenHistory& history, float* logits, int64_t vocab);
void mask_tokens(const std::vector<int32_t>& ids, float* logits, int64_t vocab);

// Step 4 on already penalised logits.
int32_t sample_token(const SamplingParams& p, const float* logits, int64_t vocab, SplitMix64& rng);

// log_softmax(logits)[id] and the `top` best alternatives (descending, ties to the lower id).
TokenLogprob token_logprob(const float* logits, int64_t vocab, int32_t id, int top);

// Throws InputError for settings out of range (temperature < 0, top_p not in (0, 1], ...).
void validate_sampling(const SamplingParams& p);

}  // namespace moe::serve
