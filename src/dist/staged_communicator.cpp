#include "dist/staged_communicator.h"

#include <cuda_runtime.h>

#include "core/error.h"
#include "dist/host_communicator.h"

namespace moe::dist {
namespace {

void check_cuda(cudaError_t r, const char* what) {
  require(r == cudaSuccess, "CUDA ", what, ": ", cudaGetErrorString(r));
}

size_t element_bytes(ReduceType t) {
  return t == ReduceType::F32 ? 4 : 2;
}

class StagedCommunicator : public Communicator {
 public:
  StagedCommunicator(std::unique_ptr<Communicator> host, int device)
      : host_(std::move(host)), device_(device) {}
  ~StagedCommunicator() override {
    if (staging_) cudaFreeHost(staging_);
  }

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string name() const override {
    return str("host-staged rank ", rank(), "/", size(), " on cuda:", device_);
  }
  void bind_thread() override { check_cuda(cudaSetDevice(device_), "cudaSetDevice"); }
  void barrier() override { host_->barrier(); }

  void all_reduce_sum(void* data, int64_t count, ReduceType type, void* stream) override {
    const size_t bytes = static_cast<size_t>(count) * element_bytes(type);
    if (bytes > staging_bytes_) {
      if (staging_) check_cuda(cudaFreeHost(staging_), "cudaFreeHost");
      staging_ = nullptr;
      check_cuda(cudaMallocHost(&staging_, bytes), "cudaMallocHost (all-reduce staging)");
      staging_bytes_ = bytes;
    }
    const auto st = static_cast<cudaStream_t>(stream);
    check_cuda(cudaMemcpyAsync(staging_, data, bytes, cudaMemcpyDeviceToHost, st), "cudaMemcpyAsync (D2H)");
    check_cuda(cudaStreamSynchronize(st), "cudaStreamSynchronize (all-reduce)");
    host_->all_reduce_sum(staging_, count, type, nullptr);
    check_cuda(cudaMemcpyAsync(data, staging_, bytes, cudaMemcpyHostToDevice, st), "cudaMemcpyAsync (H2D)");
    // The staging buffer is reused by the next call: the copy back must have read it by then.
    check_cuda(cudaStreamSynchronize(st), "cudaStreamSynchronize (all-reduce)");
  }

 private:
  std::unique_ptr<Communicator> host_;
  int device_;
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_staged_communicators(const std::vector<int>& devices) {
  require_input(!devices.empty(), "host-staged communicator: no devices");
  std::vector<std::unique_ptr<Communicator>> host = make_host_communicators(static_cast<int>(devices.size()));
  std::vector<std::unique_ptr<Communicator>> out;
  for (size_t r = 0; r < devices.size(); ++r)
    out.push_back(std::make_unique<StagedCommunicator>(std::move(host[r]), devices[r]));
  return out;
}

}  // namespace moe::dist
