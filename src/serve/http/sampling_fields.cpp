#include "serve/http/sampling_fields.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "serve/http/api_error.h"

namespace moe::serve::http {

namespace {

constexpr int kMaxChoices = 64;
constexpr int kMaxTopLogprobs = 20;

// The fields the two APIs spell alike.
void read_common(const Json& j, SamplingParams& s) {
  if (auto v = opt_number(j, "temperature")) s.temperature = static_cast<float>(*v);
  if (auto v = opt_number(j, "top_p")) s.top_p = static_cast<float>(*v);
  // Clamped before the narrowing (4294967297 must not become 1); -1 and 0 mean off, as in vLLM and sglang.
  if (auto v = opt_int(j, "top_k")) {
    if (*v < -1) throw_bad_request("'top_k' must be -1 or 0 (off) or a positive count", "top_k");
    s.top_k = static_cast<int>(std::min<int64_t>(*v, std::numeric_limits<int>::max()));
  }
  if (auto v = opt_number(j, "min_p")) s.min_p = static_cast<float>(*v);
  if (auto v = opt_int(j, "n")) s.n = static_cast<int>(std::clamp<int64_t>(*v, -1, kMaxChoices + 1));
  if (auto v = opt_int(j, "seed")) s.seed = static_cast<uint64_t>(*v);
  if (auto v = opt_number(j, "frequency_penalty")) s.frequency_penalty = static_cast<float>(*v);
  if (auto v = opt_number(j, "presence_penalty")) s.presence_penalty = static_cast<float>(*v);
  if (auto v = opt_number(j, "repetition_penalty")) s.repetition_penalty = static_cast<float>(*v);
  if (auto v = opt_bool(j, "ignore_eos")) s.ignore_eos = *v;
  if (auto v = opt_bool(j, "skip_special_tokens")) s.skip_special_tokens = *v;
  if (auto v = opt_int(j, "min_tokens")) s.min_tokens = *v;
  s.stop = string_or_list(j, "stop");
  if (auto v = opt_int_list(j, "stop_token_ids")) s.stop_token_ids = *v;
}

}  // namespace

void validate_sampling(const SamplingParams& s) {
  if (s.temperature < 0) throw_bad_request("'temperature' must be >= 0", "temperature");
  if (!(s.top_p > 0 && s.top_p <= 1)) throw_bad_request("'top_p' must be in (0, 1]", "top_p");
  if (s.min_p < 0 || s.min_p > 1) throw_bad_request("'min_p' must be in [0, 1]", "min_p");
  if (s.n < 1 || s.n > kMaxChoices) throw_bad_request(str("'n' must be in [1, ", kMaxChoices, "]"), "n");
  if (s.frequency_penalty < -2 || s.frequency_penalty > 2)
    throw_bad_request("'frequency_penalty' must be in [-2, 2]", "frequency_penalty");
  if (s.presence_penalty < -2 || s.presence_penalty > 2)
    throw_bad_request("'presence_penalty' must be in [-2, 2]", "presence_penalty");
  if (s.repetition_penalty <= 0) throw_bad_request("'repetition_penalty' must be > 0", "repetition_penalty");
  if (s.max_tokens < -1) throw_bad_request("'max_tokens' must be >= 0", "max_tokens");
  if (s.min_tokens < 0) throw_bad_request("'min_tokens' must be >= 0", "min_tokens");
  if (s.top_logprobs < 0 || s.top_logprobs > kMaxTopLogprobs)
    throw_bad_request(str("'top_logprobs' must be in [0, ", kMaxTopLogprobs, "]"), "top_logprobs");
  if (s.stop.size() > 16) throw_bad_request("at most 16 stop strings", "stop");
  for (const auto& st : s.stop)
    if (st.empty()) throw_bad_request("stop strings must not be empty", "stop");
}

SamplingParams parse_openai_sampling(const Json& body, OpenAiApi api) {
  SamplingParams s;
  read_common(body, s);
  s.max_tokens = -1;  // unset: as many as the context leaves (chat)
  for (const char* key : {"max_completion_tokens", "max_tokens"})
    if (auto v = opt_int(body, key)) {
      if (*v < 0) throw_bad_request(str("'", key, "' must be >= 0"), key);
      s.max_tokens = *v;
    }
  if (s.max_tokens == -1 && api == OpenAiApi::Completions) s.max_tokens = 16;  // OpenAI's default
  if (api == OpenAiApi::Chat) {
    if (auto v = opt_bool(body, "logprobs")) s.logprobs = *v;
    if (auto v = opt_int(body, "top_logprobs")) {
      s.top_logprobs = static_cast<int>(std::clamp<int64_t>(*v, -1, kMaxTopLogprobs + 1));
      if (s.top_logprobs > 0 && !s.logprobs)
        throw_bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    }
  } else {
    // Completions: logprobs is an integer, the number of alternatives (0 = only the chosen token).
    if (auto v = opt_int(body, "logprobs")) {
      s.logprobs = true;
      s.top_logprobs = static_cast<int>(std::clamp<int64_t>(*v, -1, kMaxTopLogprobs + 1));
    }
  }
  validate_sampling(s);
  return s;
}

SamplingParams parse_sglang_sampling(const Json& sp) {
  if (!sp.is_null() && !sp.is_object())
    throw_bad_request("'sampling_params' must be an object", "sampling_params");
  SamplingParams s;
  s.max_tokens = 128;
  if (sp.is_null()) return s;
  read_common(sp, s);
  if (auto v = opt_int(sp, "max_new_tokens")) s.max_tokens = *v;
  if (s.max_tokens < 0) throw_bad_request("'max_new_tokens' must be >= 0", "max_new_tokens");
  validate_sampling(s);
  return s;
}

}  // namespace moe::serve::http
