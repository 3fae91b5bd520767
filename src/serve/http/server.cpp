#include "serve/http/server.h"

#include <httplib.h>

#include <cstdio>

#include "core/error.h"
#include "serve/http/api_error.h"
#include "serve/http/port_probe.h"
#include "serve/http/routes.h"
#include "serve/http/server_state.h"

namespace moe::serve::http {

namespace {

// The largest request body read (httplib answers 413 past it).
constexpr size_t kMaxBodyMiB = 64;

using Handler = void (*)(ServerState&, const httplib::Request&, httplib::Response&);
using Clock = std::chrono::steady_clock;

// Wraps a handler: counts it in flight, turns exceptions into OpenAI-style errors, counts and logs it.
httplib::Server::Handler wrap(ServerState& st, const char* endpoint, Handler h) {
  return [&st, endpoint, h](const httplib::Request& req, httplib::Response& res) {
    ++st.in_flight;
    request_log() = RequestLog{};
    try {
      const bool is_probe = std::string(endpoint) == "/health" || std::string(endpoint) == "/metrics";
      if (st.draining && !is_probe)
        throw ApiError(503, "the server is shutting down", "server_unavailable", "", "shutting_down");
      h(st, req, res);
    } catch (const ApiError& e) {
      res.status = e.status();
      res.set_content(error_body(e), "application/json");
    } catch (const InputError& e) {
      res.status = 400;
      res.set_content(error_body(400, e.what(), "invalid_request_error"), "application/json");
    } catch (const std::exception& e) {
      res.status = 500;
      res.set_content(error_body(500, e.what(), "internal_error"), "application/json");
    }
    st.metrics.count_request(endpoint, res.status);
    --st.in_flight;
  };
}

// The message for an error the HTTP layer found before any handler ran.
std::string http_error_message(int status, const std::string& method, const std::string& path) {
  switch (status) {
    case 404:
      return "no route " + method + " " + path;
    case 405:
      return "method " + method + " not allowed on " + path;
    case 413:
      return "the request body is over the server's " + std::to_string(kMaxBodyMiB) + " MB limit";
    case 414:
      return "the request URI is too long";
    case 431:
      return "the request headers are too large";
    default:
      return "malformed HTTP request (status " + std::to_string(status) + ")";
  }
}

}  // namespace

struct HttpServer::Impl {
  Impl(Engine& e, ServerOptions o) : state(e, std::move(o)) {}
  ServerState state;
  httplib::Server server;
  int port = 0;
  std::atomic<bool> stopped{false};
};

HttpServer::HttpServer(Engine& engine, ServerOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(options))) {
  ServerState& st = impl_->state;
  httplib::Server& svr = impl_->server;
  const size_t threads = static_cast<size_t>(std::max(8, st.options.worker_threads));
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_payload_max_length(kMaxBodyMiB << 20);
  svr.set_keep_alive_timeout(5);
  // A connection silent for 15 s while its request is read is dropped: each holds a worker thread meanwhile,
  // so a long read timeout let a few hundred stalled clients starve the rest (60 s: /health took 55 s behind
  // 400 of them). Responses, streams included, keep the long write timeout.
  svr.set_read_timeout(15);
  svr.set_write_timeout(60);
  svr.set_socket_options([](socket_t sock) { set_listen_socket_options(sock); });

  svr.Post("/v1/chat/completions", wrap(st, "/v1/chat/completions", handle_chat_completions));
  svr.Post("/v1/completions", wrap(st, "/v1/completions", handle_completions));
  svr.Get("/v1/models", wrap(st, "/v1/models", handle_models));
  svr.Post("/generate", wrap(st, "/generate", handle_generate));
  svr.Post("/flush_cache", wrap(st, "/flush_cache", handle_flush_cache));
  svr.Get("/flush_cache", wrap(st, "/flush_cache", handle_flush_cache));
  svr.Get("/get_server_info", wrap(st, "/get_server_info", handle_server_info));
  svr.Get("/health", wrap(st, "/health", handle_health));
  svr.Get("/health_generate", wrap(st, "/health", handle_health));
  svr.Get("/metrics", wrap(st, "/metrics", handle_metrics));
  svr.Post("/tokenize", wrap(st, "/tokenize", handle_tokenize));
  svr.Post("/detokenize", wrap(st, "/detokenize", handle_detokenize));

  // Errors the HTTP layer finds itself (no route, wrong method, a body over the limit, a URI or headers too
  // long, a malformed request): OpenAI-style bodies under the status it chose (handlers set their own
  // errors, left as they are).
  svr.set_error_handler([&st](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const int status = res.status >= 400 ? res.status : 404;
    res.status = status;
    res.set_content(
        error_body(status, http_error_message(status, req.method, req.path), "invalid_request_error"),
        "application/json");
    st.metrics.count_request("unknown", status);
  });
  svr.set_logger([&st](const httplib::Request& req, const httplib::Response& res) {
    if (!st.options.log_requests) return;
    const RequestLog& log = request_log();
    if (log.prompt_tokens >= 0)
      std::fprintf(stderr, "serve: %s %s %d %s prompt=%lld completion=%lld cached=%lld\n", req.method.c_str(),
                   req.path.c_str(), res.status, log.request_id.c_str(),
                   static_cast<long long>(log.prompt_tokens), static_cast<long long>(log.completion_tokens),
                   static_cast<long long>(log.cached_tokens));
    else
      std::fprintf(stderr, "serve: %s %s %d\n", req.method.c_str(), req.path.c_str(), res.status);
  });
}

HttpServer::~HttpServer() {
  if (!impl_->stopped) stop(false, 0);
}

int HttpServer::bind() {
  const auto& o = impl_->state.options;
  if (o.port == 0) {
    impl_->port = impl_->server.bind_to_any_port(o.host);
  } else {
    impl_->port = impl_->server.bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (impl_->port <= 0) throw Error(str("cannot listen on ", o.host, ":", o.port, " (address in use?)"));
  impl_->state.options.port = impl_->port;
  return impl_->port;
}

void HttpServer::serve() {
  impl_->server.listen_after_bind();
}

int64_t HttpServer::in_flight() const {
  return impl_->state.in_flight.load();
}

void HttpServer::stop(bool drain, double drain_timeout_s) {
  if (impl_->stopped.exchange(true)) return;
  ServerState& st = impl_->state;
  st.draining = true;
  st.engine.shutdown(drain);
  const auto deadline = Clock::now() + std::chrono::duration<double>(drain ? drain_timeout_s : 1.0);
  while (st.in_flight > 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  impl_->server.stop();
}

}  // namespace moe::serve::http
