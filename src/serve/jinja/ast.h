#pragma once
// The parsed template. One node type for expressions and one for statements, each with a kind and the few
// fields every kind needs, which keeps the parser and the interpreter free of casts.
#include <memory>
#include <string>
#include <vector>

#include "serve/jinja/value.h"

namespace moe::jinja {

struct Location {
  int line = 0;
  int column = 0;
};

enum class ExprKind {
  kLiteral,    // literal
  kName,       // name
  kList,       // children = items
  kTuple,      // children = items
  kDict,       // children = key0, value0, key1, value1, ...
  kGetAttr,    // children[0] . name
  kGetItem,    // children[0] [ children[1] ]
  kSlice,      // children[0] [ children[1] : children[2] : children[3] ] (null = omitted)
  kCall,       // children[0] ( args ), see Expr::args
  kFilter,     // children[0] | name ( args )
  kTest,       // children[0] is [not] name ( args )
  kUnary,      // op children[0]: "-", "+", "not"
  kBinary,     // children[0] op children[1]: arithmetic, "~", "and", "or"
  kCompare,    // children[0] ops[0] children[1] ops[1] children[2] ... (chained like Python)
  kCondition,  // children[1] if children[0] else children[2] (children[2] may be null)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind;
  Location loc;
  std::string name;  // variable, attribute, filter, test or operator name
  Value literal;
  std::vector<ExprPtr> children;
  // Call, filter and test arguments: positional ones have an empty keyword name.
  std::vector<ExprPtr> args;
  std::vector<std::string> arg_names;
  std::vector<std::string> ops;  // comparison operators of kCompare
  bool negated = false;          // `is not`
};

enum class StmtKind {
  kText,         // text
  kOutput,       // {{ expr }}
  kIf,           // exprs = conditions, bodies = branch bodies (+1 trailing else body)
  kFor,          // names = targets, expr = iterable, condition = filter, bodies = {body, else body}
  kSet,          // names = targets (or {namespace} with attribute), expr = value
  kSetBlock,     // names[0] = target, bodies[0] captured; expr = filter chain applied to the capture (may be
                 // null)
  kMacro,        // text = name, names = params, exprs = defaults (null = none), bodies[0]
  kCallBlock,    // expr = call expression, names/exprs = caller params/defaults, bodies[0] = caller body
  kFilterBlock,  // expr = filter chain applied to bodies[0]
  kBreak,
  kContinue,
};

struct Stmt;
using Body = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  StmtKind kind;
  Location loc;
  std::string text;
  std::string attribute;  // kSet on a namespace: `set ns.attribute = ...`
  std::vector<std::string> names;
  ExprPtr expr;
  ExprPtr condition;
  std::vector<ExprPtr> exprs;
  std::vector<Body> bodies;
};

// Name of the variable holding the captured body inside a filter block / set block filter chain.
inline constexpr const char* kBlockBodyVariable = " block body";

}  // namespace moe::jinja
