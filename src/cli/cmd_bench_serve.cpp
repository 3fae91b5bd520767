// moe bench serve (also `moe bench-serve`): an online load generator in the style of sglang's bench_serving.
// Sends --num-prompts random-token requests to a running server (streaming, through sglang's /generate or
// OpenAI's /v1/completions), at a Poisson --request-rate (or all at once) and at most --max-concurrency in
// flight, then reports request and token throughput and TTFT / TPOT / ITL / end-to-end latency statistics.
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"

namespace moe::cli {

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

struct Outcome {
  bool ok = false;
  std::string error;
  int64_t input_len = 0, output_len = 0;
  double ttft = 0, latency = 0;
  std::vector<double> itl;  // gaps between streamed chunks after the first
};

struct Config {
  std::string base_url, endpoint, model;
  int64_t output_len = 0;
};

// One streamed request; SSE chunks are split on blank lines and timed as they arrive.
Outcome send_one(const Config& cfg, const std::vector<int32_t>& prompt, int64_t output_len) {
  Outcome o;
  o.input_len = static_cast<int64_t>(prompt.size());
  json body;
  if (cfg.endpoint == "/generate") {
    body = {{"input_ids", prompt},
            {"sampling_params", {{"max_new_tokens", output_len}, {"temperature", 0.0}, {"ignore_eos", true}}},
            {"stream", true}};
  } else {
    body = {{"model", cfg.model},
            {"prompt", prompt},
            {"max_tokens", output_len},
            {"temperature", 0.0},
            {"ignore_eos", true},
            {"stream", true},
            {"stream_options", {{"include_usage", true}}}};
  }
  httplib::Client cli(cfg.base_url);
  cli.set_read_timeout(600);
  cli.set_write_timeout(60);
  httplib::Request req;
  req.method = "POST";
  req.path = cfg.endpoint;
  req.headers = {{"Content-Type", "application/json"}};
  req.body = body.dump();
  std::string buf;
  const auto start = Clock::now();
  auto last = start;
  bool first = true;
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    buf.append(data, len);
    size_t end;
    while ((end = buf.find("\n\n")) != std::string::npos) {
      std::string event = buf.substr(0, end);
      buf.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0) continue;
      const std::string payload = event.substr(6);
      if (payload == "[DONE]") continue;
      json j = json::parse(payload, nullptr, false);
      if (j.is_discarded() || j.contains("error")) {
        o.error = payload;
        continue;
      }
      bool has_tokens = false;
      if (cfg.endpoint == "/generate") {
        const int64_t done = j["meta_info"].value("completion_tokens", int64_t{0});
        has_tokens = done > o.output_len;
        o.output_len = std::max(o.output_len, done);
      } else {
        if (j.contains("usage") && j["usage"].is_object())
          o.output_len = j["usage"].value("completion_tokens", o.output_len);
        // A chunk per decode step; its text may be empty (bytes of a character still incomplete).
        has_tokens = !j["choices"].empty();
      }
      if (!has_tokens) continue;
      const auto now = Clock::now();
      if (first) {
        o.ttft = std::chrono::duration<double>(now - start).count();
        first = false;
      } else {
        o.itl.push_back(std::chrono::duration<double>(now - last).count());
      }
      last = now;
    }
    return true;
  };
  auto res = cli.send(req);
  o.latency = std::chrono::duration<double>(Clock::now() - start).count();
  if (!res) {
    o.error = "connection failed: " + httplib::to_string(res.error());
  } else if (res->status != 200) {
    o.error = "HTTP " + std::to_string(res->status) + ": " + res->body;
  } else if (o.error.empty()) {
    o.ok = !first;
    if (first) o.error = "no tokens streamed";
  }
  return o;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank)), hi = static_cast<size_t>(std::ceil(rank));
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

