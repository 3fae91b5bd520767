#pragma once
// Asking L2 ahead of time for weights a later kernel will read: DRAM sits idle while a MoE call's one-block
// prologue routes the tokens (no weight is known before it but the shared expert's), so a small kernel on a
// side stream, launched before the prologue, requests the first part of each of the shared expert's gate/up
// rows into L2; its stage 1 then finds them there and the DRAM's idle microseconds did part of the call's
// stream. It writes nothing, and nothing waits for it but the call's end (MOE_SHARED_WARM_KB).
#include <cuda_runtime.h>

#include <cstddef>

namespace moe::cuda {

// The first `row_bytes` of each of `rows` rows `pitch` bytes apart (16-byte aligned; a row's last partial
// 16 bytes are not requested).
struct L2WarmRows {
  const void* base = nullptr;
  int rows = 0;
  size_t pitch = 0, row_bytes = 0;
};

// How the requests go out: bulk (cp.async.bulk.prefetch.L2, one request per 16 KB piece of a row, a lane
// each) or lines (prefetch.global.L2::evict_normal, one request per 128-byte line).
enum class L2WarmKind { Bulk = 1, Lines = 2 };

// Requests `rows` into L2 from `blocks` blocks on stream s (a plain launch: it waits for nothing and nothing
// reads what it does).
void l2_warm(const L2WarmRows& rows, L2WarmKind kind, int blocks, cudaStream_t s);
// Launches of l2_warm so far in this process (tests check that a switch took effect).
long long l2_warm_launches();

}  // namespace moe::cuda
