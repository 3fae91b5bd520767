#pragma once
// Errors raised while rendering. All are moe::InputError: a template that cannot render is a bad request.
#include <string>

#include "core/error.h"

namespace moe::jinja {

// An error whose message already names the template line and column (set by the innermost statement).
class TemplateError : public InputError {
 public:
  explicit TemplateError(const std::string& what) : InputError(what) {}
};

// raise_exception(message) called by the template itself, e.g. gpt-oss rejecting a malformed conversation.
class TemplateRaisedError : public TemplateError {
 public:
  TemplateRaisedError(const std::string& where, const std::string& message)
      : TemplateError(where + "chat template raised an exception: " + message), message_(message) {}
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

// Thrown by the raise_exception global; the interpreter turns it into TemplateRaisedError with the location.
class RaiseExceptionCalled : public InputError {
 public:
  explicit RaiseExceptionCalled(const std::string& message) : InputError(message) {}
};

}  // namespace moe::jinja
