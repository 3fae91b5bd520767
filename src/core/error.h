#pragma once
// Errors carry context (which tensor, which key, what was expected) as a message; every layer throws
// moe::Error and the CLI / server turns it into an exit code or an HTTP status.
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace moe {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// A bad input file or request: the CLI exits 2 on these (see FORMATS.md section 5).
class InputError : public Error {
 public:
  explicit InputError(const std::string& what) : Error(what) {}
};

// str(a, b, c): concatenates anything streamable; g++ 12 has no <format>.
template <typename... Args>
std::string str(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(str(std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void fail_input(Args&&... args) {
  throw InputError(str(std::forward<Args>(args)...));
}

template <typename... Args>
void require(bool ok, Args&&... args) {
  if (!ok) fail(std::forward<Args>(args)...);
}

template <typename... Args>
void require_input(bool ok, Args&&... args) {
  if (!ok) fail_input(std::forward<Args>(args)...);
}

}  // namespace moe
