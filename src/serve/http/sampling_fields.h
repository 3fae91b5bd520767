#pragma once
// Request fields -> SamplingParams, for the OpenAI endpoints and for sglang's /generate sampling_params.
// Out-of-range values are a 400 naming the field.
#include "serve/engine/engine_api.h"
#include "serve/http/json_fields.h"

namespace moe::serve::http {

enum class OpenAiApi { Chat, Completions };

// temperature, top_p, top_k, min_p, n, seed, stop, penalties, ignore_eos, skip_special_tokens,
// max_tokens / max_completion_tokens (unset: -1, the caller fills it from the context), logprobs fields.
SamplingParams parse_openai_sampling(const Json& body, OpenAiApi api);

// sglang's sampling_params object (max_new_tokens defaults to 128 as in sglang).
SamplingParams parse_sglang_sampling(const Json& sampling_params);

// Range checks shared by both; `prefix` goes before the field name in messages.
void validate_sampling(const SamplingParams& s);

}  // namespace moe::serve::http
