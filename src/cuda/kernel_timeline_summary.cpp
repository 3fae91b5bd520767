// summarize_kernel_timeline (kernel_timeline.h): the records grouped into launches, the launches into decode
// layers, and per position of the most common layer shape the medians over those layers; and the report's
// text from them (write_kernel_timeline_report). Plain C++, tested on the CPU
// (tests/cuda/kernel_timeline_test.cpp).
#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "cuda/kernel_timeline.h"

namespace moe::cuda {
namespace {

const char* const kKindNames[kTlKinds] = {"fp8 GEMV", "router GEMV", "attention", "prologue", "stage 1",
                                          "stage 2",  "combine",     "align",     "GEMM 1",   "GEMM 2"};

// One launch as its blocks recorded it.
struct Launch {
  int kind = 0;
  unsigned blocks = 0, seen = 0;
  unsigned long long start = ~0ull, first_wait = ~0ull, last_wait = 0, end = 0;
  unsigned long long last_mark[kKernelTimelineMarks] = {};  // the last block's arrival at each mark
};

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<int> kinds_of(const std::vector<Launch>& layer) {
  std::vector<int> k;
  for (const Launch& x : layer) k.push_back(x.kind);
  return k;
}

}  // namespace

const char* kernel_timeline_kind_name(int kind) {
  return kind >= 0 && kind < kTlKinds ? kKindNames[kind] : "?";
}

KernelTimelineSummary summarize_kernel_timeline(const std::vector<KernelTimelineRecord>& records) {
  KernelTimelineSummary out;
  out.records = records.size();
  std::map<std::pair<int, unsigned>, Launch> by_launch;
  for (const KernelTimelineRecord& r : records) {
    Launch& l = by_launch[{r.kind, r.launch}];
    l.kind = r.kind;
    l.blocks = r.blocks;
    ++l.seen;
    l.start = std::min(l.start, r.start);
    l.end = std::max(l.end, r.end);
    for (int i = 0; i < kKernelTimelineMarks; ++i) l.last_mark[i] = std::max(l.last_mark[i], r.mark[i]);
    if (r.waited) {
      l.first_wait = std::min(l.first_wait, r.waited);
      l.last_wait = std::max(l.last_wait, r.waited);
    }
  }
  std::vector<Launch> launches;
  for (const auto& [key, l] : by_launch)
    if (l.seen == l.blocks) launches.push_back(l);  // launches cut off by the record cap are left out
  std::sort(launches.begin(), launches.end(),
            [](const Launch& x, const Launch& y) { return x.start < y.start; });
  out.launches = launches.size();
  // A decode layer: a q/k/v GEMV followed by attention, or attention alone where the projections are not
  // recorded (batches past the GEMV's, e.g. 64: cuBLAS), or the MoE call's prologue where no attention is
  // recorded at all (the op's benchmark), through the MoE call's combine, or through its stage 2 where that
  // does the combine (a one-token call, swap_ab_combine_max_tokens) and the next layer follows.
  // Records of the MoE op alone (moe bench on the op: no attention recorded) make a "layer" of each call,
  // from its routing prologue through its combine.
  const auto is = [&](size_t i, int kind) { return i < launches.size() && launches[i].kind == kind; };
  const bool op_only =
      std::none_of(launches.begin(), launches.end(), [](const Launch& l) { return l.kind == kTlAttention; });
  const auto layer_starts = [&](size_t i) {
    return (is(i, kTlFp8Gemv) && is(i + 1, kTlAttention)) ||
           (is(i, kTlAttention) && !(i > 0 && is(i - 1, kTlFp8Gemv))) || (op_only && is(i, kTlPrologue));
  };
  std::vector<std::vector<Launch>> layers;
  for (size_t i = 0; i + 1 < launches.size(); ++i) {
    if (!layer_starts(i)) continue;
    std::vector<Launch> layer;
    bool complete = false;
    for (size_t j = i; j < launches.size() && layer.size() < 16; ++j) {
      layer.push_back(launches[j]);
      complete = launches[j].kind == kTlCombine || (launches[j].kind == kTlStage2 && layer_starts(j + 1));
      if (complete) break;
    }
    if (complete) layers.push_back(layer);
  }
  out.layers = layers.size();
  if (layers.empty()) return out;
  std::map<std::vector<int>, int> shapes;
  for (const auto& l : layers) ++shapes[kinds_of(l)];
  const auto most = std::max_element(shapes.begin(), shapes.end(),
                                     [](const auto& x, const auto& y) { return x.second < y.second; });
  const std::vector<int> shape = most->first;
  out.shape_layers = most->second;
  std::vector<double> layer_span;
  for (size_t p = 0; p < shape.size(); ++p) {
    std::vector<double> s, w0, w1, e, span, marks[kKernelTimelineMarks];
    unsigned blocks = 0;
    for (const auto& l : layers) {
      if (kinds_of(l) != shape) continue;
      const double t0 = static_cast<double>(l[0].start);
      const Launch& x = l[p];
      blocks = x.blocks;
      s.push_back((static_cast<double>(x.start) - t0) / 1e3);
      if (x.last_wait) {
        w0.push_back((static_cast<double>(x.first_wait) - t0) / 1e3);
        w1.push_back((static_cast<double>(x.last_wait) - t0) / 1e3);
      }
      e.push_back((static_cast<double>(x.end) - t0) / 1e3);
      for (int i = 0; i < kKernelTimelineMarks; ++i)
        if (x.last_mark[i]) marks[i].push_back((static_cast<double>(x.last_mark[i]) - t0) / 1e3);
      span.push_back((static_cast<double>(x.end) - static_cast<double>(x.start)) / 1e3);
      if (p + 1 == shape.size()) layer_span.push_back((static_cast<double>(x.end) - t0) / 1e3);
    }
    KernelTimelineRow row{shape[p], blocks, median(s), median(w0), median(w1), median(e), median(span), {}};
    for (int i = 0; i < kKernelTimelineMarks; ++i) row.marks[i] = marks[i].empty() ? -1.0 : median(marks[i]);
    out.rows.push_back(row);
  }
  out.layer_us = median(layer_span);
  return out;
}

void write_kernel_timeline_report(std::FILE* out, const KernelTimelineSummary& sum) {
  std::fprintf(out, "kernel timeline: %zu block records, %zu whole launches, %zu decode layers\n",
               sum.records, sum.launches, sum.layers);
  if (sum.rows.empty()) return;
  std::fprintf(out,
               "  us after the layer's first block start, median over the %d layers of the common shape:\n",
               sum.shape_layers);
  std::fprintf(out, "  %-12s %7s %9s %9s %9s %8s %8s\n", "launch", "blocks", "start", "1st wait", "last wait",
               "end", "span");
  for (const KernelTimelineRow& r : sum.rows)
    std::fprintf(out, "  %-12s %7u %9.2f %9.2f %9.2f %8.2f %8.2f\n", kernel_timeline_kind_name(r.kind),
                 r.blocks, r.start, r.first_wait, r.last_wait, r.end, r.span);
  std::fprintf(out, "  layer (first start to the combine's end, or stage 2's): %.2f us\n", sum.layer_us);
  // The phases of the launches that mark them (the kernels' mark() calls say what each mark is): when the
  // last block reached each, and in brackets the time since the previous mark (the first: since the last
  // wait; the end: since the last mark).
  for (const KernelTimelineRow& r : sum.rows) {
    if (r.marks[0] < 0) continue;
    std::fprintf(out, "  %-12s marks (last block to reach each):", kernel_timeline_kind_name(r.kind));
    double prev = r.last_wait;
    for (double m : r.marks) {
      if (m < 0) continue;
      std::fprintf(out, " %7.2f (+%.2f)", m, m - prev);
      prev = m;
    }
    std::fprintf(out, ", end (+%.2f)\n", r.end - prev);
  }
}

}  // namespace moe::cuda
