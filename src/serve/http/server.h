#pragma once
// The OpenAI-compatible (and sglang-native) HTTP server in front of an Engine.
//
//   POST /v1/chat/completions, /v1/completions   OpenAI, streaming (SSE) or not
//   GET  /v1/models, /health, /metrics           model list, liveness, Prometheus text
//   POST /generate, /flush_cache                 sglang native
//   GET  /get_server_info
//   POST /tokenize, /detokenize
//
// Every handler runs on one of the server's worker threads; a streaming answer holds its worker until the
// last event. Errors are OpenAI-shaped JSON with the matching status; a bad request never stops the server.
#include <memory>
#include <thread>

#include "serve/engine/engine_api.h"
#include "serve/http/server_options.h"

namespace moe::serve::http {

struct ServerState;

class HttpServer {
 public:
  HttpServer(Engine& engine, ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; returns the port (the free one picked when options.port is 0). Throws
  // moe::Error when the address cannot be bound.
  int bind();
  // Serves until stop(); call after bind().
  void serve();
  // Refuses new requests (503), lets in-flight answers finish when `drain` (the engine drains its running
  // requests, streams write their last chunk; at most `drain_timeout_s`), then stops listening. The engine
  // is shut down here too.
  void stop(bool drain, double drain_timeout_s = 30);

  int64_t in_flight() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace moe::serve::http
