#!/usr/bin/env python3
"""Renders chat templates with Python jinja2 (set up as transformers does) and with our interpreter
(through jinja_render_cli) and requires byte-identical output, or an error on both sides.

Cases: the real templates in ../shared/fixtures/chat-templates over many conversations and kwargs, plus
small synthetic templates covering every filter, test and statement we support.
Exit 77 (CTest skip) when ../shared or jinja2 is absent.
"""
import argparse
import copy
import itertools
import json
import os
import subprocess
import sys

SKIP = 77
NOW = 1754560800  # 2025-08-07 10:00:00 UTC, what strftime_now() reports on both sides

try:
    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("SKIP: Python jinja2 is not installed")
    sys.exit(SKIP)

from datetime import datetime, timezone
from synthetic_cases import SYNTHETIC_CASES  # noqa: E402  (same folder)


class RaisedByTemplate(jinja2.exceptions.TemplateError):
    pass


class GenerationTracker(Extension):
    """transformers' AssistantTracker without the mask bookkeeping: {% generation %} renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_environment():
    def raise_exception(message):
        raise RaisedByTemplate(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.fromtimestamp(NOW, tz=timezone.utc).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


_compiled = {}


def render_python(env, template, context):
    try:
        if template not in _compiled:
            _compiled[template] = env.from_string(template)
        return {"output": _compiled[template].render(**context)}
    except RaisedByTemplate as e:
        return {"error": str(e), "raised": True}
    except Exception as e:  # noqa: BLE001 - any jinja2/Python error must be an error on our side too
        return {"error": f"{type(e).__name__}: {e}", "raised": False}


# ---------------------------------------------------------------------------------------------------------
# Conversations for the real templates.

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Paris"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                "days": {"type": "integer", "description": "Forecast days", "default": 1},
                "hourly": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "scores": {"type": "array", "items": {"type": "number"}, "nullable": True},
                "anything": {"type": "array"},
                "point": {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
                          "required": ["lat"]},
                "mixed": {"type": ["string", "integer"]},
                "choice": {"oneOf": [{"type": "string", "description": "a name"}, {"type": "integer"}]},
                "nested": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
                "ratio": {"type": "number", "default": 0.5},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web — returns “snippets”",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}
NO_PARAMS_TOOL = {"type": "function", "function": {"name": "now", "description": "Current time", "parameters": {}}}


def tool_call(name, arguments, as_string):
    return {"type": "function", "id": "call_1",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False) if as_string else arguments}}


def conversations():
    sys_msg = {"role": "system", "content": "You are a helpful assistant."}
    user = {"role": "user", "content": "What is the capital of France?"}
    assistant = {"role": "assistant", "content": "Paris."}
    convs = {
        "single_user": [user],
        "system_user": [sys_msg, user],
        "two_systems": [sys_msg, {"role": "system", "content": "Be brief."}, user],
        "multi_turn": [sys_msg, user, assistant, {"role": "user", "content": "And of Germany?"}],
        "ends_with_assistant": [user, assistant],
        "unicode": [{"role": "user", "content": "Ünïcödé — 日本語 😀 \"quotes\" and \\backslash\n\ttab"},
                    {"role": "assistant", "content": "Ответ: ✓"}],
        "empty_content": [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}],
        "reasoning_content": [user, {"role": "assistant", "content": "Paris.", "reasoning_content": "The user asks..."},
                              {"role": "user", "content": "Sure?"}],
        "think_in_content": [user, {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nParis."},
                             {"role": "user", "content": "Thanks"}],
        "last_assistant_reasoning": [user, {"role": "assistant", "content": "Paris.", "reasoning_content": "easy"}],
        "gpt_oss_thinking": [user, {"role": "assistant", "content": "Paris.", "thinking": "Recall geography."}],
        "developer": [{"role": "developer", "content": "Answer in French."}, user],
        "channel_tags_error": [user, {"role": "assistant", "content": "<|channel|>analysis<|message|>x"}],
        "orphan_tool_error": [user, {"role": "tool", "content": "42"}],
        "prefix": [user, {"role": "assistant", "content": "Par", "prefix": True}],
    }
    for as_string in (False, True):
        suffix = "_str_args" if as_string else "_dict_args"
        call = tool_call("get_weather", {"city": "Paris", "unit": "celsius"}, as_string)
        convs["tool_call" + suffix] = [
            sys_msg, {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": "{\"temp\": 21}"},
        ]
        # OpenAI clients send content null next to tool_calls; Qwen3 and gpt-oss then fail in jinja2 too.
        convs["tool_call_null_content" + suffix] = [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "content": "sunny"},
        ]
        convs["tool_call_then_answer" + suffix] = convs["tool_call" + suffix] + [
            {"role": "assistant", "content": "It is 21°C in Paris."},
            {"role": "user", "content": "Thanks!"},
        ]
        convs["tool_call_with_text" + suffix] = [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": "Let me check.", "tool_calls": [call]},
            {"role": "tool", "content": "sunny"},
        ]
        convs["two_tool_calls" + suffix] = [
            {"role": "user", "content": "Weather and search?"},
            {"role": "assistant", "content": "", "tool_calls": [call, tool_call("search", {"query": "Paris"}, as_string)]},
            {"role": "tool", "content": "sunny"},
            {"role": "tool", "content": "results"},
        ]
        convs["tool_call_thinking" + suffix] = [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "thinking": "Need the tool.", "tool_calls": [call]},
            {"role": "tool", "content": "sunny"},
        ]
    convs["tool_response_as_user"] = [
        {"role": "user", "content": "Hi"},
        {"role": "user", "content": "<tool_response>\nok\n</tool_response>"},
    ]
    return convs


def template_kwargs(name):
    """The chat_template_kwargs each template understands; None means the key is left out."""
    if name.startswith("Qwen3"):
        return [{}, {"enable_thinking": True}, {"enable_thinking": False}]
    if name.startswith("DeepSeek"):
        return [{}, {"thinking": True}, {"thinking": False}]
    if name.startswith("gpt-oss"):
        return [{}, {"reasoning_effort": "low"}, {"reasoning_effort": "high", "model_identity": "You are Moe."},
                {"builtin_tools": ["browser", "python"]}]
    return [{}]


def real_template_cases(template_dir):
    cases = []
    convs = conversations()
    tools_options = [None, [WEATHER_TOOL, SEARCH_TOOL, NO_PARAMS_TOOL]]
    for file in sorted(os.listdir(template_dir)):
        if not file.endswith(".jinja"):
            continue
        with open(os.path.join(template_dir, file), encoding="utf-8") as f:
            template = f.read()
        for (conv_name, messages), tools, add_gen, kwargs in itertools.product(
                convs.items(), tools_options, (False, True), template_kwargs(file)):
            context = {"messages": copy.deepcopy(messages), "tools": tools, "documents": None,
                       "add_generation_prompt": add_gen, "bos_token": "<s>", "eos_token": "</s>", **kwargs}
            label = f"{file} | {conv_name} | tools={tools is not None} | add_generation_prompt={add_gen} | {kwargs}"
            cases.append((label, template, context))
    return cases


def run_ours(cli, cases):
    payload = [{"template": t, "context": c, "now": NOW} for _, t, c in cases]
    proc = subprocess.run([cli], input=json.dumps(payload, ensure_ascii=False).encode(), capture_output=True,
                          timeout=600)
    if proc.returncode != 0:
        print(proc.stderr.decode(errors="replace"))
        sys.exit(1)
    return json.loads(proc.stdout)


def compare(env, cli, cases, title):
    ours = run_ours(cli, cases)
    failures = 0
    errors_both = 0
    for (label, template, context), mine in zip(cases, ours):
        theirs = render_python(env, template, context)
        if "error" in theirs or "error" in mine:
            same = "error" in theirs and "error" in mine and theirs["raised"] == mine["raised"]
            errors_both += same
        else:
            same = theirs["output"] == mine["output"]
        if not same:
            failures += 1
            if failures <= 15:
                print(f"MISMATCH [{title}] {label}")
                print(f"  jinja2: {json.dumps(theirs, ensure_ascii=False)[:1500]}")
                print(f"  ours:   {json.dumps(mine, ensure_ascii=False)[:1500]}")
    print(f"{title}: {len(cases) - failures}/{len(cases)} match jinja2 ({errors_both} are errors on both sides)")
    return failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--templates", required=True)
    args = ap.parse_args()
    env = make_environment()

    failures = compare(env, args.cli, [(f"#{i} {t!r}", t, c) for i, (t, c) in enumerate(SYNTHETIC_CASES)],
                       "synthetic templates")
    if not os.path.isdir(args.templates):
        print(f"SKIP: ../shared is absent ({args.templates} not found); synthetic cases were still compared")
        return 1 if failures else SKIP
    failures += compare(env, args.cli, real_template_cases(args.templates), "real chat templates")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
