#include "dist/host_communicator.h"

#include <condition_variable>
#include <mutex>

#include "core/codecs.h"
#include "core/error.h"

namespace moe::dist {
namespace {

// What the ranks share: a reusable barrier (generation counter) and the buffers posted for the current call.
struct Rendezvous {
  explicit Rendezvous(int n) : size(n), posted(static_cast<size_t>(n)) {}

  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mu);
    const uint64_t gen = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return;
    }
    cv.wait(lock, [&] { return generation != gen; });
  }

  const int size;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  struct Posted {
    const void* data = nullptr;
    int64_t count = 0;
    ReduceType type = ReduceType::F32;
  };
  std::vector<Posted> posted;
};

float load(const void* p, int64_t i, ReduceType t) {
  return t == ReduceType::F32 ? static_cast<const float*>(p)[i]
                              : bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
}

class HostCommunicator : public Communicator {
 public:
  HostCommunicator(std::shared_ptr<Rendezvous> rv, int rank) : rv_(std::move(rv)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return rv_->size; }
  std::string name() const override { return str("host rank ", rank_, "/", rv_->size); }
  void barrier() override { rv_->arrive_and_wait(); }

  void all_reduce_sum(void* data, int64_t count, ReduceType type, void*) override {
    rv_->posted[static_cast<size_t>(rank_)] = {data, count, type};
    rv_->arrive_and_wait();  // every buffer posted
    for (int r = 0; r < rv_->size; ++r) {
      const auto& p = rv_->posted[static_cast<size_t>(r)];
      require(p.count == count && p.type == type, "all_reduce_sum: rank ", r, " posted ", p.count,
              " elements, rank ", rank_, " ", count,
              " (or another type): every rank must call the same collective");
    }
    // Every rank reads every buffer before anyone overwrites its own.
    sum_.assign(static_cast<size_t>(count), 0.0f);
    for (int r = 0; r < rv_->size; ++r) {
      const void* src = rv_->posted[static_cast<size_t>(r)].data;
      for (int64_t i = 0; i < count; ++i)
        sum_[static_cast<size_t>(i)] =
            r == 0 ? load(src, i, type) : sum_[static_cast<size_t>(i)] + load(src, i, type);
    }
    rv_->arrive_and_wait();  // all reads done
    for (int64_t i = 0; i < count; ++i) {
      if (type == ReduceType::F32)
        static_cast<float*>(data)[i] = sum_[static_cast<size_t>(i)];
      else
        static_cast<uint16_t*>(data)[i] = f32_to_bf16(sum_[static_cast<size_t>(i)]);
    }
    // The next collective's first rendezvous keeps its reads behind these writes.
  }

 private:
  std::shared_ptr<Rendezvous> rv_;
  int rank_;
  std::vector<float> sum_;
};

}  // namespace

std::vector<std::unique_ptr<Communicator>> make_host_communicators(int size) {
  require_input(size >= 1, "host communicator: size ", size, " must be >= 1");
  auto rv = std::make_shared<Rendezvous>(size);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < size; ++r) out.push_back(std::make_unique<HostCommunicator>(rv, r));
  return out;
}

}  // namespace moe::dist
