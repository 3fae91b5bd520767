#include "serve/http/server_state.h"

#include <random>

#include "core/error.h"
#include "serve/http/api_error.h"
#include "serve/tokenizer/tokenizer.h"

namespace moe::serve::http {

namespace {

std::string template_source(const Engine& engine, const ServerOptions& o) {
  return o.chat_template.empty() ? engine.tokenizer().chat_template() : o.chat_template;
}

}  // namespace

ServerState::ServerState(Engine& e, ServerOptions o)
    : engine(e),
      options(std::move(o)),
      model_name(options.served_model_name.empty() ? e.model_name() : options.served_model_name),
      chat_prompt(template_source(e, options), e.tokenizer().config().bos_token.value_or(""),
                  e.tokenizer().config().eos_token.value_or("")) {
  if (options.reasoning_parser == "qwen3")
    split_reasoning = true;
  else if (options.reasoning_parser == "auto")
    split_reasoning = chat_prompt.uses_think_tags();
  else if (options.reasoning_parser != "none")
    fail_input("--reasoning-parser '", options.reasoning_parser, "': expected auto, qwen3 or none");
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", rd());
  tag_ = buf;
}

std::string ServerState::new_request_id(const char* prefix) {
  return str(prefix, "-", tag_, next_id_.fetch_add(1));
}

void ServerState::check_model(const Json& body) const {
  auto m = opt_string(body, "model");
  if (!m || *m == model_name || *m == "default") return;
  throw ApiError(404, str("The model '", *m, "' does not exist; this server serves '", model_name, "'"),
                 "invalid_request_error", "model", "model_not_found");
}

void ServerState::fit_to_context(int64_t prompt_tokens, SamplingParams& s) const {
  const int64_t ctx = engine.max_context();
  if (prompt_tokens == 0) throw_bad_request("the prompt is empty", "prompt");
  if (prompt_tokens >= ctx)
    throw ApiError(400,
                   str("the prompt has ", prompt_tokens, " tokens, over the context of ", ctx, " tokens"),
                   "invalid_request_error", "messages", "context_length_exceeded");
  const int64_t room = ctx - prompt_tokens;
  if (s.max_tokens < 0 || s.max_tokens > room) s.max_tokens = room;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace moe::serve::http
