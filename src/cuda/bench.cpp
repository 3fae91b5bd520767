// The fused MoE benchmark: random weights made in GPU memory, `copies` layer copies rotated over inside one
// CUDA graph, the median of graph replays; the floor is (unique experts touched x bytes per expert incl.
// scales + shared expert) / the card's measured read bandwidth, or FLOPs / the measured peak when that is
// larger.
#include "cuda/bench.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/env_flag.h"
#include "core/error.h"
#include "cuda/cuda_check.h"
#include "cuda/event_timing.h"
#include "cuda/grouped_gemm_timeline.h"
#include "cuda/kernel_timeline.h"
#include "cuda/kernels/expert_fused.h"
#include "cuda/kernels/expert_wgmma.h"
#include "cuda/kernels/swap_ab_timeline.h"
#include "cuda/moe_layer.h"
#include "cuda/random_fill.h"
#include "cuda/read_bandwidth.h"
#include "layout/plan.h"

namespace moe::cuda {
namespace {

// deepseek_routing: sigmoid grouped routing and a shared expert without a gate (DeepSeek-V3's
// shared_experts); the others' shared expert has one (Qwen3-Next's shared_expert_gate). Until session 28 the
// DeepSeek shapes carried a gate too: a 7168-wide dot product on the prologue's routing warp, ~28 of its
// ~38 us at one token.
struct BenchShape {
  const char* name;
  int64_t E, H, I, top_k, shared_inter;
  bool deepseek_routing;
};

const BenchShape kBenchShapes[] = {
    {"qwen3-30b-a3b", 128, 2048, 768, 8, 0, false},    {"qwen3-next-80b-a3b", 512, 2048, 512, 10, 512, false},
    {"deepseek-v3-tp8", 256, 7168, 256, 8, 256, true}, {"qwen3-235b-a22b-tp8", 128, 4096, 192, 8, 0, false},
    {"deepseek-v3", 256, 7168, 2048, 8, 2048, true},
};

const BenchShape& find_shape(const std::string& name) {
  for (const auto& s : kBenchShapes)
    if (name == s.name) return s;
  fail_input("moe bench: unknown shape '", name, "'");
}

GemmPath parse_path(const std::string& p) {
  if (p == "auto") return GemmPath::Auto;
  if (p == "gemv") return GemmPath::Gemv;
  if (p == "stream") return GemmPath::Stream;
  if (p == "mma") return GemmPath::Mma;
  if (p == "decode") return GemmPath::Decode;
  if (p == "fused") return GemmPath::Fused;
  if (p == "swap-ab") return GemmPath::SwapAb;
  fail_input("moe bench: unknown path '", p, "' (auto, gemv, swap-ab, stream, mma, decode, fused)");
}

struct Row {
  std::string shape, format, path;
  int M;
  double us, floor_us, gbps, tflops;
  int unique_experts;
  double bytes;
  std::string setting;  // --env-ab: "VAR=V rN", else empty
  // A MOE_KERNEL_TIMELINE measuring build run with MOE_KERNEL_TIMELINE=1: one more replay of the row's graph,
  // recorded (grouped_gemm_timeline.h); calls 0 otherwise.
  GroupedGemmTimeline timeline;
  KernelTimelineSummary op_timeline;  // the same replay's launches per call (kernel_timeline.h)
};

// The settings each row is measured under: one empty one, or (--env-ab) every value of the variable, round
// after round.
std::vector<std::pair<const EnvAbSetting*, int>> settings_of(const BenchOptions& o) {
  if (o.env_ab.settings.empty()) return {{nullptr, 0}};
  std::vector<std::pair<const EnvAbSetting*, int>> all;
  for (int round = 1; round <= o.rounds; ++round)
    for (const EnvAbSetting& setting : o.env_ab.settings) all.push_back({&setting, round});
  return all;
}

}  // namespace

int run_moe_bench(const BenchOptions& o) {
  require_input(device_count() > 0, "moe bench: no CUDA device");
  cudaDeviceProp prop{};
  MOE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::fprintf(stderr, "moe bench: %s, %d SMs, L2 %d MB; measuring read bandwidth...\n", prop.name,
               prop.multiProcessorCount, prop.l2CacheSize >> 20);
  const double read_bw = measure_read_bandwidth();  // bytes / s
  bind_op_kernel_timelines();                       // (measuring builds with MOE_KERNEL_TIMELINE=1 only)
  std::printf("# device %s; measured read bandwidth %.0f GB/s\n", prop.name, read_bw / 1e9);
  std::printf("%-22s %-9s %5s %10s %10s %7s %8s %8s %7s %s\n", "shape", "format", "M", "time_us", "floor_us",
              "ratio", "GB/s", "TFLOP/s", "experts", "path");
  std::vector<Row> rows;
  cudaStream_t stream;
  MOE_CUDA_CHECK(cudaStreamCreate(&stream));
  const int max_m = *std::max_element(o.Ms.begin(), o.Ms.end());

  for (const std::string& shape_name : o.shapes) {
    const BenchShape& s = find_shape(shape_name);
    for (const std::string& fmt : o.formats) {
      MoeConfig cfg;
      require_input(parse_format(fmt, &cfg.format), "moe bench: unknown format '", fmt, "'");
      cfg.act_quant = cfg.format == WeightFormat::Fp8Block ? ActQuant::Fp8_1x128 : ActQuant::None;
      cfg.router.top_k = static_cast<int>(s.top_k);
      if (s.deepseek_routing) {
        cfg.router.kind = RouterKind::SigmoidGrouped;
        cfg.router.n_group = 8;
        cfg.router.topk_group = 4;
        cfg.router.routed_scaling_factor = 2.5f;
      }
      layout::MoeLayerSpec spec{s.H, s.I, s.E, static_cast<int>(s.top_k), s.shared_inter, cfg.format};
      const layout::MoeLayerPlan plan = layout::plan_moe_layer(spec, layout::Parallelism{});
      size_t free_bytes = 0, total_bytes = 0;
      MOE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      std::vector<DeviceMoeLayer> layers;
      layers.push_back(DeviceMoeLayer::random(cfg, plan, 1, !s.deepseek_routing));
      const size_t per_layer =
          layers[0].bytes_per_expert() * static_cast<size_t>(s.E) + layers[0].shared_bytes();
      int copies = o.copies;
      while (copies > 1 && per_layer * static_cast<size_t>(copies) > free_bytes * 8 / 10) --copies;
      if (copies < o.copies)
        std::fprintf(stderr, "moe bench: %s %s: only %d layer copies fit in GPU memory\n", s.name,
                     fmt.c_str(), copies);
      std::fprintf(stderr, "moe bench: %s %s: %d layer copies of %.1f MB...\n", s.name, fmt.c_str(), copies,
                   per_layer / 1e6);
      for (int c = 1; c < copies; ++c)
        layers.push_back(DeviceMoeLayer::random(cfg, plan, 1 + 100 * c, !s.deepseek_routing));
      MoeWorkspace ws(layers[0], max_m);
      DeviceBuffer x(static_cast<size_t>(max_m) * s.H * 2), logits(static_cast<size_t>(max_m) * s.E * 4);
      DeviceBuffer out(static_cast<size_t>(max_m) * s.H * 2);
      fill_random(x.get(), x.bytes(), RandomKind::Bf16, 7);
      fill_random(logits.get(), logits.bytes(), RandomKind::Fp32Logit, 8);
      MOE_CUDA_CHECK(cudaDeviceSynchronize());

      // One row: the call at M on path_name, timed in a CUDA graph, beside its floor.
      const auto measure = [&](const std::string& path_name, int M) {
        const GemmPath path = parse_path(path_name);
        // One plain call: warms up, sets kernel attributes, and tells how many experts this M touches.
        fused_moe(layers[0], ws, x.as<uint16_t>(), logits.as<float>(), M, out.as<uint16_t>(), stream, path);
        MOE_CUDA_CHECK(cudaStreamSynchronize(stream));
        std::vector<int> ids(static_cast<size_t>(M) * s.top_k);
        MOE_CUDA_CHECK(cudaMemcpy(ids.data(), ws.topk_ids.get(), ids.size() * 4, cudaMemcpyDeviceToHost));
        const int unique = static_cast<int>(std::set<int>(ids.begin(), ids.end()).size());

        const int calls = M <= 256 ? 2 * copies : copies;
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        MOE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < calls; ++i)
          fused_moe(layers[static_cast<size_t>(i % copies)], ws, x.as<uint16_t>(), logits.as<float>(), M,
                    out.as<uint16_t>(), stream, path);
        MOE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
        MOE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        MOE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
        std::vector<double> per_call =
            time_each_ms(stream, M <= 256 ? 30 : 5, [&] { MOE_CUDA_CHECK(cudaGraphLaunch(exec, stream)); });
        for (double& t : per_call) t *= 1e3 / calls;
        GroupedGemmTimeline timeline;
        KernelTimelineSummary op_timeline;  // each call's launches, prologue to combine
        if (kernel_timeline_buffer()) {
          kernel_timeline_reset();
          MOE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
          MOE_CUDA_CHECK(cudaStreamSynchronize(stream));
          const std::vector<KernelTimelineRecord> records = kernel_timeline_records();
          timeline = summarize_grouped_gemm_timeline(records);
          op_timeline = summarize_kernel_timeline(records);
        }
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);

        Row row;
        row.shape = s.name;
        row.format = fmt;
        row.path = path_name;
        row.M = M;
        row.us = median(per_call);
        row.unique_experts = unique;
        row.bytes = static_cast<double>(unique) * layers[0].bytes_per_expert() + layers[0].shared_bytes();
        const double flops = 2.0 * M * s.top_k * 3.0 * s.H * plan.inter.padded +
                             (s.shared_inter ? 2.0 * M * 3.0 * s.H * plan.shared_inter->padded : 0.0);
        const double peak = cfg.format == WeightFormat::Fp8Block ? o.peak_tflops_fp8 : o.peak_tflops_bf16;
        row.floor_us = std::max(row.bytes / read_bw * 1e6, peak > 0 ? flops / (peak * 1e12) * 1e6 : 0.0);
        row.gbps = row.bytes / (row.us * 1e-6) / 1e9;
        row.tflops = flops / (row.us * 1e-6) / 1e12;
        row.timeline = timeline;
        row.op_timeline = op_timeline;
        return row;
      };
      for (const std::string& path_name : o.paths)
        for (int M : o.Ms)
          for (const auto& [setting, round] : settings_of(o)) {
            if (setting) {
              require(apply_env_ab_setting(*setting), "moe bench: cannot set ", o.env_ab.vars);
              reread_env_settings();
            }
            Row row = measure(path_name, M);
            if (setting) row.setting = o.env_ab.vars + "=" + setting->label + " r" + std::to_string(round);
            std::printf("%-22s %-9s %5d %10.2f %10.2f %7.2f %8.0f %8.1f %7d %s%s%s\n", s.name, fmt.c_str(), M,
                        row.us, row.floor_us, row.us / row.floor_us, row.gbps, row.tflops, row.unique_experts,
                        path_name.c_str(), row.setting.empty() ? "" : " ", row.setting.c_str());
            if (kernel_timeline_buffer()) {
              write_grouped_gemm_timeline(stdout, row.timeline);
              write_kernel_timeline_report(stdout, row.op_timeline);
            }
            std::fflush(stdout);
            rows.push_back(row);
          }
    }
  }
  MOE_CUDA_CHECK(cudaStreamDestroy(stream));
  if (!o.json_path.empty()) {
    std::ofstream js(o.json_path);
    js << "{\"device\": \"" << prop.name << "\", \"read_bandwidth_gbps\": " << read_bw / 1e9
       << ", \"rows\": [\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      js << "  {\"shape\": \"" << r.shape << "\", \"format\": \"" << r.format << "\", \"path\": \"" << r.path
         << "\", \"M\": " << r.M << ", \"time_us\": " << r.us << ", \"floor_us\": " << r.floor_us
         << ", \"ratio\": " << r.us / r.floor_us << ", \"gbps\": " << r.gbps << ", \"tflops\": " << r.tflops
         << ", \"unique_experts\": " << r.unique_experts << ", \"bytes\": " << r.bytes;
      if (!r.setting.empty()) js << ", \"setting\": \"" << r.setting << "\"";
      js << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    js << "]}\n";
  }
  if (std::getenv("MOE_FUSED_TIMELINE")) fused_timeline_report();
  swap_ab_timeline_report();
  grouped_gemm_cycles_report();
  grouped_gemm_swap_cycles_report();
  return 0;
}

}  // namespace moe::cuda
