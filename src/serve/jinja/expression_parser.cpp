// Expression half of the parser; precedence levels follow jinja2/parser.py one function per level.
#include "core/error.h"
#include "serve/jinja/parser.h"

namespace moe::jinja {

namespace {

ExprPtr make(ExprKind kind, Location loc) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->loc = loc;
  return e;
}

ExprPtr make_binary(std::string op, ExprPtr left, ExprPtr right, Location loc) {
  auto e = make(ExprKind::kBinary, loc);
  e->name = std::move(op);
  e->children.push_back(std::move(left));
  e->children.push_back(std::move(right));
  return e;
}

}  // namespace

// `{{ a, b }}` and `for x in a, b` accept bare tuples.
ExprPtr Parser::parse_tuple_or_expression() {
  Location loc = location(peek());
  ExprPtr first = parse_expression();
  if (!at_operator(",")) return first;
  auto tuple = make(ExprKind::kTuple, loc);
  tuple->children.push_back(std::move(first));
  while (skip_operator(",")) {
    if (peek().kind == TokenKind::kBlockEnd || peek().kind == TokenKind::kVariableEnd) break;
    tuple->children.push_back(parse_expression());
  }
  return tuple;
}

ExprPtr Parser::parse_expression(bool with_condition) {
  ExprPtr node = parse_or();
  if (!with_condition) return node;
  while (at_name("if")) {
    Location loc = location(next());
    auto cond = make(ExprKind::kCondition, loc);
    cond->children.push_back(parse_or());
    cond->children.push_back(std::move(node));
    cond->children.push_back(skip_name("else") ? parse_expression() : nullptr);
    node = std::move(cond);
  }
  return node;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (at_name("or")) {
    Location loc = location(next());
    left = make_binary("or", std::move(left), parse_and(), loc);
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (at_name("and")) {
    Location loc = location(next());
    left = make_binary("and", std::move(left), parse_not(), loc);
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (at_name("not")) {
    auto e = make(ExprKind::kUnary, location(next()));
    e->name = "not";
    e->children.push_back(parse_not());
    return e;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  Location loc = location(peek());
  ExprPtr first = parse_additive();
  auto cmp = make(ExprKind::kCompare, loc);
  while (true) {
    const Token& t = peek();
    std::string op;
    if (t.kind == TokenKind::kOperator && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                           t.text == ">" || t.text == "<=" || t.text == ">=")) {
      op = t.text;
      next();
    } else if (at_name("in")) {
      op = "in";
      next();
    } else if (at_name("not") && peek(1).kind == TokenKind::kName && peek(1).text == "in") {
      op = "not in";
      next();
      next();
    } else {
      break;
    }
    if (cmp->children.empty()) cmp->children.push_back(std::move(first));
    cmp->ops.push_back(op);
    cmp->children.push_back(parse_additive());
  }
  return cmp->children.empty() ? std::move(first) : std::move(cmp);
}

ExprPtr Parser::parse_additive() {
  ExprPtr left = parse_concat();
  while (at_operator("+") || at_operator("-")) {
    const Token& op = next();
    left = make_binary(op.text, std::move(left), parse_concat(), location(op));
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  ExprPtr left = parse_multiplicative();
  while (at_operator("~")) {
    Location loc = location(next());
    left = make_binary("~", std::move(left), parse_multiplicative(), loc);
  }
  return left;
}

ExprPtr Parser::parse_multiplicative() {
  ExprPtr left = parse_power();
  while (at_operator("*") || at_operator("/") || at_operator("//") || at_operator("%")) {
    const Token& op = next();
    left = make_binary(op.text, std::move(left), parse_power(), location(op));
  }
  return left;
}

ExprPtr Parser::parse_power() {
  ExprPtr left = parse_unary();
  while (at_operator("**")) {
    Location loc = location(next());
    left = make_binary("**", std::move(left), parse_unary(), loc);
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  ExprPtr node;
  if (at_operator("-") || at_operator("+")) {
    const Token& op = next();
    node = make(ExprKind::kUnary, location(op));
    node->name = op.text;
    node->children.push_back(parse_unary(false));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  return with_filter ? parse_filters_and_tests(std::move(node)) : std::move(node);
}

ExprPtr Parser::parse_primary() {
  const Token& t = next();
  Location loc = location(t);
  switch (t.kind) {
    case TokenKind::kName: {
      auto e = make(ExprKind::kLiteral, loc);
      if (t.text == "true" || t.text == "True") {
        e->literal = Value(true);
      } else if (t.text == "false" || t.text == "False") {
        e->literal = Value(false);
      } else if (t.text == "none" || t.text == "None") {
        e->literal = Value::none();
      } else {
        e->kind = ExprKind::kName;
        e->name = t.text;
      }
      return e;
    }
    case TokenKind::kString: {
      std::string s = t.text;
      while (peek().kind == TokenKind::kString) s += next().text;  // adjacent literals concatenate
      auto e = make(ExprKind::kLiteral, loc);
      e->literal = Value(std::move(s));
      return e;
    }
    case TokenKind::kInteger: {
      auto e = make(ExprKind::kLiteral, loc);
      e->literal = Value(static_cast<int64_t>(std::stoll(t.text)));
      return e;
    }
    case TokenKind::kFloat: {
      auto e = make(ExprKind::kLiteral, loc);
      e->literal = Value(std::stod(t.text));
      return e;
    }
    case TokenKind::kOperator:
      if (t.text == "(") {
        if (skip_operator(")")) return make(ExprKind::kTuple, loc);
        ExprPtr first = parse_expression();
        if (skip_operator(")")) return first;  // parenthesised expression
        auto tuple = make(ExprKind::kTuple, loc);
        tuple->children.push_back(std::move(first));
        while (skip_operator(",")) {
          if (at_operator(")")) break;
          tuple->children.push_back(parse_expression());
        }
        expect_operator(")");
        return tuple;
      }
      if (t.text == "[") {
        auto list = make(ExprKind::kList, loc);
        while (!skip_operator("]")) {
          if (!list->children.empty()) expect_operator(",");
          if (skip_operator("]")) break;
          list->children.push_back(parse_expression());
        }
        return list;
      }
      if (t.text == "{") {
        auto dict = make(ExprKind::kDict, loc);
        while (!skip_operator("}")) {
          if (!dict->children.empty()) expect_operator(",");
          if (skip_operator("}")) break;
          dict->children.push_back(parse_expression());
          expect_operator(":");
          dict->children.push_back(parse_expression());
        }
        return dict;
      }
      break;
    default:
      break;
  }
  error(t, t.kind == TokenKind::kOperator ? "unexpected '" + t.text + "'" : "unexpected end of expression");
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (at_operator(".")) {
      Location loc = location(next());
      const Token& attr = next();
      if (attr.kind != TokenKind::kName && attr.kind != TokenKind::kInteger)
        error(attr, "expected attribute name");
      auto e = make(attr.kind == TokenKind::kName ? ExprKind::kGetAttr : ExprKind::kGetItem, loc);
      e->children.push_back(std::move(node));
      if (attr.kind == TokenKind::kName) {
        e->name = attr.text;
      } else {  // foo.0 is foo[0]
        auto index = make(ExprKind::kLiteral, loc);
        index->literal = Value(static_cast<int64_t>(std::stoll(attr.text)));
        e->children.push_back(std::move(index));
      }
      node = std::move(e);
    } else if (at_operator("[")) {
      node = parse_subscript(std::move(node));
    } else if (at_operator("(")) {
      auto call = make(ExprKind::kCall, location(peek()));
      call->children.push_back(std::move(node));
      parse_call_args(*call);
      node = std::move(call);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  Location loc = location(next());  // [
  ExprPtr parts[3];
  int colons = 0;
  while (!at_operator("]")) {
    if (skip_operator(":")) {
      if (++colons > 2) error(peek(), "too many ':' in slice");
      continue;
    }
    if (parts[colons]) error(peek(), "expected ':' or ']'");
    parts[colons] = parse_expression();
  }
  next();
  if (colons == 0) {
    if (!parts[0]) error(peek(), "empty subscript");
    auto e = make(ExprKind::kGetItem, loc);
    e->children.push_back(std::move(node));
    e->children.push_back(std::move(parts[0]));
    return e;
  }
  auto e = make(ExprKind::kSlice, loc);
  e->children.push_back(std::move(node));
  for (auto& p : parts) e->children.push_back(std::move(p));
  return e;
}

void Parser::parse_call_args(Expr& call) {
  expect_operator("(");
  while (!skip_operator(")")) {
    if (!call.args.empty()) {
      expect_operator(",");
      if (skip_operator(")")) break;
    }
    std::string keyword;
    if (peek().kind == TokenKind::kName && peek(1).kind == TokenKind::kOperator && peek(1).text == "=") {
      keyword = next().text;
      next();
    } else if (at_operator("*") || at_operator("**")) {
      error(peek(), "*args / **kwargs in calls are not supported");
    }
    call.args.push_back(parse_expression());
    call.arg_names.push_back(std::move(keyword));
  }
}

ExprPtr Parser::parse_filters_and_tests(ExprPtr node) {
  while (true) {
    if (at_operator("|")) {
      node = parse_filter(std::move(node));
    } else if (at_name("is")) {
      node = parse_test(std::move(node));
    } else if (at_operator("(")) {
      auto call = make(ExprKind::kCall, location(peek()));
      call->children.push_back(std::move(node));
      parse_call_args(*call);
      node = std::move(call);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter(ExprPtr node) {
  Location loc = location(next());  // |
  return parse_filter_call(std::move(node), loc);
}

// The filter name and arguments after the `|` (a filter block's first filter has no pipe).
ExprPtr Parser::parse_filter_call(ExprPtr node, Location loc) {
  auto e = make(ExprKind::kFilter, loc);
  e->name = expect_name();
  while (skip_operator(".")) e->name += "." + expect_name();
  e->children.push_back(std::move(node));
  if (at_operator("(")) parse_call_args(*e);
  return e;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  Location loc = location(next());  // is
  auto e = make(ExprKind::kTest, loc);
  e->negated = skip_name("not");
  e->name = expect_name();
  e->children.push_back(std::move(node));
  const Token& t = peek();
  if (at_operator("(")) {
    parse_call_args(*e);
  } else if ((t.kind == TokenKind::kName && t.text != "else" && t.text != "or" && t.text != "and") ||
             t.kind == TokenKind::kString || t.kind == TokenKind::kInteger || t.kind == TokenKind::kFloat ||
             at_operator("[") || at_operator("{")) {
    // `x is divisibleby 3`, `x is sameas none`: one argument without parentheses.
    if (t.kind == TokenKind::kName && t.text == "is") error(t, "you cannot chain multiple tests with is");
    e->args.push_back(parse_postfix(parse_primary()));
    e->arg_names.emplace_back();
  }
  return e;
}

}  // namespace moe::jinja
