// POST /v1/chat/completions
#include <httplib.h>

#include "serve/http/api_error.h"
#include "serve/http/event_stream.h"
#include "serve/http/openai_format.h"
#include "serve/http/reasoning_splitter.h"
#include "serve/http/routes.h"
#include "serve/http/sampling_fields.h"
#include "serve/tokenizer/tokenizer.h"

namespace moe::serve::http {

namespace {

// Whether the rendered prompt leaves the model inside an open <think> block (templates that force thinking).
bool prompt_opens_think(const std::string& prompt) {
  const size_t open = prompt.rfind("<think>");
  return open != std::string::npos && prompt.find("</think>", open) == std::string::npos;
}

Json finish_value(const std::string& reason) {
  return reason.empty() ? Json(nullptr) : Json(reason);
}

struct ChatChoiceStream {
  bool role_sent = false;
  ReasoningSplitter splitter;
};

}  // namespace

void handle_chat_completions(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_body(req.body);
  st.check_model(body);
  SamplingParams sampling = parse_openai_sampling(body, OpenAiApi::Chat);
  const bool stream = opt_bool(body, "stream").value_or(false);
  bool include_usage = false;
  if (body.contains("stream_options") && body["stream_options"].is_object())
    include_usage = opt_bool(body["stream_options"], "include_usage").value_or(false);
  const std::string prompt = st.chat_prompt.render(body);
  const tok::Tokenizer& tok = st.engine.tokenizer();

  GenerateRequest r;
  r.request_id = st.new_request_id("chatcmpl");
  r.prompt_ids = tok.encode(prompt, true);
  st.fit_to_context(static_cast<int64_t>(r.prompt_ids.size()), sampling);
  r.sampling = sampling;
  const int n = sampling.n;
  const bool split = st.split_reasoning;
  const bool in_think = split && prompt_opens_think(prompt);
  const std::string id = r.request_id, model = st.model_name;
  const int64_t created = unix_now();
  request_log().request_id = id;
  request_log().prompt_tokens = static_cast<int64_t>(r.prompt_ids.size());
  std::vector<GenerateRequest> reqs;
  reqs.push_back(std::move(r));
  auto jobs = submit_jobs(st, std::move(reqs));

  if (!stream) {
    std::vector<ChoiceResult> choices(static_cast<size_t>(n));
    wait_for_events(st, jobs, [&](const GenerateEvent& e, int c) { choices[static_cast<size_t>(c)].add(e); });
    Json out_choices = Json::array();
    for (int c = 0; c < n; ++c) {
      const ChoiceResult& ch = choices[static_cast<size_t>(c)];
      if (!ch.error.empty()) throw ApiError(500, "generation failed: " + ch.error, "internal_error");
      Json message = {{"role", "assistant"}};
      if (split) {
        ReasoningSplitter splitter(in_think);
        SplitText a = splitter.push(ch.text), b = splitter.finish();
        const std::string reasoning = a.reasoning + b.reasoning;
        message["content"] = a.content + b.content;
        message["reasoning_content"] = reasoning.empty() ? Json(nullptr) : Json(reasoning);
      } else {
        message["content"] = ch.text;
        message["reasoning_content"] = nullptr;
      }
      message["tool_calls"] = nullptr;
      Json choice = {{"index", c}, {"message", message}};
      choice["logprobs"] = sampling.logprobs ? chat_logprobs(tok, ch.logprobs) : Json(nullptr);
      choice["finish_reason"] = finish_value(ch.finish_reason);
      out_choices.push_back(choice);
    }
    const UsageTotals usage = sum_usage(choices, n);
    request_log().completion_tokens = usage.completion_tokens;
    request_log().cached_tokens = usage.cached_tokens;
    Json out = {{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", model}};
    out["choices"] = out_choices;
    out["usage"] = usage_json(usage);
    reply_json(res, out);
    return;
  }

  auto per_choice = std::make_shared<std::vector<ChatChoiceStream>>();
  for (int c = 0; c < n; ++c) per_choice->push_back(ChatChoiceStream{false, ReasoningSplitter(in_think)});
  auto totals = std::make_shared<std::vector<ChoiceResult>>(static_cast<size_t>(n));
  auto chunk = [id, created, model, include_usage](Json choice) {
    Json j = {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model}};
    j["choices"] = Json::array({std::move(choice)});
    if (include_usage) j["usage"] = nullptr;
    return sse(dump(j));
  };
  auto on_event = [&tok, per_choice, totals, chunk, split, logprobs = sampling.logprobs](
                      const GenerateEvent& e, int c) {
    ChatChoiceStream& cs = (*per_choice)[static_cast<size_t>(c)];
    (*totals)[static_cast<size_t>(c)].add(e);
    request_log().completion_tokens += static_cast<int64_t>(e.new_ids.size());
    std::string out;
    if (!cs.role_sent) {
      cs.role_sent = true;
      out += chunk(Json{{"index", c},
                        {"delta", {{"role", "assistant"}, {"content", ""}}},
                        {"logprobs", nullptr},
                        {"finish_reason", nullptr}});
    }
    SplitText piece;
    if (split) {
      piece = cs.splitter.push(e.new_text);
      if (e.finished) {
        SplitText rest = cs.splitter.finish();
        piece.reasoning += rest.reasoning;
        piece.content += rest.content;
      }
    } else {
      piece.content = e.new_text;
    }
    if (!piece.content.empty() || !piece.reasoning.empty() || (logprobs && !e.new_logprobs.empty())) {
      Json delta = Json::object();
      if (!piece.reasoning.empty()) delta["reasoning_content"] = piece.reasoning;
      if (!piece.content.empty() || piece.reasoning.empty()) delta["content"] = piece.content;
      out += chunk(Json{{"index", c},
                        {"delta", delta},
                        {"logprobs", logprobs ? chat_logprobs(tok, e.new_logprobs) : Json(nullptr)},
                        {"finish_reason", nullptr}});
    }
    if (e.finished) {
      if (!e.error.empty()) out += sse(error_body(500, "generation failed: " + e.error, "internal_error"));
      out += chunk(Json{{"index", c},
                        {"delta", Json::object()},
                        {"logprobs", nullptr},
                        {"finish_reason", finish_value(e.finish_reason)}});
    }
    return out;
  };
  auto on_end = [id, created, model, include_usage, totals, n]() {
    std::string out;
    if (include_usage) {
      const UsageTotals usage = sum_usage(*totals, n);
      Json j = {{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model}};
      j["choices"] = Json::array();
      j["usage"] = usage_json(usage);
      out += sse(dump(j));
    }
    return out + "data: [DONE]\n\n";
  };
  stream_events(st, res, std::move(jobs), on_event, on_end);
}

}  // namespace moe::serve::http
