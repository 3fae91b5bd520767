// Values, operators, attribute/item access, undefined, string/dict methods: Python semantics.
#include <gtest/gtest.h>

#include "render_helper.h"
#include "serve/jinja/errors.h"

namespace moe::jinja {
namespace {

using testing::render;

TEST(JinjaValues, PrintLikePythonStr) {
  EXPECT_EQ(render("{{ true }} {{ none }} {{ 1.0 }} {{ 0.1 }} {{ 1e16 }} {{ 1e-05 }} {{ 2.5e-7 }}"),
            "True None 1.0 0.1 1e+16 1e-05 2.5e-07");
  EXPECT_EQ(render("{{ ['a', 1, none, {'k': 'v'}, (1,)] }}"), "['a', 1, None, {'k': 'v'}, (1,)]");
  EXPECT_EQ(render(R"({{ ["it's", 'a\nb'] }})"), R"(["it's", 'a\nb'])");
  EXPECT_EQ(render("{{ x }}", R"({"x": {"b": 1, "a": [true, null, 2.0]}})"),
            "{'b': 1, 'a': [True, None, 2.0]}");
}

TEST(JinjaOperators, Arithmetic) {
  EXPECT_EQ(render("{{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** -1 }} {{ 1 + 2.5 }}"),
            "3.5 3 -4 2 0.5 3.5");
  EXPECT_EQ(render("{{ 'ab' * 2 }} {{ [1] + [2] }} {{ 'x' ~ 1 ~ none }}"), "abab [1, 2] x1None");
  EXPECT_THROW(render("{{ 'a' + 1 }}"), TemplateError);
  EXPECT_THROW(render("{{ 1 // 0 }}"), TemplateError);
}

TEST(JinjaOperators, ComparisonsAndLogic) {
  EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ [1, 2] < [1, 3] }} {{ 'a' != 'a' }}"),
            "True True True True False");
  EXPECT_EQ(render("{{ 0 or 'y' }} {{ 'x' and 'z' }} {{ not '' }}"), "y z True");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 2 not in [1] }} {{ 'k' in {'k': 1} }}"), "True True True");
}

TEST(JinjaAccess, AttributesItemsAndSlices) {
  const char* ctx = R"({"m": {"role": "user", "items": 3}, "xs": [1, 2, 3], "s": "h\u00e9llo"})";
  EXPECT_EQ(render("{{ m.role }} {{ m['role'] }} {{ m['items'] }} {{ xs[-1] }} {{ xs.0 }}", ctx),
            "user user 3 3 1");
  EXPECT_EQ(render("{{ xs[::-1] }} {{ xs[1:] }} {{ s[1] }} {{ s[::-1] }} {{ s|length }}", ctx),
            "[3, 2, 1] [2, 3] \xc3\xa9 oll\xc3\xa9h 5");
  EXPECT_EQ(render("{{ m.items is callable }}", ctx), "True");  // attribute lookup finds the method first
}

TEST(JinjaAccess, UndefinedIsLenientUntilUsed) {
  EXPECT_EQ(render("[{{ nope }}][{{ m.nope }}][{{ nope is defined }}][{{ nope|length }}]", R"({"m": {}})"),
            "[][][False][0]");
  EXPECT_EQ(render("{% if m.nope %}y{% else %}n{% endif %}{% for x in nope %}{% endfor %}", R"({"m": {}})"),
            "n");
  EXPECT_THROW(render("{{ nope.attr }}"), TemplateError);
  EXPECT_THROW(render("{{ nope + 1 }}"), TemplateError);
  EXPECT_THROW(render("{{ nope() }}"), TemplateError);
}

TEST(JinjaMethods, StringMethods) {
  EXPECT_EQ(
      render(
          "{{ ' a b '.strip() }}|{{ 'xxay'.lstrip('x') }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a b'.split() }}"),
      "a b|ay|['a', 'b,c']|['a', 'b']");
  EXPECT_EQ(
      render("{{ 'a</think>b'.split('</think>')[-1] }}|{{ 'x'.startswith(('y', 'x')) }}|{{ 'ab'.upper() }}"),
      "b|True|AB");
  EXPECT_EQ(render("{{ 'aaa'.replace('a', 'b', 2) }}|{{ 'hello world'.title() }}|{{ 'banana'.count('a') }}"),
            "bba|Hello World|3");
  EXPECT_EQ(render("{{ '-'.join(['a', 'b']) }}|{{ '{} {x}'.format(1, x=2) }}|{{ 'abc'.find('c') }}"),
            "a-b|1 2|2");
}

TEST(JinjaMethods, DictAndListMethods) {
  const char* ctx = R"({"d": {"b": 1, "a": 2}})";
  EXPECT_EQ(
      render("{% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}|{{ d.keys()|list }}|{{ d.get('z', 0) }}",
             ctx),
      "b1a2|['b', 'a']|0");
  EXPECT_EQ(render("{{ [1, 2, 2].count(2) }} {{ [1, 2].index(2) }}"), "2 1");
  EXPECT_THROW(render("{{ [].append(1) }}"), TemplateError);  // the sandbox is immutable
}

}  // namespace
}  // namespace moe::jinja
