// Whitespace handling (trim_blocks, lstrip_blocks, -/+ markers, comments) and syntax errors with locations.
#include <gtest/gtest.h>

#include "render_helper.h"
#include "serve/jinja/errors.h"
#include "serve/jinja/lexer.h"

namespace moe::jinja {
namespace {

using testing::render;

TEST(JinjaLexer, SplitsTextAndTags) {
  auto tokens = tokenize("a{{ x.y }}b{% if z %}c{% endif %}");
  ASSERT_GE(tokens.size(), 10u);
  EXPECT_EQ(tokens[0].kind, TokenKind::kText);
  EXPECT_EQ(tokens[1].kind, TokenKind::kVariableBegin);
  EXPECT_EQ(tokens[2].text, "x");
  EXPECT_EQ(tokens[3].text, ".");
  EXPECT_EQ(tokens.back().kind, TokenKind::kEnd);
}

TEST(JinjaLexer, StringEscapesAndNumbers) {
  auto tokens = tokenize(R"({{ 'a\n\'\u00e9' 1_000 2.5e3 }})");
  EXPECT_EQ(tokens[1].kind, TokenKind::kString);
  EXPECT_EQ(tokens[1].text, "a\n'\xc3\xa9");
  EXPECT_EQ(tokens[2].kind, TokenKind::kInteger);
  EXPECT_EQ(tokens[2].text, "1000");
  EXPECT_EQ(tokens[3].kind, TokenKind::kFloat);
}

TEST(JinjaWhitespace, TrimBlocksDropsNewlineAfterBlockTag) {
  EXPECT_EQ(render("{% if true %}\nx\n{% endif %}\ny"), "x\ny");
  EXPECT_EQ(render("{{ 1 }}\nx"), "1\nx");  // not after expressions
}

TEST(JinjaWhitespace, LstripBlocksDropsIndentBeforeBlockTag) {
  EXPECT_EQ(render("a\n    {% if true %}\n    b\n    {% endif %}\nc"), "a\n    b\nc");
  EXPECT_EQ(render("a  {% if true %}b{% endif %}"), "a  b");  // text before the tag on the line stays
}

TEST(JinjaWhitespace, MinusAndPlusMarkers) {
  EXPECT_EQ(render("a  \n  {{- 'x' -}}  \n  b"), "axb");
  EXPECT_EQ(render("a\n  {%+ if true %}x{% endif %}"), "a\n  x");
  EXPECT_EQ(render("{% if true +%}\nx{% endif %}"), "\nx");
}

TEST(JinjaWhitespace, CommentsAndTrailingNewline) {
  EXPECT_EQ(render("a\n  {# note #}\nb {# inline #}c\n"), "a\nb c");
  EXPECT_EQ(render("x\n\n"), "x\n");
  EXPECT_EQ(render("a\r\nb"), "a\nb");
}

TEST(JinjaWhitespace, RawBlock) {
  EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
}

TEST(JinjaParser, SyntaxErrorsNameLineAndColumn) {
  try {
    Template::parse("line one\n{% if %}");
    FAIL() << "expected a syntax error";
  } catch (const TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Template::parse("{% for x in xs %}"), InputError);
  EXPECT_THROW(Template::parse("{% endif %}"), InputError);
  EXPECT_THROW(Template::parse("{{ 1 + }}"), InputError);
  EXPECT_THROW(Template::parse("{% unknown %}"), InputError);
  EXPECT_THROW(Template::parse("{{ 'open"), InputError);
}

TEST(JinjaParser, PrecedenceFollowsJinja2) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 'a' ~ 2 * 3 }}"), "7 64 4 a6");
  EXPECT_EQ(render("{{ not x is defined }} {{ -3|abs }}"), "True 3");
  EXPECT_EQ(render("{{ 'y' if false }}|{{ 1 if 0 else 2 if 0 else 3 }}"), "|3");
}

}  // namespace
}  // namespace moe::jinja
