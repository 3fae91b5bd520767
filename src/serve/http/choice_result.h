#pragma once
// A choice's whole answer, gathered from its events (for non-streaming responses and for logging).
#include <cstdint>
#include <string>
#include <vector>

#include "serve/engine/engine_api.h"

namespace moe::serve::http {

struct ChoiceResult {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<TokenLogprob> logprobs, prompt_logprobs;
  std::string finish_reason, error;
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  bool finished = false;

  void add(const GenerateEvent& e) {
    text += e.new_text;
    ids.insert(ids.end(), e.new_ids.begin(), e.new_ids.end());
    logprobs.insert(logprobs.end(), e.new_logprobs.begin(), e.new_logprobs.end());
    if (!e.prompt_logprobs.empty()) prompt_logprobs = e.prompt_logprobs;
    prompt_tokens = e.prompt_tokens;
    completion_tokens = e.completion_tokens;
    cached_tokens = e.cached_tokens;
    if (e.finished) {
      finished = true;
      finish_reason = e.finish_reason;
      error = e.error;
    }
  }
};

// Token totals of an answer: the prompt counts once per engine request (its n choices share it).
struct UsageTotals {
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};
UsageTotals sum_usage(const std::vector<ChoiceResult>& choices, int choices_per_request);

}  // namespace moe::serve::http
