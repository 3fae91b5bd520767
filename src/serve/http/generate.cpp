// POST /generate: sglang's native API. Shapes follow sglang: logprobs as [logprob, token_id, null] triples,
// finish_reason as {"type": ...}, streamed chunks carry the text so far.
#include <httplib.h>

#include "serve/http/api_error.h"
#include "serve/http/choice_result.h"
#include "serve/http/event_stream.h"
#include "serve/http/prompt_inputs.h"
#include "serve/http/routes.h"
#include "serve/http/sampling_fields.h"
#include "serve/tokenizer/tokenizer.h"

namespace moe::serve::http {

namespace {

Json triple(const std::optional<float>& lp, int32_t id) {
  return Json::array({lp ? Json(*lp) : Json(nullptr), id, nullptr});
}

Json triples(const std::vector<TokenLogprob>& lps) {
  Json out = Json::array();
  for (const auto& lp : lps) out.push_back(triple(lp.logprob, lp.id));
  return out;
}

// Per position: the alternatives as triples; null where there are none (the first prompt token).
Json top_triples(const std::vector<TokenLogprob>& lps) {
  Json out = Json::array();
  for (const auto& lp : lps) {
    if (!lp.logprob) {
      out.push_back(nullptr);
      continue;
    }
    Json alts = Json::array();
    for (const auto& [id, v] : lp.top) alts.push_back(triple(v, id));
    out.push_back(alts);
  }
  return out;
}

struct LogprobRequest {
  bool on = false;
  int64_t start_len = -1;
  int top = 0;
};

Json result_json(const ChoiceResult& ch, const std::string& id, const LogprobRequest& lp,
                 int64_t max_new_tokens, double seconds) {
  Json meta;
  meta["id"] = id;
  if (ch.finished) {
    Json fr = {{"type", ch.finish_reason}};
    if (ch.finish_reason == "length") fr["length"] = max_new_tokens;
    if (!ch.error.empty()) fr["message"] = ch.error;
    meta["finish_reason"] = fr;
  } else {
    meta["finish_reason"] = nullptr;
  }
  meta["prompt_tokens"] = ch.prompt_tokens;
  meta["completion_tokens"] = ch.completion_tokens;
  meta["cached_tokens"] = ch.cached_tokens;
  meta["e2e_latency"] = seconds;
  if (lp.on) {
    meta["input_token_logprobs"] = triples(ch.prompt_logprobs);
    meta["output_token_logprobs"] = triples(ch.logprobs);
    if (lp.top > 0) {
      meta["input_top_logprobs"] = top_triples(ch.prompt_logprobs);
      meta["output_top_logprobs"] = top_triples(ch.logprobs);
    }
  }
  Json out = {{"text", ch.text}, {"output_ids", ch.ids}};
  out["meta_info"] = meta;
  return out;
}

}  // namespace

void handle_generate(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_body(req.body);
  const tok::Tokenizer& tok = st.engine.tokenizer();
  const bool has_ids = body.contains("input_ids") && !body["input_ids"].is_null();
  const bool has_text = body.contains("text") && !body["text"].is_null();
  if (has_ids == has_text) throw_bad_request("give exactly one of 'text' and 'input_ids'", "text");
  const bool batched = has_ids ? (body["input_ids"].is_array() && !body["input_ids"].empty() &&
                                  body["input_ids"][0].is_array())
                               : body["text"].is_array();
  const auto prompts = read_prompts(tok, body, has_ids ? "input_ids" : "text");
  const SamplingParams base =
      parse_sglang_sampling(body.contains("sampling_params") ? body["sampling_params"] : Json());
  LogprobRequest lp;
  lp.on = opt_bool(body, "return_logprob").value_or(false);
  lp.start_len = opt_int(body, "logprob_start_len").value_or(-1);
  lp.top = static_cast<int>(std::clamp<int64_t>(opt_int(body, "top_logprobs_num").value_or(0), 0, 20));
  const bool stream = opt_bool(body, "stream").value_or(false);

  const std::string id = st.new_request_id("gen");
  request_log().request_id = id;
  request_log().prompt_tokens = 0;
  std::vector<GenerateRequest> reqs;
  for (size_t p = 0; p < prompts.size(); ++p) {
    GenerateRequest r;
    r.request_id = prompts.size() == 1 ? id : id + "-" + std::to_string(p);
    r.prompt_ids = prompts[p];
    r.sampling = base;
    st.fit_to_context(static_cast<int64_t>(r.prompt_ids.size()), r.sampling);
    if (lp.on) {
      r.sampling.logprobs = true;
      r.sampling.top_logprobs = lp.top;
      // From logprob_start_len on, the prompt's own logprobs; at or past the prompt's end there are none (it
      // was clamped to the length and then refused as not below it).
      if (lp.start_len >= 0 && lp.start_len < static_cast<int64_t>(r.prompt_ids.size())) {
        r.logprob_start_len = lp.start_len;
        r.prompt_top_logprobs = lp.top;
      }
    }
    request_log().prompt_tokens += static_cast<int64_t>(r.prompt_ids.size());
    reqs.push_back(std::move(r));
  }
  const int n = base.n;
  const size_t total = prompts.size() * static_cast<size_t>(n);
  const int64_t max_new = base.max_tokens;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto choice_id = [id, n](int c) { return n == 1 ? id : id + "-" + std::to_string(c); };
  auto jobs = submit_jobs(st, std::move(reqs));

  if (!stream) {
    std::vector<ChoiceResult> choices(total);
    wait_for_events(st, jobs, [&](const GenerateEvent& e, int c) { choices[static_cast<size_t>(c)].add(e); });
    Json results = Json::array();
    for (size_t c = 0; c < total; ++c) {
      if (!choices[c].error.empty())
        throw ApiError(500, "generation failed: " + choices[c].error, "internal_error");
      results.push_back(result_json(choices[c], choice_id(static_cast<int>(c)), lp, max_new, elapsed()));
      request_log().completion_tokens += choices[c].completion_tokens;
      request_log().cached_tokens += choices[c].cached_tokens;
    }
    reply_json(res, (total == 1 && !batched) ? results[0] : results);
    return;
  }

  auto totals = std::make_shared<std::vector<ChoiceResult>>(total);
  const bool with_index = total > 1;
  auto on_event = [totals, lp, max_new, elapsed, choice_id, with_index](const GenerateEvent& e, int c) {
    ChoiceResult& ch = (*totals)[static_cast<size_t>(c)];
    ch.add(e);
    request_log().completion_tokens += static_cast<int64_t>(e.new_ids.size());
    if (e.new_ids.empty() && !e.finished) return std::string();
    Json j = result_json(ch, choice_id(c), lp, max_new, elapsed());
    if (with_index) j["index"] = c;
    return sse(dump(j));
  };
  stream_events(st, res, std::move(jobs), on_event, [] { return std::string("data: [DONE]\n\n"); });
}

}  // namespace moe::serve::http
