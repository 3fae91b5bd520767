#include "serve/http/request_channel.h"

#include "serve/http/api_error.h"

namespace moe::serve::http {

void RequestChannel::push(const GenerateEvent& e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(e);
    if (e.finished) --open_choices_;
  }
  cv_.notify_all();
}

std::vector<GenerateEvent> RequestChannel::pop(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !events_.empty(); });
  std::vector<GenerateEvent> out(std::make_move_iterator(events_.begin()),
                                 std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

bool RequestChannel::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_choices_ <= 0 && events_.empty();
}

std::shared_ptr<RequestChannel> submit_request(Engine& engine, GenerateRequest req) {
  auto channel = std::make_shared<RequestChannel>(req.sampling.n);
  SubmitResult r = engine.submit(std::move(req), [channel](const GenerateEvent& e) { channel->push(e); });
  switch (r.status) {
    case SubmitStatus::Accepted:
      return channel;
    case SubmitStatus::Invalid:
      throw ApiError(400, r.message, "invalid_request_error");
    case SubmitStatus::QueueFull:
      throw ApiError(503, r.message.empty() ? "the server is busy: request queue full" : r.message,
                     "server_overloaded", "", "queue_full");
    case SubmitStatus::ShuttingDown:
      throw ApiError(503, "the server is shutting down", "server_unavailable", "", "shutting_down");
  }
  return channel;
}

}  // namespace moe::serve::http
