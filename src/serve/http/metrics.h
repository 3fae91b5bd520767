#pragma once
// What GET /metrics reports, in the Prometheus text exposition format: HTTP request counts by endpoint and
// status, latency histograms measured by the front end (time to first token, inter-token latency, end to end)
// and the engine's counters and gauges (EngineStats).
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "serve/engine/engine_api.h"

namespace moe::serve::http {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds)
      : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double seconds);
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  int64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  void count_request(const std::string& endpoint, int status);
  void count_client_disconnect();
  Histogram ttft, inter_token, e2e;

  std::string render(const EngineStats& stats) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  int64_t disconnects_ = 0;
};

}  // namespace moe::serve::http
