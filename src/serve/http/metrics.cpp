#include "serve/http/metrics.h"

#include <cstdio>

namespace moe::serve::http {

namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void metric(std::string& out, const char* name, const char* type, const char* help, double value) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  out += std::string(name) + " " + num(value) + "\n";
}

std::vector<double> latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

}  // namespace

void Histogram::observe(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t b = 0;
  while (b < bounds_.size() && seconds > bounds_[b]) ++b;
  ++counts_[b];
  sum_ += seconds;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  std::lock_guard<std::mutex> lock(mu_);
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  int64_t cumulative = 0;
  for (size_t b = 0; b < counts_.size(); ++b) {
    cumulative += counts_[b];
    const std::string le = b < bounds_.size() ? num(bounds_[b]) : "+Inf";
    out += name + "_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
}

ServerMetrics::ServerMetrics()
    : ttft(latency_buckets()), inter_token(latency_buckets()), e2e(latency_buckets()) {}

void ServerMetrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
}

void ServerMetrics::count_client_disconnect() {
  std::lock_guard<std::mutex> lock(mu_);
  ++disconnects_;
}

std::string ServerMetrics::render(const EngineStats& s) const {
  std::string out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out += "# HELP moe_http_requests_total HTTP requests answered, by endpoint and status.\n";
    out += "# TYPE moe_http_requests_total counter\n";
    for (const auto& [key, count] : requests_)
      out += "moe_http_requests_total{endpoint=\"" + key.first + "\",status=\"" + std::to_string(key.second) +
             "\"} " + std::to_string(count) + "\n";
    metric(out, "moe_client_disconnects_total", "counter",
           "Streams whose client went away (request cancelled).", static_cast<double>(disconnects_));
  }
  metric(out, "moe_requests_total", "counter", "Requests accepted by the engine.",
         static_cast<double>(s.requests_total));
  metric(out, "moe_requests_finished_total", "counter", "Requests finished by the engine.",
         static_cast<double>(s.requests_finished));
  metric(out, "moe_requests_aborted_total", "counter", "Requests cancelled or failed.",
         static_cast<double>(s.requests_aborted));
  metric(out, "moe_prompt_tokens_total", "counter", "Prompt tokens processed.",
         static_cast<double>(s.prompt_tokens_total));
  metric(out, "moe_generation_tokens_total", "counter", "Tokens generated.",
         static_cast<double>(s.generation_tokens_total));
  metric(out, "moe_num_running_reqs", "gauge", "Requests in the running batch.",
         static_cast<double>(s.running));
  metric(out, "moe_num_waiting_reqs", "gauge", "Requests waiting in the queue.",
         static_cast<double>(s.waiting));
  metric(out, "moe_kv_pages_used", "gauge", "KV cache pages in use.", static_cast<double>(s.kv_pages_used));
  metric(out, "moe_kv_pages_total", "gauge", "KV cache pages in the pool.",
         static_cast<double>(s.kv_pages_total));
  metric(out, "moe_kv_cache_usage_ratio", "gauge", "Fraction of KV pages in use.",
         s.kv_pages_total > 0 ? static_cast<double>(s.kv_pages_used) / static_cast<double>(s.kv_pages_total)
                              : 0.0);
  metric(out, "moe_prefix_cache_queried_tokens_total", "counter",
         "Prompt tokens looked up in the prefix cache.", static_cast<double>(s.prefix_cache_queried_tokens));
  metric(out, "moe_prefix_cache_hit_tokens_total", "counter", "Prompt tokens found in the prefix cache.",
         static_cast<double>(s.prefix_cache_hit_tokens));
  metric(out, "moe_prefix_cache_hit_rate", "gauge", "Hit tokens / queried tokens of the prefix cache.",
         s.prefix_cache_queried_tokens > 0 ? static_cast<double>(s.prefix_cache_hit_tokens) /
                                                 static_cast<double>(s.prefix_cache_queried_tokens)
                                           : 0.0);
  metric(out, "moe_preemptions_total", "counter", "Requests preempted for lack of KV pages.",
         static_cast<double>(s.preemptions_total));
  metric(out, "moe_tuned_config_fallbacks_total", "counter",
         "MoE layers running a default (untuned) kernel config.",
         static_cast<double>(s.tuned_config_fallbacks));
  ttft.render(out, "moe_time_to_first_token_seconds", "Time from request arrival to its first token.");
  inter_token.render(out, "moe_inter_token_latency_seconds", "Time between consecutive tokens of a request.");
  e2e.render(out, "moe_e2e_request_latency_seconds", "Time from request arrival to its last token.");
  return out;
}

}  // namespace moe::serve::http
