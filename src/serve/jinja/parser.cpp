// Statement half of the parser and the token helpers.
#include "serve/jinja/parser.h"

#include <algorithm>

#include "core/error.h"

namespace moe::jinja {

namespace {

std::unique_ptr<Stmt> make_stmt(StmtKind kind, Location loc) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->loc = loc;
  return s;
}

}  // namespace

Body parse_template(std::string_view source) {
  return Parser(tokenize(source)).parse_all();
}

Body Parser::parse_all() {
  Body body = parse_body({}, nullptr);
  if (peek().kind != TokenKind::kEnd) error(peek(), "unexpected tag");
  return body;
}

// Parses statements until one of end_tags (e.g. "elif", "else", "endif") opens a block; that tag's name is
// consumed and returned through ended_by, leaving the rest of its block for the caller.
Body Parser::parse_body(const std::vector<std::string_view>& end_tags, std::string* ended_by) {
  Body body;
  while (true) {
    const Token& t = peek();
    if (t.kind == TokenKind::kEnd) {
      if (!end_tags.empty()) error(t, str("unexpected end of template, expected '", end_tags.back(), "'"));
      return body;
    }
    if (t.kind == TokenKind::kText) {
      auto s = make_stmt(StmtKind::kText, location(t));
      s->text = next().text;
      body.push_back(std::move(s));
    } else if (t.kind == TokenKind::kVariableBegin) {
      auto s = make_stmt(StmtKind::kOutput, location(next()));
      s->expr = parse_tuple_or_expression();
      if (next().kind != TokenKind::kVariableEnd) error(tokens_[pos_ - 1], "expected '}}'");
      body.push_back(std::move(s));
    } else if (t.kind == TokenKind::kBlockBegin) {
      const Token& name = peek(1);
      if (name.kind != TokenKind::kName) error(name, "expected a statement name");
      if (std::find(end_tags.begin(), end_tags.end(), name.text) != end_tags.end()) {
        next();
        *ended_by = next().text;
        return body;
      }
      const Token& begin = next();
      if (name.text == "generation" || name.text == "endgeneration") {
        // HF's AssistantTracker marks assistant spans for training masks; rendering is unaffected.
        next();
        expect_block_end();
        continue;
      }
      auto stmt = parse_statement(begin);
      if (stmt) body.push_back(std::move(stmt));
    } else {
      error(t, "unexpected token");
    }
  }
}

std::unique_ptr<Stmt> Parser::parse_statement(const Token& begin) {
  const Token& keyword = next();
  Location loc = location(begin);
  const std::string& k = keyword.text;
  if (k == "if") return parse_if(loc);
  if (k == "for") return parse_for(loc);
  if (k == "set") return parse_set(loc);
  if (k == "macro") return parse_macro(loc, StmtKind::kMacro);
  if (k == "call") return parse_macro(loc, StmtKind::kCallBlock);
  if (k == "filter") return parse_filter_block(loc);
  if (k == "break" || k == "continue") {
    expect_block_end();
    return make_stmt(k == "break" ? StmtKind::kBreak : StmtKind::kContinue, loc);
  }
  error(keyword, str("unknown statement '", k, "'"));
}

std::unique_ptr<Stmt> Parser::parse_if(Location loc) {
  auto s = make_stmt(StmtKind::kIf, loc);
  std::string ended_by = "if";
  while (ended_by == "if" || ended_by == "elif") {
    s->exprs.push_back(parse_tuple_or_expression());
    expect_block_end();
    s->bodies.push_back(parse_body({"elif", "else", "endif"}, &ended_by));
  }
  if (ended_by == "else") {
    expect_block_end();
    s->bodies.push_back(parse_body({"endif"}, &ended_by));
  }
  expect_block_end();
  return s;
}

std::unique_ptr<Stmt> Parser::parse_for(Location loc) {
  auto s = make_stmt(StmtKind::kFor, loc);
  s->names = parse_targets();
  if (!skip_name("in")) error(peek(), "expected 'in' in for loop");
  // jinja2 parses the iterable without a ternary so that a trailing `if` filters the loop.
  Location iter_loc = location(peek());
  ExprPtr iterable = parse_expression(false);
  if (at_operator(",")) {
    auto tuple = std::make_unique<Expr>();
    tuple->kind = ExprKind::kTuple;
    tuple->loc = iter_loc;
    tuple->children.push_back(std::move(iterable));
    while (skip_operator(",")) tuple->children.push_back(parse_expression(false));
    iterable = std::move(tuple);
  }
  s->expr = std::move(iterable);
  if (skip_name("if")) s->condition = parse_expression();
  if (skip_name("recursive")) error(peek(), "recursive loops are not supported");
  expect_block_end();
  std::string ended_by;
  s->bodies.push_back(parse_body({"else", "endfor"}, &ended_by));
  if (ended_by == "else") {
    expect_block_end();
    s->bodies.push_back(parse_body({"endfor"}, &ended_by));
  }
  expect_block_end();
  return s;
}

