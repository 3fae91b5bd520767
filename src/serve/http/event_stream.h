#pragma once
// Drives one HTTP answer from the engine's events: submits the request(s), then either waits for every choice
// (non-streaming) or streams Server-Sent Events as tokens arrive. A stream whose client goes away cancels its
// requests, so their KV is freed at once. Latencies are observed here for /metrics.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "serve/http/request_channel.h"
#include "serve/http/server_state.h"

namespace httplib {
struct Response;
}

namespace moe::serve::http {

// One submitted engine request; its choices are numbered from `first_choice` in the answer (a completions
// call with several prompts gives prompt p the choices p*n .. p*n+n-1).
struct Job {
  std::string request_id;
  std::shared_ptr<RequestChannel> channel;
  int first_choice = 0;
};

// Submits every request; when one is refused, the ones already accepted are cancelled and the ApiError
// rethrown.
std::vector<Job> submit_jobs(ServerState& state, std::vector<GenerateRequest> requests);

// Called with every event and the choice's index in the answer.
using EventFn = std::function<void(const GenerateEvent&, int choice)>;

// Blocks until every choice has finished.
void wait_for_events(ServerState& state, const std::vector<Job>& jobs, const EventFn& on_event);

// Makes `res` a text/event-stream. `on_event` returns the SSE text for one event (may be empty); `on_end` the
// closing text after every choice finished (e.g. a usage chunk and "data: [DONE]\n\n").
void stream_events(ServerState& state, httplib::Response& res, std::vector<Job> jobs,
                   std::function<std::string(const GenerateEvent&, int choice)> on_event,
                   std::function<std::string()> on_end);

// "data: <json>\n\n"
std::string sse(const std::string& json);

}  // namespace moe::serve::http
