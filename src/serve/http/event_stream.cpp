#include "serve/http/event_stream.h"

#include <httplib.h>

#include "serve/http/json_fields.h"

namespace moe::serve::http {

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kPollInterval(50);

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Per-answer latency bookkeeping: the first token of any choice gives TTFT, later token arrivals give the
// inter-token latency (a burst of k tokens counts as k gaps of a k-th of the time).
class LatencyClock {
 public:
  explicit LatencyClock(ServerMetrics& m) : metrics_(m), start_(Clock::now()), last_(start_) {}
  void on_event(const GenerateEvent& e) {
    if (e.new_ids.empty()) return;
    const auto now = Clock::now();
    if (!seen_first_) {
      metrics_.ttft.observe(std::chrono::duration<double>(now - start_).count());
      seen_first_ = true;
      if (e.new_ids.size() > 1) observe_gaps(now, e.new_ids.size() - 1);
    } else {
      observe_gaps(now, e.new_ids.size());
    }
    last_ = now;
  }
  void finish() { metrics_.e2e.observe(seconds_since(start_)); }

 private:
  void observe_gaps(Clock::time_point now, size_t n) {
    const double gap = std::chrono::duration<double>(now - last_).count() / static_cast<double>(n);
    for (size_t i = 0; i < n; ++i) metrics_.inter_token.observe(gap);
  }
  ServerMetrics& metrics_;
  Clock::time_point start_, last_;
  bool seen_first_ = false;
};

bool all_done(const std::vector<Job>& jobs) {
  for (const auto& j : jobs)
    if (!j.channel->done()) return false;
  return true;
}

// Pops what is there from every job (waiting on the first unfinished one) and hands it on.
void pump(const std::vector<Job>& jobs, LatencyClock& clock, const EventFn& fn) {
  bool waited = false;
  for (const auto& j : jobs) {
    if (j.channel->done()) continue;
    auto events = j.channel->pop(waited ? std::chrono::milliseconds(0) : kPollInterval);
    waited = true;
    for (const auto& e : events) {
      clock.on_event(e);
      fn(e, j.first_choice + e.choice);
    }
  }
}

// Lives as long as the stream's provider: counts the answer in flight and cancels it if it did not finish.
struct StreamState {
  StreamState(ServerState& s, std::vector<Job> j) : state(s), jobs(std::move(j)), clock(s.metrics) {
    ++state.in_flight;
  }
  ~StreamState() { --state.in_flight; }
  ServerState& state;
  std::vector<Job> jobs;
  LatencyClock clock;
  bool finished = false;
};

}  // namespace

std::string sse(const std::string& json) {
  return "data: " + json + "\n\n";
}

std::vector<Job> submit_jobs(ServerState& state, std::vector<GenerateRequest> requests) {
  std::vector<Job> jobs;
  try {
    for (auto& r : requests) {
      Job j;
      j.request_id = r.request_id;
      j.first_choice = static_cast<int>(jobs.size()) * r.sampling.n;
      j.channel = submit_request(state.engine, std::move(r));
      jobs.push_back(std::move(j));
    }
  } catch (...) {
    for (const auto& j : jobs) state.engine.cancel(j.request_id);
    throw;
  }
  return jobs;
}

void wait_for_events(ServerState& state, const std::vector<Job>& jobs, const EventFn& on_event) {
  LatencyClock clock(state.metrics);
  std::vector<std::unique_ptr<CancelGuard>> guards;
  for (const auto& j : jobs) guards.push_back(std::make_unique<CancelGuard>(state.engine, j.request_id));
  while (!all_done(jobs)) pump(jobs, clock, on_event);
  for (auto& g : guards) g->release();
  clock.finish();
}

void stream_events(ServerState& state, httplib::Response& res, std::vector<Job> jobs,
                   std::function<std::string(const GenerateEvent&, int choice)> on_event,
                   std::function<std::string()> on_end) {
  auto st = std::make_shared<StreamState>(state, std::move(jobs));
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [st, on_event, on_end](size_t, httplib::DataSink& sink) {
        std::string out;
        pump(st->jobs, st->clock, [&](const GenerateEvent& e, int choice) { out += on_event(e, choice); });
        if (all_done(st->jobs)) {
          out += on_end();
          st->finished = true;
          st->clock.finish();
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) return false;  // the client went away
        if (st->finished) sink.done();
        return true;
      },
      [st](bool success) {
        if (success && st->finished) return;
        st->state.metrics.count_client_disconnect();
        for (const auto& j : st->jobs) st->state.engine.cancel(j.request_id);
      });
}

}  // namespace moe::serve::http
