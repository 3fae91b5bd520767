// Filters and tests, with expectations written from jinja2's documented behaviour.
#include <gtest/gtest.h>

#include "render_helper.h"
#include "serve/jinja/errors.h"

namespace moe::jinja {
namespace {

using testing::render;

TEST(JinjaFilters, TojsonIsTransformersJsonDumps) {
  const char* ctx = R"({"d": {"b": [1, 2.5, null], "a": "\u00e9\"\n"}})";
  EXPECT_EQ(render("{{ d|tojson }}", ctx), "{\"b\": [1, 2.5, null], \"a\": \"\xc3\xa9\\\"\\n\"}");
  EXPECT_EQ(render("{{ d|tojson(indent=2) }}", ctx),
            "{\n  \"b\": [\n    1,\n    2.5,\n    null\n  ],\n  \"a\": \"\xc3\xa9\\\"\\n\"\n}");
  EXPECT_EQ(render("{{ d|tojson(sort_keys=true, separators=(',', ':')) }}", ctx),
            "{\"a\":\"\xc3\xa9\\\"\\n\",\"b\":[1,2.5,null]}");
  EXPECT_EQ(render("{{ 'é'|tojson(ensure_ascii=true) }} {{ {}|tojson }} {{ []|tojson }}"),
            "\"\\u00e9\" {} []");
  EXPECT_THROW(render("{{ nope|tojson }}"), TemplateError);
}

TEST(JinjaFilters, StringFilters) {
  EXPECT_EQ(render("[{{ '  x '|trim }}] {{ 'aB'|upper }} {{ 'aB'|lower }} {{ 'hi there-you'|title }} "
                   "{{ 'hI'|capitalize }} {{ 'aa'|replace('a', 'b') }}"),
            "[x] AB ab Hi There-You Hi bb");
  EXPECT_EQ(render("{{ '<&>'|e }} {{ '<b>'|safe }} {{ 'a b c'|wordcount }} {{ 42|string ~ '!' }}"),
            "&lt;&amp;&gt; <b> 3 42!");
  EXPECT_EQ(render("{{ 'a\nb'|indent(2) }}|{{ 'a\nb'|indent(2, true) }}"), "a\n  b|  a\n  b");
}

TEST(JinjaFilters, NumberFilters) {
  EXPECT_EQ(render("{{ '42'|int + 1 }} {{ 'x'|int }} {{ 3.9|int }} {{ '2.5'|float }} {{ -3|abs }}"),
            "43 0 3 2.5 3");
  EXPECT_EQ(render("{{ 2.675|round(2) }} {{ 2.5|round }} {{ 3.14159|round(1, 'ceil') }} {{ 7|round }}"),
            "2.67 2.0 3.2 7");
}

TEST(JinjaFilters, DefaultAndLength) {
  EXPECT_EQ(render("{{ nope|default('d') }} {{ ''|default('d') }} {{ ''|d('d', true) }} {{ [1, 2]|length }} "
                   "{{ {'a': 1}|count }} {{ 'héllo'|length }}"),
            "d  d 2 1 5");
}

TEST(JinjaFilters, SequenceFilters) {
  const char* users = R"({"users": [{"name": "bob", "age": 30, "admin": true}, {"name": "Al", "age": 25}]})";
  EXPECT_EQ(
      render("{{ users|selectattr('admin')|map(attribute='name')|list }} "
             "{{ users|rejectattr('admin')|map(attribute='name')|join(',') }} "
             "{{ users|selectattr('age', 'lt', 28)|list|length }} {{ users|sort(attribute='age')|first }}",
             users),
      "['bob'] Al 1 {'name': 'Al', 'age': 25}");
  EXPECT_EQ(render("{{ [1, 2, 3]|select('odd')|list }} {{ [1, 2, 3]|reject('odd')|list }} {{ "
                   "['a']|map('upper')|list }}"),
            "[1, 3] [2] ['A']");
  EXPECT_EQ(render("{{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} {{ ['b', 'A', 'a']|sort }} "
                   "{{ [1, 2]|reverse|list }} {{ 'ab'|reverse }}"),
            "[1, 2, 3] [3, 2, 1] ['A', 'a', 'b'] [2, 1] ba");
  EXPECT_EQ(
      render("{{ ['a', 'A', 'b']|unique|list }} {{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'ab'|list }} "
             "{{ [1, 2, 3]|join('-') }}"),
      "['a', 'b'] 1 3 ['a', 'b'] 1-2-3");
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|dictsort }} {{ {'b': 1}|items|list }} {{ [1, 2, 3]|batch(2)|list }}"),
            "[('a', 2), ('b', 1)] [('b', 1)] [[1, 2], [3]]");
  EXPECT_THROW(render("{{ 1|nosuchfilter }}"), TemplateError);
}

TEST(JinjaTests, TypeTests) {
  EXPECT_EQ(render("{{ 1 is number }} {{ true is number }} {{ true is integer }} {{ 1.0 is float }} {{ 's' "
                   "is string }} "
                   "{{ {} is mapping }} {{ [] is iterable }} {{ 'x' is sequence }} {{ none is none }} {{ "
                   "true is boolean }}"),
            "True True False True True True True True True True");
  EXPECT_EQ(render("{{ range is callable }} {{ true is true }} {{ 1 is true }} {{ false is false }}"),
            "True True False True");
}

TEST(JinjaTests, ComparisonTests) {
  EXPECT_EQ(
      render(
          "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 3 is equalto 3 }} {{ 3 is eq 3 }} "
          "{{ 3 is ne 3 }} {{ 3 is gt 2 }} {{ 3 is ge 4 }} {{ 3 is lt 4 }} {{ 3 is le 2 }} {{ 2 is in [2] }} "
          "{{ none is sameas none }} {{ x is not defined }}"),
      "True True True True True False True False True False True True True");
}

}  // namespace
}  // namespace moe::jinja
