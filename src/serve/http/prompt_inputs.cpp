#include "serve/http/prompt_inputs.h"

#include "core/error.h"
#include "serve/http/api_error.h"
#include "serve/tokenizer/tokenizer.h"

namespace moe::serve::http {

namespace {

constexpr size_t kMaxPrompts = 64;

std::vector<int32_t> ids_of(const Json& list, const char* key) {
  std::vector<int32_t> ids;
  for (const auto& x : list) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX)
      throw_bad_request(str("'", key, "' must hold non-negative integer token ids"), key);
    ids.push_back(static_cast<int32_t>(x.get<int64_t>()));
  }
  return ids;
}

}  // namespace

void check_token_ids(const tok::Tokenizer& tok, const std::vector<int32_t>& ids, const char* key) {
  for (int32_t id : ids)
    if (!tok.is_valid_id(id))
      throw_bad_request(str("'", key, "': token id ", id, " is outside the vocabulary of ", tok.vocab_size()),
                        key);
}

std::vector<std::vector<int32_t>> read_prompts(const tok::Tokenizer& tok, const Json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) throw_bad_request(str("'", key, "' is required"), key);
  const Json& p = *it;
  std::vector<std::vector<int32_t>> out;
  if (p.is_string()) {
    out.push_back(tok.encode(p.get<std::string>(), true));
  } else if (p.is_array() && !p.empty() && p[0].is_number()) {
    out.push_back(ids_of(p, key));
  } else if (p.is_array() && !p.empty()) {
    if (p.size() > kMaxPrompts) throw_bad_request(str("at most ", kMaxPrompts, " prompts per request"), key);
    for (const auto& one : p) {
      if (one.is_string())
        out.push_back(tok.encode(one.get<std::string>(), true));
      else if (one.is_array())
        out.push_back(ids_of(one, key));
      else
        throw_bad_request(str("'", key, "' must be a string, a list of strings or a list of token ids"), key);
    }
  } else {
    throw_bad_request(str("'", key, "' must be a non-empty string, list of strings or list of token ids"),
                      key);
  }
  for (const auto& ids : out) check_token_ids(tok, ids, key);
  return out;
}

}  // namespace moe::serve::http
