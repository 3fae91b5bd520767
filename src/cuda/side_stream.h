#pragma once
// A second stream for work that may run beside the caller's stream inside one call (the shared expert's
// stages beside the routed experts'): fork() makes it wait for everything the caller's stream has queued,
// join() makes the caller's stream wait for everything queued on it since. Both are stream-ordered event
// waits, so a call stays free of host synchronisation and can be captured into a CUDA graph (the fork and
// join become graph edges). create() makes the stream and events (on the device current then): call it
// outside any graph capture, where creating a stream may not be allowed.
#include <cuda_runtime.h>

#include <utility>

#include "cuda/cuda_check.h"

namespace moe::cuda {

class SideStream {
 public:
  SideStream() = default;
  ~SideStream() { release(); }
  SideStream(SideStream&& o) noexcept
      : stream_(std::exchange(o.stream_, nullptr)),
        forked_(std::exchange(o.forked_, nullptr)),
        joined_(std::exchange(o.joined_, nullptr)) {}
  SideStream& operator=(SideStream&& o) noexcept {
    if (this != &o) {
      release();
      stream_ = std::exchange(o.stream_, nullptr);
      forked_ = std::exchange(o.forked_, nullptr);
      joined_ = std::exchange(o.joined_, nullptr);
    }
    return *this;
  }
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;

  void create() {
    if (stream_) return;
    MOE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    MOE_CUDA_CHECK(cudaEventCreateWithFlags(&forked_, cudaEventDisableTiming));
    MOE_CUDA_CHECK(cudaEventCreateWithFlags(&joined_, cudaEventDisableTiming));
  }
  bool created() const { return stream_ != nullptr; }

  // The side stream, after it has been made to wait for `main`'s queued work.
  cudaStream_t fork(cudaStream_t main) {
    create();
    MOE_CUDA_CHECK(cudaEventRecord(forked_, main));
    MOE_CUDA_CHECK(cudaStreamWaitEvent(stream_, forked_, 0));
    return stream_;
  }
  // `main` waits for the side stream's queued work.
  void join(cudaStream_t main) {
    MOE_CUDA_CHECK(cudaEventRecord(joined_, stream_));
    MOE_CUDA_CHECK(cudaStreamWaitEvent(main, joined_, 0));
  }

 private:
  void release() {
    if (joined_) cudaEventDestroy(joined_);
    if (forked_) cudaEventDestroy(forked_);
    if (stream_) cudaStreamDestroy(stream_);
    stream_ = nullptr;
    forked_ = joined_ = nullptr;
  }
  cudaStream_t stream_ = nullptr;
  cudaEvent_t forked_ = nullptr, joined_ = nullptr;
};

}  // namespace moe::cuda
