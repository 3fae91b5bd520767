#pragma once
// One function per endpoint. Each may throw ApiError (the server turns it into an OpenAI-style error).
#include "serve/http/server_state.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace moe::serve::http {

// OpenAI
void handle_chat_completions(ServerState& st, const httplib::Request& req, httplib::Response& res);
void handle_completions(ServerState& st, const httplib::Request& req, httplib::Response& res);
void handle_models(ServerState& st, const httplib::Request& req, httplib::Response& res);
// sglang native
void handle_generate(ServerState& st, const httplib::Request& req, httplib::Response& res);
void handle_flush_cache(ServerState& st, const httplib::Request& req, httplib::Response& res);
void handle_server_info(ServerState& st, const httplib::Request& req, httplib::Response& res);
// both
void handle_health(ServerState& st, const httplib::Request& req, httplib::Response& res);
void handle_metrics(ServerState& st, const httplib::Request& req, httplib::Response& res);
void handle_tokenize(ServerState& st, const httplib::Request& req, httplib::Response& res);
void handle_detokenize(ServerState& st, const httplib::Request& req, httplib::Response& res);

// What the per-request log line reports; handlers fill it on the worker thread that answers the request.
struct RequestLog {
  std::string request_id;
  int64_t prompt_tokens = -1, completion_tokens = 0, cached_tokens = 0;
};
RequestLog& request_log();

// Sets a JSON body.
void reply_json(httplib::Response& res, const Json& body, int status = 200);

}  // namespace moe::serve::http
