// if / for / loop variables / set / namespace / macros / call blocks / loop controls / raise_exception.
#include <gtest/gtest.h>

#include "render_helper.h"
#include "serve/jinja/errors.h"

namespace moe::jinja {
namespace {

using testing::render;

TEST(JinjaStatements, IfElifElse) {
  const char* t = "{% if x > 1 %}big{% elif x == 1 %}one{% else %}small{% endif %}";
  EXPECT_EQ(render(t, R"({"x": 5})"), "big");
  EXPECT_EQ(render(t, R"({"x": 1})"), "one");
  EXPECT_EQ(render(t, R"({"x": 0})"), "small");
}

TEST(JinjaStatements, ForLoopVariables) {
  EXPECT_EQ(
      render("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
             "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}"),
      "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;");
  EXPECT_EQ(render("{% for x in [1, 2, 3] %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {% endfor %}"),
            "<1>2 1<2>3 2<3> ");
  EXPECT_EQ(
      render("{% for x in xs if x is odd %}{{ x }}/{{ loop.length }} {% endfor %}", R"({"xs": [1,2,3]})"),
      "1/2 3/2 ");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }} {% endfor %}"), "a=1 b=2 ");
  EXPECT_EQ(render("{% for x in range(5) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 3 %}{% break %}"
                   "{% endif %}{{ x }}{% endfor %}"),
            "02");
}

TEST(JinjaStatements, ScopingMatchesJinja2) {
  // A loop body's set does not leak out, nor survive into the next iteration; namespace() is the way out.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in range(2) %}{{ x }}{% set x = 5 %}{{ x }}{% endfor %}{{ x }}"),
            "15151");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}"
                   "{{ ns.n }}"),
            "6");
  EXPECT_EQ(render("{% if true %}{% set y = 2 %}{% endif %}{{ y }}"), "2");  // if does not scope
  EXPECT_THROW(render("{% set d.x = 1 %}", R"({"d": {}})"), TemplateError);
}

TEST(JinjaStatements, SetForms) {
  EXPECT_EQ(render("{% set a, b = [1, 2] %}{{ b }}{{ a }}"), "21");
  EXPECT_EQ(render("{% set s %}  x {{ 1 }} {% endset %}[{{ s }}]"), "[  x 1 ]");
  EXPECT_EQ(render("{% set s | trim | upper %}  x  {% endset %}[{{ s }}]"), "[X]");
  EXPECT_EQ(render("{% filter upper %}ab{% endfilter %}"), "AB");
}

TEST(JinjaStatements, Macros) {
  const char* greet = "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}";
  EXPECT_EQ(render(std::string(greet) + "{{ greet('Bob') }} {{ greet('Al', greeting='Hi') }}"),
            "Hello, Bob! Hi, Al!");
  // Macros see top-level variables as they are at call time, and may recurse.
  EXPECT_EQ(render("{% macro m() %}{{ top }}{% endmacro %}{% set top = 'T' %}{{ m() }}"), "T");
  EXPECT_EQ(render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"),
            "321");
  EXPECT_EQ(render("{% macro w() %}<{{ caller() }}>{% endmacro %}{% call w() %}in{% endcall %}"), "<in>");
}

TEST(JinjaStatements, GenerationBlockRendersItsBody) {
  EXPECT_EQ(render("{% generation %}x{{ 1 }}{% endgeneration %}"), "x1");
}

TEST(JinjaStatements, RaiseExceptionCarriesTheMessageAndLocation) {
  try {
    render("ok\n{% if true %}{{ raise_exception('no system role') }}{% endif %}");
    FAIL() << "expected raise_exception to throw";
  } catch (const TemplateRaisedError& e) {
    EXPECT_EQ(e.message(), "no system role");
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

TEST(JinjaStatements, RuntimeErrorsNameTheLine) {
  try {
    render("a\nb\n{{ x.y.z }}");
    FAIL();
  } catch (const TemplateError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'x' is undefined"), std::string::npos) << e.what();
  }
}

TEST(JinjaGlobals, RangeDictNamespaceStrftime) {
  EXPECT_EQ(render("{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ dict(a=1) }} {{ namespace(a=2).a }}"),
            "[0, 1, 2] [1, 3, 5] {'a': 1} 2");
  EXPECT_EQ(render("{{ strftime_now('%Y-%m-%d') }} {{ strftime_now('%d %B %Y') }}"),
            "2025-08-07 07 August 2025");
}

}  // namespace
}  // namespace moe::jinja
