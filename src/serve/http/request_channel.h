#pragma once
// Hands a request's events from the engine's thread to the HTTP worker that answers it. The engine callback
// only appends under a lock (it must never block on the client); the worker waits with a timeout.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "serve/engine/engine_api.h"

namespace moe::serve::http {

class RequestChannel {
 public:
  explicit RequestChannel(int choices) : open_choices_(choices) {}

  void push(const GenerateEvent& e);
  // Waits up to `timeout` for events; returns what arrived (maybe nothing).
  std::vector<GenerateEvent> pop(std::chrono::milliseconds timeout);
  // True when every choice has sent its final event and all events were popped.
  bool done() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<GenerateEvent> events_;
  int open_choices_;
};

// Submits `req`, wiring its events into a new channel; throws ApiError: 400 Invalid, 503 QueueFull or
// ShuttingDown.
std::shared_ptr<RequestChannel> submit_request(Engine& engine, GenerateRequest req);

// Cancels the request when destroyed unless release() was called: a client that goes away, or a handler that
// throws, frees the request's KV.
class CancelGuard {
 public:
  CancelGuard(Engine& engine, std::string request_id) : engine_(&engine), id_(std::move(request_id)) {}
  CancelGuard(const CancelGuard&) = delete;
  CancelGuard& operator=(const CancelGuard&) = delete;
  ~CancelGuard() {
    if (engine_) engine_->cancel(id_);
  }
  void release() { engine_ = nullptr; }

 private:
  Engine* engine_;
  std::string id_;
};

}  // namespace moe::serve::http
