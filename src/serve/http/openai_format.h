#pragma once
// The JSON pieces shared by the OpenAI responses: logprobs in the chat and in the completions shape, usage.
#include <vector>

#include "serve/engine/engine_api.h"
#include "serve/http/choice_result.h"
#include "serve/http/json_fields.h"

namespace moe::tok {
class Tokenizer;
}

namespace moe::serve::http {

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}]}.
Json chat_logprobs(const tok::Tokenizer& tok, const std::vector<TokenLogprob>& lps);
// Completions: {"tokens", "token_logprobs", "top_logprobs": [{token: logprob}], "text_offset"}; offsets count
// from `text_offset` (the text already sent for this choice).
Json completion_logprobs(const tok::Tokenizer& tok, const std::vector<TokenLogprob>& lps, size_t text_offset);
// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details": {"cached_tokens"}}
Json usage_json(const UsageTotals& u);
// The bytes a token stands for ("" for an id the tokenizer does not know).
std::string token_piece(const tok::Tokenizer& tok, int32_t id);

}  // namespace moe::serve::http
