#include "dist/rank_workers.h"

namespace moe::dist {

RankWorkers::RankWorkers(const std::vector<std::unique_ptr<Communicator>>& comms)
    : comms_(comms), errors_(comms.size()) {
  for (size_t r = 0; r < comms_.size(); ++r) threads_.emplace_back([this, r] { loop(r); });
}

RankWorkers::~RankWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void RankWorkers::loop(size_t rank) {
  uint64_t seen = 0;
  bool bound = false;
  for (;;) {
    const std::function<void(Communicator&)>* job = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr error;
    try {
      if (!bound) comms_[rank]->bind_thread(), bound = true;
      (*job)(*comms_[rank]);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      errors_[rank] = error;
      if (--pending_ == 0) cv_.notify_all();
    }
  }
}

void RankWorkers::run(const std::function<void(Communicator&)>& fn) {
  std::lock_guard<std::mutex> one_job(run_mu_);
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &fn;
  pending_ = threads_.size();
  ++generation_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  for (const std::exception_ptr& e : errors_)
    if (e) std::rethrow_exception(e);
}

}  // namespace moe::dist
