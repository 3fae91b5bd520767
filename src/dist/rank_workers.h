#pragma once
// Persistent rank threads: one per communicator, bound to it once (its GPU for NCCL), each waiting for the
// next job. A tensor-parallel step hands the same function to every rank and waits for all; unlike
// run_ranks, no threads are started per step (a decode step at TP 8 is a few milliseconds; eight thread
// starts and joins per step would be a visible part of it).
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dist/communicator.h"

namespace moe::dist {

class RankWorkers {
 public:
  // The communicators must outlive this object.
  explicit RankWorkers(const std::vector<std::unique_ptr<Communicator>>& comms);
  ~RankWorkers();
  RankWorkers(const RankWorkers&) = delete;
  RankWorkers& operator=(const RankWorkers&) = delete;

  // Runs fn(comm) on every rank's thread and waits for all of them; then rethrows the exception of the lowest
  // rank that threw, if any. One job at a time (calls from several threads are serialised).
  void run(const std::function<void(Communicator&)>& fn);

 private:
  void loop(size_t rank);

  const std::vector<std::unique_ptr<Communicator>>& comms_;
  std::mutex run_mu_;  // one job at a time
  std::mutex mu_;
  std::condition_variable cv_;
  const std::function<void(Communicator&)>* job_ = nullptr;
  uint64_t generation_ = 0;  // bumped per job
  size_t pending_ = 0;       // ranks still running the current job
  bool stop_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;
};

}  // namespace moe::dist
