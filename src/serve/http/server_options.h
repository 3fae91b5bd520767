#pragma once
#include <string>

namespace moe::serve::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 30000;                       // 0: any free port (HttpServer::bind reports it)
  std::string served_model_name;          // empty: the engine's model name
  std::string chat_template;              // Jinja source overriding the checkpoint's; empty: the checkpoint's
  std::string reasoning_parser = "auto";  // auto (when the template knows <think>), qwen3, none
  int worker_threads = 160;               // one per open connection (a stream holds its worker)
  bool log_requests = true;               // one line per request on stderr
};

}  // namespace moe::serve::http
