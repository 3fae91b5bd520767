// summarize_grouped_gemm_timeline (grouped_gemm_timeline.h): the records grouped into launches by kind and
// launch index, each stage-2 launch paired with the stage-1 launch that started last before it, per pair the
// blocks' start and end spreads, and the medians over the pairs (never of an empty list).
#include "cuda/grouped_gemm_timeline.h"

#include <algorithm>
#include <map>
#include <utility>

#include "cuda/event_timing.h"  // median: the benchmarks' one

namespace moe::cuda {
namespace {

struct Blocks {
  unsigned blocks = 0;
  std::vector<unsigned long long> starts, ends;
  unsigned long long first_start() const { return *std::min_element(starts.begin(), starts.end()); }
};

BlockSpread spread(std::vector<unsigned long long> t, unsigned long long t0) {
  std::sort(t.begin(), t.end());
  const auto us = [&](unsigned long long x) {
    return (static_cast<double>(x) - static_cast<double>(t0)) / 1e3;
  };
  return {us(t.front()), us(t[t.size() / 2]), us(t.back())};
}

BlockSpread median_spread(const std::vector<GroupedGemmCall>& calls, BlockSpread GroupedGemmCall::*field) {
  std::vector<double> f, m, l;
  for (const GroupedGemmCall& c : calls) {
    f.push_back((c.*field).first);
    m.push_back((c.*field).median);
    l.push_back((c.*field).last);
  }
  return {median(f), median(m), median(l)};
}

}  // namespace

GroupedGemmTimeline summarize_grouped_gemm_timeline(const std::vector<KernelTimelineRecord>& records) {
  std::map<std::pair<int, unsigned>, Blocks> launches;
  for (const KernelTimelineRecord& r : records) {
    if (r.kind != kTlGemm1 && r.kind != kTlGemm2) continue;
    Blocks& b = launches[{r.kind, r.launch}];
    b.blocks = r.blocks;
    b.starts.push_back(r.start);
    b.ends.push_back(r.end);
  }
  // Only launches with every block recorded (the record cap can cut the last ones short).
  std::vector<const Blocks*> stage1, stage2;
  for (const auto& [key, b] : launches)
    if (b.starts.size() == b.blocks) (key.first == kTlGemm1 ? stage1 : stage2).push_back(&b);
  const auto by_start = [](const Blocks* a, const Blocks* b) { return a->first_start() < b->first_start(); };
  std::sort(stage1.begin(), stage1.end(), by_start);
  std::vector<GroupedGemmCall> calls;
  for (const Blocks* s2 : stage2) {
    const Blocks* s1 = nullptr;
    for (const Blocks* c : stage1)
      if (c->first_start() <= s2->first_start()) s1 = c;
    if (!s1) continue;
    const unsigned long long t0 = s1->first_start();
    GroupedGemmCall call;
    call.blocks1 = s1->blocks;
    call.blocks2 = s2->blocks;
    call.start1 = spread(s1->starts, t0);
    call.end1 = spread(s1->ends, t0);
    call.start2 = spread(s2->starts, t0);
    call.end2 = spread(s2->ends, t0);
    const double span = call.end2.last - call.start2.first;
    double idle = 0;
    for (unsigned long long e : s2->ends) idle += call.end2.last - (static_cast<double>(e) - t0) / 1e3;
    call.idle_at_end2 = span > 0 ? idle / (span * s2->blocks) : 0.0;
    calls.push_back(call);
  }
  GroupedGemmTimeline out;
  out.calls = static_cast<int>(calls.size());
  if (calls.empty()) return out;
  std::vector<double> b1, b2, idle;
  for (const GroupedGemmCall& c : calls) {
    b1.push_back(c.blocks1);
    b2.push_back(c.blocks2);
    idle.push_back(c.idle_at_end2);
  }
  out.median.blocks1 = static_cast<unsigned>(median(b1));
  out.median.blocks2 = static_cast<unsigned>(median(b2));
  out.median.start1 = median_spread(calls, &GroupedGemmCall::start1);
  out.median.end1 = median_spread(calls, &GroupedGemmCall::end1);
  out.median.start2 = median_spread(calls, &GroupedGemmCall::start2);
  out.median.end2 = median_spread(calls, &GroupedGemmCall::end2);
  out.median.idle_at_end2 = median(idle);
  return out;
}

void write_grouped_gemm_timeline(std::FILE* out, const GroupedGemmTimeline& t) {
  if (t.calls == 0) {
    std::fprintf(out, "  grouped GEMM timeline: no stage-1/stage-2 pair recorded\n");
    return;
  }
  const GroupedGemmCall& c = t.median;
  std::fprintf(out,
               "  grouped GEMM timeline (medians over %d calls, us after stage 1's first block start; "
               "first / median / last block):\n",
               t.calls);
  std::fprintf(out, "    GEMM 1 %4u blocks  start %7.2f %7.2f %7.2f  end %7.2f %7.2f %7.2f\n", c.blocks1,
               c.start1.first, c.start1.median, c.start1.last, c.end1.first, c.end1.median, c.end1.last);
  std::fprintf(
      out, "    GEMM 2 %4u blocks  start %7.2f %7.2f %7.2f  end %7.2f %7.2f %7.2f  idle at its end %.1f %%\n",
      c.blocks2, c.start2.first, c.start2.median, c.start2.last, c.end2.first, c.end2.median, c.end2.last,
      100.0 * c.idle_at_end2);
}

}  // namespace moe::cuda
