#pragma once
// The prompt forms OpenAI's completions (and sglang's /generate) accept: a string, a list of strings, a list
// of token ids, or a list of token-id lists. Each becomes one engine request.
#include <cstdint>
#include <vector>

#include "serve/http/json_fields.h"

namespace moe::tok {
class Tokenizer;
}

namespace moe::serve::http {

// 400 naming `key` when it is missing, empty or of another shape, or holds an id outside the vocabulary.
std::vector<std::vector<int32_t>> read_prompts(const tok::Tokenizer& tok, const Json& body, const char* key);

// A list of token ids checked against the vocabulary.
void check_token_ids(const tok::Tokenizer& tok, const std::vector<int32_t>& ids, const char* key);

}  // namespace moe::serve::http
