#pragma once
// Executes a parsed template. Scoping follows jinja2: each for-loop iteration and each macro call gets a
// fresh scope (so `set` inside them does not leak out, which is why templates use namespace()), `if` does
// not, and macros see the template's top-level variables as they are when called.
#include <string>
#include <unordered_map>

#include "serve/jinja/ast.h"

namespace moe::jinja {

class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}
  const Value* lookup(const std::string& name) const;
  void set(const std::string& name, Value v) { vars_[name] = std::move(v); }

 private:
  std::unordered_map<std::string, Value> vars_;
  const Scope* parent_;
};

class Interpreter {
 public:
  // `root` holds the render context (its parent the globals); top-level `set` writes into it.
  explicit Interpreter(Scope& root) : root_(root) {}
  void run(const Body& body, std::string& out) { execute(body, root_, out); }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow execute(const Body& body, Scope& scope, std::string& out);
  Flow execute(const Stmt& stmt, Scope& scope, std::string& out);
  Flow execute_for(const Stmt& stmt, Scope& scope, std::string& out);
  void execute_set(const Stmt& stmt, Scope& scope);
  Value make_macro(const Stmt& stmt, const Scope& defining_scope, std::string name);
  Value call_macro(const Stmt& stmt, const Scope& parent, const CallArgs& args);

  Value eval(const Expr& e, Scope& scope);
  Value eval_compare(const Expr& e, Scope& scope);
  CallArgs eval_args(const Expr& e, Scope& scope);

  Scope& root_;
};

}  // namespace moe::jinja
