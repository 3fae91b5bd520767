#include "dist/launch.h"

#include <exception>
#include <thread>

namespace moe::dist {

void run_ranks(const std::vector<std::unique_ptr<Communicator>>& comms,
               const std::function<void(Communicator&)>& fn) {
  std::vector<std::exception_ptr> errors(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r)
    threads.emplace_back([&, r] {
      try {
        comms[r]->bind_thread();
        fn(*comms[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace moe::dist
