#include "serve/jinja/interpreter.h"

#include <algorithm>

#include "core/error.h"
#include "serve/jinja/builtins.h"
#include "serve/jinja/errors.h"

namespace moe::jinja {

namespace {

std::string where(Location loc) {
  return str("jinja: line ", loc.line, " column ", loc.column, ": ");
}

Value undefined_name(const std::string& name) {
  return Value::undefined("'" + name + "' is undefined");
}

// `for a, b in pairs` / `set a, b = pair`: Python's unpacking of one value into several names.
void bind_targets(Scope& scope, const std::vector<std::string>& names, const Value& value) {
  if (names.size() == 1) {
    scope.set(names[0], value);
    return;
  }
  ValueList parts = iterate(value);
  require_input(parts.size() == names.size(), parts.size() < names.size() ? "not enough" : "too many",
                " values to unpack (expected ", names.size(), ", got ", parts.size(), ")");
  for (size_t i = 0; i < names.size(); ++i) scope.set(names[i], parts[i]);
}

Value make_loop_object(const ValueList& items, size_t i) {
  const auto n = static_cast<int64_t>(items.size());
  const auto index0 = static_cast<int64_t>(i);
  Dict d;
  d.set(Value("index0"), Value(index0));
  d.set(Value("index"), Value(index0 + 1));
  d.set(Value("revindex0"), Value(n - index0 - 1));
  d.set(Value("revindex"), Value(n - index0));
  d.set(Value("first"), Value(i == 0));
  d.set(Value("last"), Value(index0 == n - 1));
  d.set(Value("length"), Value(n));
  d.set(Value("depth"), Value(int64_t{1}));
  d.set(Value("depth0"), Value(int64_t{0}));
  d.set(Value("previtem"), i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
  d.set(Value("nextitem"), index0 + 1 < n ? items[i + 1] : Value::undefined("there is no next item"));
  d.set(Value("cycle"), Value::function("loop.cycle", [index0](const CallArgs& args) {
          require_input(!args.positional.empty(), "no items for cycling given");
          return args.positional[static_cast<size_t>(index0) % args.positional.size()];
        }));
  return Value::object("LoopContext", std::move(d));
}

}  // namespace

const Value* Scope::lookup(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent_) {
    auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

Interpreter::Flow Interpreter::execute(const Body& body, Scope& scope, std::string& out) {
  for (const auto& stmt : body) {
    Flow flow = execute(*stmt, scope, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::execute(const Stmt& stmt, Scope& scope, std::string& out) {
  try {
    switch (stmt.kind) {
      case StmtKind::kText:
        out += stmt.text;
        return Flow::kNormal;
      case StmtKind::kOutput:
        out += to_python_str(eval(*stmt.expr, scope));
        return Flow::kNormal;
      case StmtKind::kIf:
        for (size_t i = 0; i < stmt.bodies.size(); ++i) {
          if (i >= stmt.exprs.size() || eval(*stmt.exprs[i], scope).truthy()) {
            return execute(stmt.bodies[i], scope, out);
          }
        }
        return Flow::kNormal;
      case StmtKind::kFor:
        return execute_for(stmt, scope, out);
      case StmtKind::kSet:
        execute_set(stmt, scope);
        return Flow::kNormal;
      case StmtKind::kSetBlock:
      case StmtKind::kFilterBlock: {
        std::string captured;
        execute(stmt.bodies[0], scope, captured);
        Value result(std::move(captured));
        if (stmt.expr) {
          Scope inner(&scope);
          inner.set(kBlockBodyVariable, result);
          result = eval(*stmt.expr, inner);
        }
        if (stmt.kind == StmtKind::kSetBlock) {
          scope.set(stmt.names[0], result);
        } else {
          out += to_python_str(result);
        }
        return Flow::kNormal;
      }
      case StmtKind::kMacro:
        scope.set(stmt.text, make_macro(stmt, scope, stmt.text));
        return Flow::kNormal;
      case StmtKind::kCallBlock: {
        // The body becomes `caller`, a macro the called macro can invoke.
        const Expr& call = *stmt.expr;
        Value callee = eval(*call.children[0], scope);
        if (callee.is_undefined()) fail_undefined(callee);
        require_input(callee.is_callable(), "'", callee.type_name(), "' object is not callable");
        CallArgs args = eval_args(call, scope);
        args.keyword.emplace_back("caller", make_macro(stmt, scope, "caller"));
        out += to_python_str(callee.as_callable().call(args));
        return Flow::kNormal;
      }
      case StmtKind::kBreak:
        return Flow::kBreak;
      case StmtKind::kContinue:
        return Flow::kContinue;
    }
  } catch (const TemplateError&) {
    throw;
  } catch (const RaiseExceptionCalled& e) {
    throw TemplateRaisedError(where(stmt.loc), e.what());
  } catch (const Error& e) {
    throw TemplateError(where(stmt.loc) + e.what());
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::execute_for(const Stmt& stmt, Scope& scope, std::string& out) {
  Value iterable = eval(*stmt.expr, scope);
  require_input(!iterable.is_none(), "'NoneType' object is not iterable");
  ValueList items = iterate(iterable);
  if (stmt.condition) {  // `for x in xs if cond`: filtered before loop.length and friends are computed
    ValueList kept;
    for (auto& item : items) {
      Scope probe(&scope);
      bind_targets(probe, stmt.names, item);
      if (eval(*stmt.condition, probe).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  for (size_t i = 0; i < items.size(); ++i) {
    Scope iteration(&scope);
    iteration.set("loop", make_loop_object(items, i));
    bind_targets(iteration, stmt.names, items[i]);
    if (execute(stmt.bodies[0], iteration, out) == Flow::kBreak) break;
  }
  if (items.empty() && stmt.bodies.size() > 1) return execute(stmt.bodies[1], scope, out);
  return Flow::kNormal;
}

void Interpreter::execute_set(const Stmt& stmt, Scope& scope) {
  Value value = eval(*stmt.expr, scope);
  if (stmt.attribute.empty()) {
    bind_targets(scope, stmt.names, value);
    return;
  }
  const Value* target = scope.lookup(stmt.names[0]);
  require_input(target && target->is_object() && target->hint() == "Namespace",
                "cannot assign attribute on non-namespace object '", stmt.names[0], "'");
  target->object_attributes().set(Value(stmt.attribute), std::move(value));
}

Value Interpreter::make_macro(const Stmt& stmt, const Scope& defining_scope, std::string name) {
  const Scope* parent = &defining_scope;
  return Value::function(std::move(name), [this, &stmt, parent](const CallArgs& args) {
    return call_macro(stmt, *parent, args);
  });
}

Value Interpreter::call_macro(const Stmt& stmt, const Scope& parent, const CallArgs& args) {
  Scope local(&parent);
  const auto& params = stmt.names;
  for (size_t i = 0; i < params.size(); ++i) {
    const Value* passed = i < args.positional.size() ? &args.positional[i] : args.keyword_arg(params[i]);
    if (passed) {
      local.set(params[i], *passed);
    } else if (stmt.exprs[i]) {
      local.set(params[i], eval(*stmt.exprs[i], local));
    } else {
      local.set(params[i], undefined_name(params[i]));
    }
  }
  ValueList varargs;
  for (size_t i = params.size(); i < args.positional.size(); ++i) varargs.push_back(args.positional[i]);
  Dict kwargs;
  for (const auto& [key, v] : args.keyword) {
    if (key == "caller") {
      local.set("caller", v);
    } else if (std::find(params.begin(), params.end(), key) == params.end()) {
      kwargs.set(Value(key), v);
    }
  }
  local.set("varargs", Value::tuple(std::move(varargs)));
  local.set("kwargs", Value::dict(std::move(kwargs)));
  std::string out;
  execute(stmt.bodies[0], local, out);
  return Value(std::move(out));
}

CallArgs Interpreter::eval_args(const Expr& e, Scope& scope) {
  CallArgs args;
  for (size_t i = 0; i < e.args.size(); ++i) {
    Value v = eval(*e.args[i], scope);
    if (e.arg_names[i].empty()) {
      args.positional.push_back(std::move(v));
    } else {
      args.keyword.emplace_back(e.arg_names[i], std::move(v));
    }
  }
  return args;
}

Value Interpreter::eval_compare(const Expr& e, Scope& scope) {
  Value left = eval(*e.children[0], scope);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.children[i + 1], scope);
    const std::string& op = e.ops[i];
    bool ok;
    if (op == "==") {
      ok = values_equal(left, right);
    } else if (op == "!=") {
      ok = !values_equal(left, right);
    } else if (op == "in" || op == "not in") {
      ok = value_contains(right, left) == (op == "in");
    } else {
      if (left.is_undefined()) fail_undefined(left);
      if (right.is_undefined()) fail_undefined(right);
      int c = compare_values(left, right);
      ok = op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
    }
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Value Interpreter::eval(const Expr& e, Scope& scope) {
  switch (e.kind) {
    case ExprKind::kLiteral:
      return e.literal;
    case ExprKind::kName: {
      const Value* v = scope.lookup(e.name);
      return v ? *v : undefined_name(e.name);
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      ValueList items;
      for (const auto& c : e.children) items.push_back(eval(*c, scope));
      return e.kind == ExprKind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case ExprKind::kDict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
        d.set(eval(*e.children[i], scope), eval(*e.children[i + 1], scope));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::kGetAttr:
      return get_attribute(eval(*e.children[0], scope), e.name);
    case ExprKind::kGetItem: {
      Value obj = eval(*e.children[0], scope);
      return get_item(obj, eval(*e.children[1], scope));
    }
    case ExprKind::kSlice: {
      Value obj = eval(*e.children[0], scope);
      Value parts[3];
      for (int i = 0; i < 3; ++i) {
        if (e.children[static_cast<size_t>(i) + 1])
          parts[i] = eval(*e.children[static_cast<size_t>(i) + 1], scope);
      }
      return slice(obj, parts[0], parts[1], parts[2]);
    }
    case ExprKind::kCall: {
      Value callee = eval(*e.children[0], scope);
      if (callee.is_undefined()) fail_undefined(callee);
      require_input(callee.is_callable(), "'", callee.type_name(), "' object is not callable");
      return callee.as_callable().call(eval_args(e, scope));
    }
    case ExprKind::kFilter: {
      Value input = eval(*e.children[0], scope);
      return apply_filter(e.name, input, eval_args(e, scope));
    }
    case ExprKind::kTest: {
      require_input(has_test(e.name), "no test named '", e.name, "'");
      Value input = eval(*e.children[0], scope);
      return Value(apply_test(e.name, input, eval_args(e, scope)) != e.negated);
    }
    case ExprKind::kUnary: {
      Value v = eval(*e.children[0], scope);
      if (e.name == "not") return Value(!v.truthy());
      if (e.name == "-") return unary_minus(v);
      if (v.is_undefined()) fail_undefined(v);
      require_input(v.is_number(), "bad operand type for unary +: '", v.type_name(), "'");
      return v.is_bool() ? Value(v.as_int()) : v;
    }
    case ExprKind::kBinary: {
      Value left = eval(*e.children[0], scope);
      if (e.name == "and") return left.truthy() ? eval(*e.children[1], scope) : left;
      if (e.name == "or") return left.truthy() ? left : eval(*e.children[1], scope);
      Value right = eval(*e.children[1], scope);
      if (e.name == "~") return Value(to_python_str(left) + to_python_str(right));
      return binary_op(e.name, left, right);
    }
    case ExprKind::kCompare:
      return eval_compare(e, scope);
    case ExprKind::kCondition:
      if (eval(*e.children[0], scope).truthy()) return eval(*e.children[1], scope);
      return e.children[2] ? eval(*e.children[2], scope) : Value::undefined("the inline if had no else");
  }
  fail("jinja: internal: unknown expression kind");
}

}  // namespace moe::jinja
