// POST /v1/completions
#include <httplib.h>

#include "serve/http/api_error.h"
#include "serve/http/event_stream.h"
#include "serve/http/openai_format.h"
#include "serve/http/prompt_inputs.h"
#include "serve/http/routes.h"
#include "serve/http/sampling_fields.h"
#include "serve/tokenizer/tokenizer.h"

namespace moe::serve::http {

void handle_completions(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_body(req.body);
  st.check_model(body);
  const SamplingParams sampling = parse_openai_sampling(body, OpenAiApi::Completions);
  if (opt_bool(body, "echo").value_or(false)) throw_bad_request("'echo' is not supported", "echo");
  const bool stream = opt_bool(body, "stream").value_or(false);
  bool include_usage = false;
  if (body.contains("stream_options") && body["stream_options"].is_object())
    include_usage = opt_bool(body["stream_options"], "include_usage").value_or(false);
  const tok::Tokenizer& tok = st.engine.tokenizer();
  const std::vector<std::vector<int32_t>> prompts = read_prompts(tok, body, "prompt");

  const std::string id = st.new_request_id("cmpl"), model = st.model_name;
  const int64_t created = unix_now();
  const int n = sampling.n;
  std::vector<GenerateRequest> reqs;
  request_log().request_id = id;
  request_log().prompt_tokens = 0;
  for (size_t p = 0; p < prompts.size(); ++p) {
    GenerateRequest r;
    r.request_id = prompts.size() == 1 ? id : id + "-" + std::to_string(p);
    r.prompt_ids = prompts[p];
    r.sampling = sampling;
    st.fit_to_context(static_cast<int64_t>(r.prompt_ids.size()), r.sampling);
    request_log().prompt_tokens += static_cast<int64_t>(r.prompt_ids.size());
    reqs.push_back(std::move(r));
  }
  const size_t total_choices = prompts.size() * static_cast<size_t>(n);
  auto jobs = submit_jobs(st, std::move(reqs));

  if (!stream) {
    std::vector<ChoiceResult> choices(total_choices);
    wait_for_events(st, jobs, [&](const GenerateEvent& e, int c) { choices[static_cast<size_t>(c)].add(e); });
    Json out_choices = Json::array();
    for (size_t c = 0; c < total_choices; ++c) {
      const ChoiceResult& ch = choices[c];
      if (!ch.error.empty()) throw ApiError(500, "generation failed: " + ch.error, "internal_error");
      Json choice = {{"index", c}, {"text", ch.text}};
      choice["logprobs"] = sampling.logprobs ? completion_logprobs(tok, ch.logprobs, 0) : Json(nullptr);
      choice["finish_reason"] = ch.finish_reason.empty() ? Json(nullptr) : Json(ch.finish_reason);
      out_choices.push_back(choice);
    }
    const UsageTotals usage = sum_usage(choices, n);
    request_log().completion_tokens = usage.completion_tokens;
    request_log().cached_tokens = usage.cached_tokens;
    Json out = {{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model}};
    out["choices"] = out_choices;
    out["usage"] = usage_json(usage);
    reply_json(res, out);
    return;
  }

  auto totals = std::make_shared<std::vector<ChoiceResult>>(total_choices);
  auto chunk = [id, created, model, include_usage](Json choice) {
    Json j = {{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model}};
    j["choices"] = Json::array({std::move(choice)});
    if (include_usage) j["usage"] = nullptr;
    return sse(dump(j));
  };
  auto on_event = [&tok, totals, chunk, logprobs = sampling.logprobs](const GenerateEvent& e, int c) {
    ChoiceResult& total = (*totals)[static_cast<size_t>(c)];
    const size_t offset = total.text.size();
    total.add(e);
    request_log().completion_tokens += static_cast<int64_t>(e.new_ids.size());
    std::string out;
    if (!e.new_text.empty() || e.finished || (logprobs && !e.new_logprobs.empty())) {
      Json choice = {{"index", c}, {"text", e.new_text}};
      choice["logprobs"] = logprobs ? completion_logprobs(tok, e.new_logprobs, offset) : Json(nullptr);
      choice["finish_reason"] = e.finished ? Json(e.finish_reason) : Json(nullptr);
      if (e.finished && !e.error.empty())
        out += sse(error_body(500, "generation failed: " + e.error, "internal_error"));
      out += chunk(choice);
    }
    return out;
  };
  auto on_end = [id, created, model, include_usage, totals, n]() {
    std::string out;
    if (include_usage) {
      Json j = {{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model}};
      j["choices"] = Json::array();
      j["usage"] = usage_json(sum_usage(*totals, n));
      out += sse(dump(j));
    }
    return out + "data: [DONE]\n\n";
  };
  stream_events(st, res, std::move(jobs), on_event, on_end);
}

}  // namespace moe::serve::http
