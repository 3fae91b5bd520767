// The small endpoints: models, health, metrics, tokenize / detokenize, flush_cache, get_server_info.
#include <httplib.h>

#include "serve/http/api_error.h"
#include "serve/http/prompt_inputs.h"
#include "serve/http/routes.h"
#include "serve/tokenizer/tokenizer.h"

namespace moe::serve::http {

RequestLog& request_log() {
  thread_local RequestLog log;
  return log;
}

void reply_json(httplib::Response& res, const Json& body, int status) {
  res.status = status;
  res.set_content(dump(body), "application/json");
}

void handle_models(ServerState& st, const httplib::Request&, httplib::Response& res) {
  Json model = {
      {"id", st.model_name},
      {"object", "model"},
      {"created", std::chrono::duration_cast<std::chrono::seconds>(st.started.time_since_epoch()).count()},
      {"owned_by", "moecpp"},
      {"max_model_len", st.engine.max_context()}};
  reply_json(res, Json{{"object", "list"}, {"data", Json::array({model})}});
}

void handle_health(ServerState& st, const httplib::Request&, httplib::Response& res) {
  if (st.draining)
    throw ApiError(503, "the server is shutting down", "server_unavailable", "", "shutting_down");
  reply_json(res, Json{{"status", "ok"}});
}

void handle_metrics(ServerState& st, const httplib::Request&, httplib::Response& res) {
  res.set_content(st.metrics.render(st.engine.stats()), "text/plain; version=0.0.4");
}

void handle_tokenize(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_body(req.body);
  const auto text = opt_string(body, "prompt") ? opt_string(body, "prompt") : opt_string(body, "text");
  if (!text) throw_bad_request("'prompt' (a string) is required", "prompt");
  const bool special = opt_bool(body, "add_special_tokens").value_or(true);
  const auto ids = st.engine.tokenizer().encode(*text, special);
  reply_json(res, Json{{"tokens", ids}, {"count", ids.size()}, {"max_model_len", st.engine.max_context()}});
}

void handle_detokenize(ServerState& st, const httplib::Request& req, httplib::Response& res) {
  const Json body = parse_body(req.body);
  auto ids = opt_int_list(body, "tokens");
  if (!ids) throw_bad_request("'tokens' (a list of token ids) is required", "tokens");
  check_token_ids(st.engine.tokenizer(), *ids, "tokens");
  reply_json(res, Json{{"prompt", st.engine.tokenizer().decode(*ids, false)}});
}

void handle_flush_cache(ServerState& st, const httplib::Request&, httplib::Response& res) {
  st.engine.flush_cache();
  res.set_content("Cache flushed.\n", "text/plain");
}

void handle_server_info(ServerState& st, const httplib::Request&, httplib::Response& res) {
  const EngineStats s = st.engine.stats();
  Json info;
  info["model_path"] = st.engine.model_name();
  info["served_model_name"] = st.model_name;
  info["host"] = st.options.host;
  info["port"] = st.options.port;
  info["context_length"] = st.engine.max_context();
  info["reasoning_parser"] = st.split_reasoning ? "qwen3" : "none";
  info["vocab_size"] = st.engine.tokenizer().vocab_size();
  info["kv_pages_total"] = s.kv_pages_total;
  info["running"] = s.running;
  info["waiting"] = s.waiting;
  info["version"] = "moecpp";
  reply_json(res, info);
}

}  // namespace moe::serve::http
