#include "serve/http/openai_format.h"

#include "serve/tokenizer/tokenizer.h"

namespace moe::serve::http {

std::string token_piece(const tok::Tokenizer& tok, int32_t id) {
  if (!tok.is_valid_id(id)) return "";
  return tok.token_bytes(id);
}

namespace {

Json bytes_of(const std::string& s) {
  Json b = Json::array();
  for (unsigned char c : s) b.push_back(static_cast<int>(c));
  return b;
}

Json logprob_value(const std::optional<float>& lp) {
  return lp ? Json(*lp) : Json(nullptr);
}

}  // namespace

UsageTotals sum_usage(const std::vector<ChoiceResult>& choices, int choices_per_request) {
  UsageTotals u;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i % static_cast<size_t>(choices_per_request) == 0) {
      u.prompt_tokens += choices[i].prompt_tokens;
      u.cached_tokens += choices[i].cached_tokens;
    }
    u.completion_tokens += choices[i].completion_tokens;
  }
  return u;
}

Json chat_logprobs(const tok::Tokenizer& tok, const std::vector<TokenLogprob>& lps) {
  Json content = Json::array();
  for (const auto& lp : lps) {
    const std::string piece = token_piece(tok, lp.id);
    Json top = Json::array();
    for (const auto& [id, v] : lp.top) {
      const std::string p = token_piece(tok, id);
      top.push_back(Json{{"token", p}, {"logprob", v}, {"bytes", bytes_of(p)}});
    }
    content.push_back(Json{{"token", piece},
                           {"logprob", logprob_value(lp.logprob)},
                           {"bytes", bytes_of(piece)},
                           {"top_logprobs", top}});
  }
  return Json{{"content", content}};
}

Json completion_logprobs(const tok::Tokenizer& tok, const std::vector<TokenLogprob>& lps,
                         size_t text_offset) {
  Json tokens = Json::array(), token_logprobs = Json::array(), top = Json::array(), offsets = Json::array();
  for (const auto& lp : lps) {
    const std::string piece = token_piece(tok, lp.id);
    tokens.push_back(piece);
    token_logprobs.push_back(logprob_value(lp.logprob));
    Json alternatives = Json::object();
    for (const auto& [id, v] : lp.top) alternatives[token_piece(tok, id)] = v;
    top.push_back(alternatives);
    offsets.push_back(text_offset);
    text_offset += piece.size();
  }
  return Json{{"tokens", tokens},
              {"token_logprobs", token_logprobs},
              {"top_logprobs", top},
              {"text_offset", offsets}};
}

Json usage_json(const UsageTotals& u) {
  Json j;
  j["prompt_tokens"] = u.prompt_tokens;
  j["completion_tokens"] = u.completion_tokens;
  j["total_tokens"] = u.prompt_tokens + u.completion_tokens;
  j["prompt_tokens_details"] = Json{{"cached_tokens", u.cached_tokens}};
  return j;
}

}  // namespace moe::serve::http
