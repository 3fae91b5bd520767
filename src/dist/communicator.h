#pragma once
// The collective operations tensor parallelism needs, behind one small interface (docs/tensor-parallel.md):
// every rank of a group calls the same operations in the same order. Implementations: HostCommunicator (ranks
// are threads of this process, host memory; tests and CPU runs) and NcclCommunicator (one GPU per rank,
// device memory, CUDA streams; CUDA builds with NCCL only). The header has no CUDA types: a stream is passed
// as void*.
#include <cstdint>
#include <string>

namespace moe::dist {

enum class ReduceType : uint8_t { F32, BF16 };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;
  // Makes the calling thread ready to work for this rank (NCCL: cudaSetDevice of the rank's GPU; host:
  // nothing).
  virtual void bind_thread() {}
  // data[0, count) <- the sum over every rank's data[0, count), in place. NCCL: device memory, enqueued on
  // `stream` (a cudaStream_t; null = the legacy default stream) and capturable in a CUDA graph. Host: host
  // memory, `stream` ignored, returns when the sum is in place; the sum is taken in rank order in fp32 (bf16
  // rounded once at the end), so it equals the simulated mode's rank-order sum bit for bit.
  virtual void all_reduce_sum(void* data, int64_t count, ReduceType type, void* stream) = 0;
  // Returns once every rank has called it (NCCL: after this rank's pending work on its internal stream is
  // done).
  virtual void barrier() = 0;
  // Whether all_reduce_sum may be recorded into a CUDA graph (NCCL: yes; anything that waits on the host
  // inside the call: no, and a CUDA rank then runs its decode steps eagerly).
  virtual bool graph_capturable() const { return false; }
};

}  // namespace moe::dist