std::vector<std::string> Parser::parse_targets() {
  std::vector<std::string> names;
  bool parenthesised = skip_operator("(");
  do {
    if (parenthesised && at_operator(")")) break;
    names.push_back(expect_name());
  } while (skip_operator(","));
  if (parenthesised) expect_operator(")");
  return names;
}

std::unique_ptr<Stmt> Parser::parse_set(Location loc) {
  auto s = make_stmt(StmtKind::kSet, loc);
  if (peek().kind == TokenKind::kName && peek(1).kind == TokenKind::kOperator && peek(1).text == ".") {
    s->names.push_back(next().text);
    next();
    s->attribute = expect_name();
  } else {
    s->names = parse_targets();
  }
  if (skip_operator("=")) {
    s->expr = parse_tuple_or_expression();
    expect_block_end();
    return s;
  }
  // Block set: {% set x %}...{% endset %}, optionally {% set x | filter %}.
  if (!s->attribute.empty() || s->names.size() != 1) error(peek(), "block set needs a single name");
  s->kind = StmtKind::kSetBlock;
  if (at_operator("|")) {
    auto body_ref = std::make_unique<Expr>();
    body_ref->kind = ExprKind::kName;
    body_ref->name = kBlockBodyVariable;
    body_ref->loc = loc;
    s->expr = parse_filter_chain(std::move(body_ref));
  }
  expect_block_end();
  std::string ended_by;
  s->bodies.push_back(parse_body({"endset"}, &ended_by));
  expect_block_end();
  return s;
}

ExprPtr Parser::parse_filter_chain(ExprPtr base) {
  if (!at_operator("|")) base = parse_filter_call(std::move(base), location(peek()));  // {% filter upper %}
  while (at_operator("|")) base = parse_filter(std::move(base));
  return base;
}

std::unique_ptr<Stmt> Parser::parse_filter_block(Location loc) {
  auto s = make_stmt(StmtKind::kFilterBlock, loc);
  auto body_ref = std::make_unique<Expr>();
  body_ref->kind = ExprKind::kName;
  body_ref->name = kBlockBodyVariable;
  body_ref->loc = loc;
  s->expr = parse_filter_chain(std::move(body_ref));
  expect_block_end();
  std::string ended_by;
  s->bodies.push_back(parse_body({"endfilter"}, &ended_by));
  expect_block_end();
  return s;
}

// `macro name(a, b=1)` and `call(a, b) callee(...)`.
std::unique_ptr<Stmt> Parser::parse_macro(Location loc, StmtKind kind) {
  auto s = make_stmt(kind, loc);
  if (kind == StmtKind::kMacro) {
    s->text = expect_name();
    parse_parameters(*s);
  } else {
    if (at_operator("(")) parse_parameters(*s);
    s->expr = parse_expression();
    if (s->expr->kind != ExprKind::kCall) error(peek(), "expected a call after {% call %}");
  }
  expect_block_end();
  std::string ended_by;
  s->bodies.push_back(parse_body({kind == StmtKind::kMacro ? "endmacro" : "endcall"}, &ended_by));
  expect_block_end();
  return s;
}

void Parser::parse_parameters(Stmt& stmt) {
  expect_operator("(");
  while (!skip_operator(")")) {
    if (!stmt.names.empty()) {
      expect_operator(",");
      if (skip_operator(")")) break;
    }
    stmt.names.push_back(expect_name());
    stmt.exprs.push_back(skip_operator("=") ? parse_expression() : nullptr);
  }
}

void Parser::expect_block_end() {
  if (peek().kind != TokenKind::kBlockEnd) error(peek(), "expected end of block tag '%}'");
  next();
}

const Token& Parser::peek(size_t ahead) const {
  return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}

const Token& Parser::next() {
  const Token& t = peek();
  if (pos_ < tokens_.size() - 1) ++pos_;
  return t;
}

bool Parser::at_operator(std::string_view op) const {
  return peek().kind == TokenKind::kOperator && peek().text == op;
}

bool Parser::at_name(std::string_view name) const {
  return peek().kind == TokenKind::kName && peek().text == name;
}

bool Parser::skip_operator(std::string_view op) {
  if (!at_operator(op)) return false;
  next();
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!at_name(name)) return false;
  next();
  return true;
}

void Parser::expect_operator(std::string_view op) {
  if (!skip_operator(op)) error(peek(), str("expected '", op, "'"));
}

std::string Parser::expect_name() {
  if (peek().kind != TokenKind::kName) error(peek(), "expected a name");
  return next().text;
}

void Parser::error(const Token& at, std::string_view what) const {
  std::string found = at.kind == TokenKind::kEnd ? "end of template" : "'" + at.text + "'";
  fail_input("jinja: template syntax error at line ", at.line, " column ", at.column, ": ", what, " (found ",
             found, ")");
}

}  // namespace moe::jinja
