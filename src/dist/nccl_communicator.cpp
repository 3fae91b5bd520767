#include "dist/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace moe::dist {
namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(NcclId), "NcclId must hold an ncclUniqueId");

void check_nccl(ncclResult_t r, const char* what) {
  require(r == ncclSuccess, "NCCL ", what, ": ", ncclGetErrorString(r));
}

void check_cuda(cudaError_t r, const char* what) {
  require(r == cudaSuccess, "CUDA ", what, ": ", cudaGetErrorString(r));
}

// NVLink multicast stays off (overriding any environment setting): NCCL reads the variable at initialisation.
void disable_nvls() {
  setenv("NCCL_NVLS_ENABLE", "0", 1);
}

ncclDataType_t nccl_type(ReduceType t) {
  return t == ReduceType::F32 ? ncclFloat32 : ncclBfloat16;
}

class NcclCommunicator : public Communicator {
 public:
  // Takes ownership of `comm`, which drives `device`.
  NcclCommunicator(ncclComm_t comm, int device) : comm_(comm), device_(device) {
    check_nccl(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
    check_nccl(ncclCommCount(comm_, &size_), "ncclCommCount");
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check_cuda(cudaMalloc(&token_, sizeof(float)), "cudaMalloc (barrier token)");
    check_cuda(cudaMemset(token_, 0, sizeof(float)), "cudaMemset (barrier token)");
  }
  ~NcclCommunicator() override {
    cudaSetDevice(device_);
    ncclCommDestroy(comm_);
    cudaFree(token_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return str("nccl rank ", rank_, "/", size_, " on cuda:", device_); }
  void bind_thread() override { check_cuda(cudaSetDevice(device_), "cudaSetDevice"); }
  bool graph_capturable() const override { return true; }

  void all_reduce_sum(void* data, int64_t count, ReduceType type, void* stream) override {
    check_nccl(ncclAllReduce(data, data, static_cast<size_t>(count), nccl_type(type), ncclSum, comm_,
                             static_cast<cudaStream_t>(stream)),
               "ncclAllReduce");
  }

  // A one-element all-reduce on the communicator's own stream, waited for: every rank has reached it.
  void barrier() override {
    check_nccl(ncclAllReduce(token_, token_, 1, ncclFloat32, ncclSum, comm_, stream_),
               "ncclAllReduce (barrier)");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (barrier)");
  }

 private:
  ncclComm_t comm_;
  int device_, rank_ = 0, size_ = 0;
  cudaStream_t stream_ = nullptr;
  float* token_ = nullptr;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_nccl_communicators(const std::vector<int>& devices) {
  require_input(!devices.empty(), "NCCL: no devices");
  disable_nvls();
  std::vector<ncclComm_t> comms(devices.size());
  check_nccl(ncclCommInitAll(comms.data(), static_cast<int>(devices.size()), devices.data()),
             "ncclCommInitAll");
  std::vector<std::unique_ptr<Communicator>> out;
  for (size_t r = 0; r < devices.size(); ++r)
    out.push_back(std::make_unique<NcclCommunicator>(comms[r], devices[r]));
  return out;
}

NcclId nccl_unique_id() {
  disable_nvls();
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  NcclId out;
  std::memcpy(out.data(), &id, sizeof id);
  return out;
}

std::unique_ptr<Communicator> make_nccl_communicator(int rank, int size, int device, const NcclId& id) {
  require_input(size >= 1 && rank >= 0 && rank < size, "NCCL: rank ", rank, " outside size ", size);
  disable_nvls();
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  ncclUniqueId nid;
  std::memcpy(&nid, id.data(), sizeof nid);
  ncclComm_t comm;
  check_nccl(ncclCommInitRank(&comm, size, nid, rank), "ncclCommInitRank");
  return std::make_unique<NcclCommunicator>(comm, device);
}

}  // namespace moe::dist
