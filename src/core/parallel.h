#pragma once
// parallel_for: static partition of [0, n) over the machine's cores. Each index is handled by exactly one
// thread and results are written to per-index slots, so outcomes do not depend on the thread count.
#include <cstdint>
#include <functional>

namespace moe {

int worker_count();
void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& body);

}  // namespace moe
