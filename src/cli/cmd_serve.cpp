// moe serve: the OpenAI-compatible HTTP server (src/serve/http) in front of the serving engine
// (src/serve/engine). SIGTERM / SIGINT drain the requests in flight, then the process exits 0.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/tp_flags.h"
#include "core/error.h"
#include "serve/engine/engine.h"
#include "serve/http/port_probe.h"
#include "serve/http/server.h"
#include "serve/tokenizer/tokenizer_config.h"

namespace moe::cli {

namespace {

// SIGINT / SIGTERM are blocked in every thread and taken by one watcher with sigtimedwait, so the drain runs
// in ordinary code rather than in a signal handler.
sigset_t stop_signals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  return s;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  Args a(argc, argv,
         with_tp_options({"model", "tokenizer", "host", "port", "backend", "max-batch", "kv-pages",
                          "page-size", "max-queue", "context-length", "chunked-prefill-size",
                          "served-model-name", "chat-template", "reasoning-parser", "threads"}),
         {"quiet", "no-log-requests"});
  serve::EngineOptions eo;
  eo.model_dir = a.required("model");
  eo.tokenizer_dir = a.str("tokenizer");
  eo.model_name = a.str("served-model-name");
  eo.backend = a.str("backend", "cpu");
  eo.max_batch = a.integer("max-batch", eo.max_batch);
  eo.kv_pages = a.integer("kv-pages", eo.kv_pages);
  eo.page_size = a.integer("page-size", eo.page_size);
  eo.max_queue = a.integer("max-queue", eo.max_queue);
  eo.max_context = a.integer("context-length", eo.max_context);
  eo.chunked_prefill_tokens = a.integer("chunked-prefill-size", eo.chunked_prefill_tokens);
  eo.verbose = !a.flag("quiet");
  read_tp_flags(a, eo.backend_options);

  serve::http::ServerOptions so;
  so.host = a.str("host", "127.0.0.1");
  so.port = static_cast<int>(a.integer("port", 30000));
  require_input(so.port >= 0 && so.port < 65536, "--port ", so.port, " is out of range");
  so.served_model_name = eo.model_name;
  so.reasoning_parser = a.str("reasoning-parser", "auto");
  so.worker_threads = static_cast<int>(a.integer("threads", so.worker_threads));
  so.log_requests = !a.flag("no-log-requests");
  if (a.has("chat-template")) so.chat_template = tok::read_text_file(a.str("chat-template"));

  std::signal(SIGPIPE, SIG_IGN);
  const sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts, so all inherit it

  // Before the load, which can take minutes: a port in use fails now.
  serve::http::require_bindable(so.host, so.port);
  const auto t0 = std::chrono::steady_clock::now();
  std::fprintf(stderr, "serve: loading %s (backend %s, tp %d%s, %lld KV pages of %lld tokens)\n",
               eo.model_dir.c_str(), eo.backend.c_str(), eo.backend_options.tp_size,
               eo.backend_options.expert_parallel ? " ep" : "", static_cast<long long>(eo.kv_pages),
               static_cast<long long>(eo.page_size));
  std::unique_ptr<serve::Engine> engine = serve::make_engine(eo);
  serve::http::HttpServer server(*engine, so);
  const int port = server.bind();
  const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "serve: model '%s' loaded in %.1f s, context %lld tokens; listening on http://%s:%d\n",
               engine->model_name().c_str(), load_s, static_cast<long long>(engine->max_context()),
               so.host.c_str(), port);

  std::atomic<bool> serving{true};
  std::thread watcher([&] {
    const timespec tick{0, 200 * 1000 * 1000};
    while (serving) {
      const int sig = sigtimedwait(&signals, nullptr, &tick);
      if (sig != SIGINT && sig != SIGTERM) continue;
      std::fprintf(stderr, "serve: %s, draining %lld request(s) in flight\n",
                   sig == SIGINT ? "SIGINT" : "SIGTERM", static_cast<long long>(server.in_flight()));
      server.stop(/*drain=*/true);
      return;
    }
  });
  server.serve();
  serving = false;
  watcher.join();
  server.stop(true);
  std::fprintf(stderr, "serve: stopped\n");
  return 0;
}

}  // namespace moe::cli