// mean / median / p99 (and std) in milliseconds, into `out` under `name`, and printed.
void report(json& out, const std::string& name, const std::string& label,
            const std::vector<double>& seconds) {
  std::vector<double> ms;
  for (double s : seconds) ms.push_back(s * 1e3);
  out["mean_" + name + "_ms"] = mean(ms);
  out["median_" + name + "_ms"] = percentile(ms, 50);
  out["p99_" + name + "_ms"] = percentile(ms, 99);
  std::printf("%-40s %.2f\n", ("Mean " + label + " (ms):").c_str(), mean(ms));
  std::printf("%-40s %.2f\n", ("Median " + label + " (ms):").c_str(), percentile(ms, 50));
  std::printf("%-40s %.2f\n", ("P99 " + label + " (ms):").c_str(), percentile(ms, 99));
}

int64_t server_vocab(const std::string& base_url) {
  httplib::Client cli(base_url);
  cli.set_read_timeout(30);
  auto res = cli.Get("/get_server_info");
  if (!res || res->status != 200)
    fail_input("cannot reach ", base_url, "/get_server_info: is the server up?");
  return json::parse(res->body).value("vocab_size", int64_t{256});
}

}  // namespace

int cmd_bench_serve(int argc, char** argv) {
  Args a(argc, argv,
         {"base-url", "host", "port", "backend", "endpoint", "model", "num-prompts", "request-rate",
          "max-concurrency", "random-input-len", "random-output-len", "random-range-ratio", "seed",
          "output-file", "dataset-name"},
         {"quiet"});
  Config cfg;
  cfg.base_url = a.has("base-url") ? a.str("base-url")
                                   : "http://" + a.str("host", "127.0.0.1") + ":" + a.str("port", "30000");
  const std::string backend = a.str("backend", "sglang");
  std::string endpoint = a.str("endpoint", backend == "sglang" ? "generate" : "completions");
  require_input(endpoint == "generate" || endpoint == "completions", "--endpoint '", endpoint,
                "': expected generate or completions");
  require_input(a.str("dataset-name", "random") == "random", "--dataset-name: only 'random' is supported");
  cfg.endpoint = endpoint == "generate" ? "/generate" : "/v1/completions";
  cfg.model = a.str("model", "default");
  const int64_t num_prompts = a.integer("num-prompts", 100);
  const std::string rate_text = a.str("request-rate", "inf");
  const double rate = rate_text == "inf" ? std::numeric_limits<double>::infinity() : std::stod(rate_text);
  const int64_t max_concurrency = a.integer("max-concurrency", 0);
  const int64_t in_len = a.integer("random-input-len", 1024), out_len = a.integer("random-output-len", 1024);
  const double range = a.number("random-range-ratio", 0.0);
  require_input(
      num_prompts >= 1 && in_len >= 1 && out_len >= 1 && range >= 0 && range <= 1 && rate > 0,
      "--num-prompts, --random-input-len, --random-output-len must be >= 1, --random-range-ratio in "
      "[0, 1], --request-rate > 0");

  // Lengths uniform in [len * ratio, len], as sglang's random dataset; token ids uniform over the vocabulary.
  std::mt19937_64 rng(static_cast<uint64_t>(a.integer("seed", 1)));
  const int64_t vocab = server_vocab(cfg.base_url);
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int64_t> out_lens;
  auto length = [&](int64_t len) {
    const int64_t lo = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(len) * range));
    return std::uniform_int_distribution<int64_t>(lo, len)(rng);
  };
  for (int64_t i = 0; i < num_prompts; ++i) {
    std::vector<int32_t> p(static_cast<size_t>(length(in_len)));
    for (auto& t : p) t = static_cast<int32_t>(std::uniform_int_distribution<int64_t>(0, vocab - 1)(rng));
    prompts.push_back(std::move(p));
    out_lens.push_back(length(out_len));
  }

  std::printf("bench serve: %lld prompts to %s%s, rate %s, max concurrency %s\n",
              static_cast<long long>(num_prompts), cfg.base_url.c_str(), cfg.endpoint.c_str(),
              rate_text.c_str(), max_concurrency > 0 ? std::to_string(max_concurrency).c_str() : "not set");
  std::vector<Outcome> outcomes(static_cast<size_t>(num_prompts));
  std::mutex mu;
  std::condition_variable cv;
  int64_t active = 0;
  std::vector<std::thread> threads;
  std::exponential_distribution<double> gap(std::isinf(rate) ? 1.0 : rate);
  const auto t0 = Clock::now();
  auto next = t0;
  for (int64_t i = 0; i < num_prompts; ++i) {
    if (!std::isinf(rate)) {
      std::this_thread::sleep_until(next);
      next += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(gap(rng)));
    }
    if (max_concurrency > 0) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return active < max_concurrency; });
    }
    {
      std::lock_guard lock(mu);
      ++active;
    }
    threads.emplace_back([&, i] {
      outcomes[static_cast<size_t>(i)] =
          send_one(cfg, prompts[static_cast<size_t>(i)], out_lens[static_cast<size_t>(i)]);
      std::lock_guard lock(mu);
      --active;
      cv.notify_all();
    });
  }
  for (auto& t : threads) t.join();
  const double duration = std::chrono::duration<double>(Clock::now() - t0).count();

  int64_t ok = 0, total_in = 0, total_out = 0;
  std::vector<double> ttft, tpot, itl, e2e;
  std::string first_error;
  for (const auto& o : outcomes) {
    if (!o.ok) {
      if (first_error.empty()) first_error = o.error;
      continue;
    }
    ++ok;
    total_in += o.input_len;
    total_out += o.output_len;
    ttft.push_back(o.ttft);
    e2e.push_back(o.latency);
    if (o.output_len > 1) tpot.push_back((o.latency - o.ttft) / static_cast<double>(o.output_len - 1));
    itl.insert(itl.end(), o.itl.begin(), o.itl.end());
  }
  json out;
  out["backend"] = backend;
  out["endpoint"] = cfg.endpoint;
  out["request_rate"] = rate_text;
  out["max_concurrency"] = max_concurrency > 0 ? json(max_concurrency) : json(nullptr);
  out["num_prompts"] = num_prompts;
  out["completed"] = ok;
  out["duration"] = duration;
  out["total_input_tokens"] = total_in;
  out["total_output_tokens"] = total_out;
  out["request_throughput"] = static_cast<double>(ok) / duration;
  out["input_throughput"] = static_cast<double>(total_in) / duration;
  out["output_throughput"] = static_cast<double>(total_out) / duration;
  std::printf("\n============ Serving Benchmark Result ============\n");
  std::printf("%-40s %lld\n", "Successful requests:", static_cast<long long>(ok));
  std::printf("%-40s %.2f\n", "Benchmark duration (s):", duration);
  std::printf("%-40s %lld\n", "Total input tokens:", static_cast<long long>(total_in));
  std::printf("%-40s %lld\n", "Total generated tokens:", static_cast<long long>(total_out));
  std::printf("%-40s %.2f\n", "Request throughput (req/s):", static_cast<double>(ok) / duration);
  std::printf("%-40s %.2f\n", "Input token throughput (tok/s):", static_cast<double>(total_in) / duration);
  std::printf("%-40s %.2f\n", "Output token throughput (tok/s):", static_cast<double>(total_out) / duration);
  std::printf("----------------End-to-End Latency----------------\n");
  report(out, "e2e_latency", "E2E Latency", e2e);
  std::printf("---------------Time to First Token----------------\n");
  report(out, "ttft", "TTFT", ttft);
  std::printf("-----Time per Output Token (excl. 1st token)------\n");
  report(out, "tpot", "TPOT", tpot);
  std::printf("---------------Inter-token Latency----------------\n");
  report(out, "itl", "ITL", itl);
  std::printf("==================================================\n");
  if (!first_error.empty())
    std::printf("failed requests: %lld; first error: %s\n", static_cast<long long>(num_prompts - ok),
                first_error.c_str());
  if (a.has("output-file")) {
    std::ofstream f(a.str("output-file"));
    require_input(f.good(), "cannot write --output-file ", a.str("output-file"));
    f << out.dump(2) << "\n";
  }
  return ok == num_prompts ? 0 : 1;
}

}  // namespace moe::cli
