#pragma once
// Recursive-descent parser following jinja2's grammar and operator precedence:
//   ternary < or < and < not < comparison/in/not in < + - < ~ < * / // % < ** < unary -/+ < postfix . [] ()
// with filters `|` and tests `is` binding to the unary operand (so `-x|abs` is abs(-x), `not x is y` is
// not (x is y)).
#include <string_view>
#include <vector>

#include "serve/jinja/ast.h"
#include "serve/jinja/lexer.h"

namespace moe::jinja {

Body parse_template(std::string_view source);

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}
  Body parse_all();

 private:
  // Statements (parser.cpp).
  Body parse_body(const std::vector<std::string_view>& end_tags, std::string* ended_by);
  std::unique_ptr<Stmt> parse_statement(const Token& begin);
  std::unique_ptr<Stmt> parse_if(Location loc);
  std::unique_ptr<Stmt> parse_for(Location loc);
  std::unique_ptr<Stmt> parse_set(Location loc);
  std::unique_ptr<Stmt> parse_macro(Location loc, StmtKind kind);
  std::unique_ptr<Stmt> parse_filter_block(Location loc);
  void parse_parameters(Stmt& stmt);
  std::vector<std::string> parse_targets();
  ExprPtr parse_filter_chain(ExprPtr base);
  void expect_block_end();

  // Expressions (expression_parser.cpp).
  ExprPtr parse_tuple_or_expression();
  ExprPtr parse_expression(bool with_condition = true);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_additive();
  ExprPtr parse_concat();
  ExprPtr parse_multiplicative();
  ExprPtr parse_power();
  ExprPtr parse_unary(bool with_filter = true);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filters_and_tests(ExprPtr node);
  ExprPtr parse_filter(ExprPtr node);
  ExprPtr parse_filter_call(ExprPtr node, Location loc);
  ExprPtr parse_test(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  void parse_call_args(Expr& call);

  // Token access.
  const Token& peek(size_t ahead = 0) const;
  const Token& next();
  bool at_operator(std::string_view op) const;
  bool at_name(std::string_view name) const;
  bool skip_operator(std::string_view op);
  bool skip_name(std::string_view name);
  void expect_operator(std::string_view op);
  std::string expect_name();
  [[noreturn]] void error(const Token& at, std::string_view what) const;
  static Location location(const Token& t) { return {t.line, t.column}; }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

}  // namespace moe::jinja
