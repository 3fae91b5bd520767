"""End-to-end tests of `moe serve` on a tiny random model, through the official openai client and raw HTTP.
All traffic stays on 127.0.0.1; every server started here is stopped.

usage: test_server.py --moe BUILD/moe --workdir DIR
"""
import argparse
import concurrent.futures as cf
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback

import openai

from server_fixture import Server, make_tiny_model

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def client(srv):
    return openai.OpenAI(base_url=srv.base + "/v1", api_key="none", timeout=60, max_retries=0)


def assert_error(status, body, want_status, param=None):
    assert status == want_status, f"expected {want_status}, got {status}: {body}"
    assert isinstance(body, dict) and set(body["error"]) >= {"message", "type", "param", "code"}, body
    assert body["error"]["message"], body
    if param:
        assert body["error"]["param"] == param, body


def greedy_generate(srv, ids, n_new=12, **extra):
    status, r = srv.post("/generate", {"input_ids": ids, "sampling_params": {"temperature": 0, "max_new_tokens": n_new,
                                                                           "ignore_eos": True}, **extra})
    assert status == 200, r
    return r


PROMPT_IDS = [(i * 37 + 11) % 400 + 1 for i in range(40)]


@test
def chat_basic(srv):
    r = client(srv).chat.completions.create(model="tiny", messages=[{"role": "user", "content": "Hello there"}],
                                            max_tokens=8, temperature=0)
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl") and r.model == "tiny"
    c = r.choices[0]
    assert c.index == 0 and c.message.role == "assistant" and isinstance(c.message.content, str)
    assert c.finish_reason in ("stop", "length")
    assert r.usage.prompt_tokens > 0 and 1 <= r.usage.completion_tokens <= 8
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    # content parts are flattened to the same prompt
    r2 = client(srv).chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": [{"type": "text", "text": "Hello "},
                                                             {"type": "text", "text": "there"}]}],
        max_tokens=8, temperature=0)
    assert r2.choices[0].message.content == c.message.content


@test
def completions_and_stream_match(srv):
    cl = client(srv)
    full = cl.completions.create(model="tiny", prompt="Once upon a time", max_tokens=10, temperature=0,
                                 extra_body={"ignore_eos": True})
    assert full.object == "text_completion" and full.usage.completion_tokens == 10
    assert full.choices[0].finish_reason == "length"
    chunks = list(cl.completions.create(model="tiny", prompt="Once upon a time", max_tokens=10, temperature=0,
                                        stream=True, stream_options={"include_usage": True},
                                        extra_body={"ignore_eos": True}))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == full.choices[0].text, (text, full.choices[0].text)
    assert chunks[-1].usage.completion_tokens == 10 and not chunks[-1].choices
    # token-id prompt
    ids = cl.completions.create(model="tiny", prompt=PROMPT_IDS[:8], max_tokens=3, temperature=0)
    assert ids.usage.prompt_tokens == 8


@test
def chat_stream(srv):
    cl = client(srv)
    msgs = [{"role": "user", "content": "Tell me a story"}]
    full = cl.chat.completions.create(model="tiny", messages=msgs, max_tokens=12, temperature=0)
    stream = cl.chat.completions.create(model="tiny", messages=msgs, max_tokens=12, temperature=0, stream=True,
                                        stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == full.choices[0].message.content
    finals = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finals == [full.choices[0].finish_reason]
    assert chunks[-1].usage.completion_tokens == full.usage.completion_tokens


@test
def logprobs(srv):
    cl = client(srv)
    r = cl.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=6,
                                   temperature=0, logprobs=True, top_logprobs=3, extra_body={"ignore_eos": True})
    content = r.choices[0].logprobs.content
    assert len(content) == 6
    for t in content:
        assert t.logprob <= 0 and len(t.top_logprobs) == 3 and bytes(t.bytes).decode("utf-8", "replace") is not None
        tops = [x.logprob for x in t.top_logprobs]
        assert tops == sorted(tops, reverse=True)
        assert abs(t.logprob - tops[0]) < 1e-4, "greedy picks the most likely token"
    c = cl.completions.create(model="tiny", prompt="abc", max_tokens=4, temperature=0, logprobs=2,
                              extra_body={"ignore_eos": True})
    lp = c.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == 4
    assert all(len(t) <= 2 for t in lp.top_logprobs) and all(v <= 0 for v in lp.token_logprobs)


@test
def stop_strings(srv):
    cl = client(srv)
    base = cl.completions.create(model="tiny", prompt="The weather", max_tokens=24, temperature=0,
                                 extra_body={"ignore_eos": True}).choices[0].text
    cands = [i for i in range(2, len(base) - 3) if base[i:i + 2].isascii() and base[i:i + 2].strip()]
    assert cands, f"no usable stop string in {base!r}"
    stop = base[cands[0]:cands[0] + 2]
    r = cl.completions.create(model="tiny", prompt="The weather", max_tokens=24, temperature=0, stop=[stop],
                              extra_body={"ignore_eos": True})
    assert r.choices[0].text == base[:base.find(stop)], (r.choices[0].text, base, stop)
    assert r.choices[0].finish_reason == "stop"


@test
def n_and_seed(srv):
    cl = client(srv)
    kw = dict(model="tiny", messages=[{"role": "user", "content": "pick"}], max_tokens=8, temperature=1.0, seed=7,
              extra_body={"ignore_eos": True})
    a = cl.chat.completions.create(n=3, **kw)
    assert [c.index for c in a.choices] == [0, 1, 2]
    assert a.usage.completion_tokens == 24 and all(c.finish_reason == "length" for c in a.choices)
    b = cl.chat.completions.create(**kw)
    c = cl.chat.completions.create(**kw)
    assert b.choices[0].message.content == c.choices[0].message.content, "same seed, same sample"


@test
def concurrent_64(srv):
    cl = client(srv)

    def one(i):
        r = cl.chat.completions.create(model="tiny", messages=[{"role": "user", "content": f"client {i}"}],
                                       max_tokens=4, temperature=0.5, seed=i)
        return r.choices[0].finish_reason

    with cf.ThreadPoolExecutor(64) as pool:
        reasons = list(pool.map(one, range(64), timeout=60))
    assert len(reasons) == 64 and all(r in ("stop", "length") for r in reasons)


@test
def bad_requests(srv):
    s, b = srv.post("/v1/chat/completions", raw=b'{"messages": [')
    assert_error(s, b, 400)
    s, b = srv.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "max_tokens": "ten"})
    assert_error(s, b, 400, "max_tokens")
    s, b = srv.post("/v1/chat/completions", {"messages": 5})
    assert_error(s, b, 400, "messages")
    s, b = srv.post("/v1/completions", {"prompt": "x", "temperature": "hot"})
    assert_error(s, b, 400, "temperature")
    s, b = srv.post("/v1/completions", {"max_tokens": 3})
    assert_error(s, b, 400, "prompt")
    s, b = srv.post("/v1/completions", {"prompt": "hello " * 6000, "max_tokens": 3})
    assert_error(s, b, 400)
    assert "context" in b["error"]["message"]
    s, b = srv.post("/generate", {"input_ids": [1, 2, 99999]})
    assert_error(s, b, 400, "input_ids")
    s, b = srv.post("/v1/chat/completions", {"model": "gpt-4", "messages": [{"role": "user", "content": "x"}]})
    assert_error(s, b, 404, "model")
    try:
        client(srv).chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
        raise AssertionError("unknown model accepted")
    except openai.NotFoundError:
        pass
    s, b = srv.post("/v1/nothing-here", {})
    assert_error(s, b, 404)
    s, b = srv.request("GET", "/v1/chat/completions")
    assert s in (404, 405) and "error" in json.loads(b)
    # and the server keeps serving
    r = client(srv).completions.create(model="tiny", prompt="still there?", max_tokens=2)
    assert r.choices[0].finish_reason in ("stop", "length")


@test
def hostile_requests(srv):
    """What a fuzz run found (session 18): each is a clear 4xx, and the server keeps serving."""
    chat = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 2}
    # 12000 levels of nesting in 24 KB crashed the server (stack overflow in the code that walks the JSON).
    deep = b'{"max_tokens": 2, "messages": [{"role": "user", "content": "x", "x": ' + b"[" * 12000 + b"]" * 12000 + b"}]}"
    s, b = srv.post("/v1/chat/completions", raw=deep)
    assert_error(s, b, 400)
    assert "nests deeper" in b["error"]["message"], b
    s, b = srv.post("/v1/chat/completions", raw=b'{"tools": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5000 + b"}")
    assert_error(s, b, 400)
    # A number no double holds was a 500.
    s, b = srv.post("/v1/completions", raw=b'{"prompt": "x", "max_tokens": 1e309}')
    assert_error(s, b, 400)
    # uint64's largest read as -1 and was accepted; an explicit -1 too.
    s, b = srv.post("/v1/completions", raw=b'{"prompt": "x", "max_tokens": 18446744073709551615}')
    assert_error(s, b, 400, "max_tokens")
    s, b = srv.post("/v1/chat/completions", dict(chat, max_tokens=-1))
    assert_error(s, b, 400, "max_tokens")
    s, b = srv.post("/v1/chat/completions", dict(chat, top_k=-5))
    assert_error(s, b, 400, "top_k")
    s, b = srv.post("/v1/chat/completions", dict(chat, top_k=4294967297, temperature=0))
    assert s == 200, b
    # logprob_start_len at or past the prompt's end: no prompt logprobs, not a 400.
    s, b = srv.post("/generate", {"text": "hi there", "return_logprob": True, "logprob_start_len": 1000,
                                  "sampling_params": {"max_new_tokens": 2}})
    assert s == 200, b
    assert len(b["meta_info"]["output_token_logprobs"]) == 2, b
    # HTTP-level errors keep their status (they were all 404 "no route"): a body over the 64 MB limit, a URI
    # too long.
    over = 65 << 20
    s, b = raw_http(srv.port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                              b"Content-Length: %d\r\n\r\n" % over + b"x" * over)
    assert_error(s, b, 413)
    s, b = srv.request("GET", "/health?" + "a" * 20000)
    assert_error(s, json.loads(b), 414)
    # and the server keeps serving
    assert srv.request("GET", "/health")[0] == 200
    r = client(srv).completions.create(model="tiny", prompt="still there?", max_tokens=2)
    assert r.choices[0].finish_reason in ("stop", "length")


def raw_http(port, data, timeout=30):
    """Sends raw bytes, returns (status, JSON body) of the reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        reply = b""
        while b"\r\n\r\n" not in reply or len(reply) < reply.find(b"\r\n\r\n") + 4 + content_length(reply):
            chunk = sock.recv(65536)
            if not chunk:
                break
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body)


def content_length(reply):
    m = re.search(rb"(?i)content-length: *(\d+)", reply)
    return int(m.group(1)) if m else 0


def port_in_use(moe, model, workdir):
    """A second server on a port in use fails to start (httplib's SO_REUSEPORT let it share the port), and
    fails before it loads the model (which can take minutes); so does an address this machine does not have."""
    with Server(moe, model, workdir) as srv:
        second = subprocess_run_serve(moe, model, "127.0.0.1", srv.port)
        assert second.returncode != 0, second.stderr[-2000:]
        assert f"cannot listen on 127.0.0.1:{srv.port}" in second.stderr, second.stderr[-2000:]
        assert "serve: loading" not in second.stderr, second.stderr[-2000:]
        assert srv.request("GET", "/health")[0] == 200
    bad_host = subprocess_run_serve(moe, model, "192.0.2.1", 30123)
    assert bad_host.returncode != 0, bad_host.stderr[-2000:]
    assert "cannot listen on 192.0.2.1:30123" in bad_host.stderr, bad_host.stderr[-2000:]
    assert "serve: loading" not in bad_host.stderr, bad_host.stderr[-2000:]


def subprocess_run_serve(moe, model, host, port):
    try:
        return subprocess.run([moe, "serve", "--model", model, "--host", host, "--port", str(port)],
                              capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"a second server on {host}:{port} kept running: {e.stderr}")


def metric(text, name):
    m = re.search(r"^" + re.escape(name) + r"(?:\{[^}]*\})? ([0-9.e+-]+)$", text, re.M)
    return float(m.group(1)) if m else None


@test
def disconnect_cancels(srv):
    before = srv.get("/metrics")[1]
    aborted0 = metric(before, "moe_requests_aborted_total")
    body = json.dumps({"prompt": "go on", "max_tokens": 3000, "ignore_eos": True, "stream": True}).encode()
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    got = b""
    while b"data:" not in got:
        got += sock.recv(4096)
    sock.close()  # mid-stream
    deadline = time.time() + 15
    while time.time() < deadline:
        text = srv.get("/metrics")[1]
        if (metric(text, "moe_client_disconnects_total") >= 1 and metric(text, "moe_requests_aborted_total") > aborted0
                and metric(text, "moe_num_running_reqs") == 0):
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the dropped stream was not cancelled:\n" + text)
    r = client(srv).completions.create(model="tiny", prompt="after the drop", max_tokens=2)
    assert r.usage.completion_tokens >= 1


@test
def batch_and_prefix_cache_invariance(srv):
    srv.post("/flush_cache")
    alone = greedy_generate(srv, PROMPT_IDS, return_logprob=True)
    others = [[(i * 13 + k * 7) % 450 + 1 for i in range(20 + 5 * k)] for k in range(7)]
    with cf.ThreadPoolExecutor(8) as pool:
        futs = [pool.submit(greedy_generate, srv, PROMPT_IDS, 12, return_logprob=True)]
        futs += [pool.submit(greedy_generate, srv, p) for p in others]
        batched = futs[0].result(timeout=60)
        for f in futs[1:]:
            f.result(timeout=60)
    assert batched["output_ids"] == alone["output_ids"], "greedy output changed inside a batch"
    again = greedy_generate(srv, PROMPT_IDS, return_logprob=True)
    assert again["meta_info"]["cached_tokens"] > 0, again["meta_info"]
    assert again["output_ids"] == alone["output_ids"], "greedy output changed with a prefix-cache hit"
    for a, b in zip(alone["meta_info"]["output_token_logprobs"], again["meta_info"]["output_token_logprobs"]):
        assert a[1] == b[1] and abs(a[0] - b[0]) < 1e-3, (a, b)


@test
def generate_logprob_shapes(srv):
    r = greedy_generate(srv, PROMPT_IDS[:10], 5, return_logprob=True, logprob_start_len=0, top_logprobs_num=2)
    m = r["meta_info"]
    assert m["prompt_tokens"] == 10 and m["completion_tokens"] == 5 and len(r["output_ids"]) == 5
    assert m["finish_reason"]["type"] == "length"
    inp, out = m["input_token_logprobs"], m["output_token_logprobs"]
    assert len(inp) == 10 and inp[0][0] is None and [t[1] for t in inp] == PROMPT_IDS[:10]
    assert all(isinstance(t[0], float) and t[0] <= 0 and t[2] is None for t in inp[1:])
    assert [t[1] for t in out] == r["output_ids"] and all(len(t) == 3 and t[2] is None for t in out)
    assert m["input_top_logprobs"][0] is None and all(len(x) == 2 for x in m["input_top_logprobs"][1:])
    assert len(m["output_top_logprobs"]) == 5 and all(len(x) == 2 for x in m["output_top_logprobs"])
    # text input, streaming, cumulative chunks
    status, text = srv.request("POST", "/generate", {"text": "stream me", "stream": True,
                                                     "sampling_params": {"max_new_tokens": 4, "ignore_eos": True}})
    assert status == 200
    events = [json.loads(line[6:]) for line in text.split("\n\n") if line.startswith("data: {")]
    assert text.rstrip().endswith("data: [DONE]") and events[-1]["meta_info"]["completion_tokens"] == 4
    assert len(events[-1]["output_ids"]) == 4


@test
def info_endpoints(srv):
    models = client(srv).models.list()
    assert [m.id for m in models.data] == ["tiny"]
    s, t = srv.post("/tokenize", {"prompt": "hello world"})
    assert s == 200 and t["count"] == len(t["tokens"]) > 0
    s, d = srv.post("/detokenize", {"tokens": t["tokens"]})
    assert s == 200 and d["prompt"] == "hello world"
    s, info = srv.request("GET", "/get_server_info")
    assert s == 200 and json.loads(info)["context_length"] > 0
    s, _ = srv.post("/flush_cache")
    assert s == 200


@test
def metrics_format(srv):
    s, text = srv.get("/metrics")
    assert s == 200
    sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"]*",?)*\})? [-+0-9.eEInfa]+$')
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            continue
        assert sample.match(line), f"not Prometheus text: {line!r}"
    for name in ("moe_prompt_tokens_total", "moe_generation_tokens_total", "moe_num_running_reqs",
                 "moe_num_waiting_reqs", "moe_kv_cache_usage_ratio", "moe_prefix_cache_hit_rate",
                 "moe_tuned_config_fallbacks_total", "moe_time_to_first_token_seconds_count",
                 "moe_inter_token_latency_seconds_count"):
        assert metric(text, name) is not None, name
    assert metric(text, "moe_generation_tokens_total") > 0 and metric(text, "moe_time_to_first_token_seconds_count") > 0
    buckets = [float(v) for v in re.findall(r'^moe_time_to_first_token_seconds_bucket\{le="[^"]+"\} (\S+)$', text, re.M)]
    assert buckets == sorted(buckets) and buckets[-1] == metric(text, "moe_time_to_first_token_seconds_count")
    assert 'moe_http_requests_total{endpoint="/v1/chat/completions",status="400"}' in text


THINK_TEMPLATE = ("{%- for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
                  "{%- endfor %}{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}")


def reasoning_and_drain(moe, model, workdir):
    tmpl = os.path.join(workdir, "think.jinja")
    with open(tmpl, "w") as f:
        f.write(THINK_TEMPLATE)
    srv = Server(moe, model, workdir, extra=["--chat-template", tmpl])
    try:
        r = client(srv).chat.completions.create(model="tiny", messages=[{"role": "user", "content": "think"}],
                                                max_tokens=8, temperature=0, extra_body={"ignore_eos": True})
        msg = r.choices[0].message
        assert msg.content == "" and msg.reasoning_content, msg  # no </think> yet: all of it is reasoning
        # SIGTERM while a stream is in flight: it finishes, then the server exits 0.
        result = {}

        def stream():
            chunks = list(client(srv).completions.create(model="tiny", prompt="long", max_tokens=300, stream=True,
                                                         extra_body={"ignore_eos": True}))
            result["finish"] = [c.choices[0].finish_reason for c in chunks if c.choices][-1]

        t = threading.Thread(target=stream)
        t.start()
        deadline = time.time() + 10
        while "moe_num_running_reqs 1" not in srv.get("/metrics")[1] and time.time() < deadline:
            time.sleep(0.02)
        srv.proc.send_signal(signal.SIGTERM)
        t.join(30)
        assert result.get("finish") == "length", f"stream not drained: {result}"
        srv.proc.wait(20)
        assert srv.proc.returncode == 0, srv.read_log()
        assert "draining" in srv.read_log()
    finally:
        srv.stop()


def queue_full(moe, model, workdir):
    """A bounded queue: requests past --max-batch + --max-queue get a 503 in OpenAI's error shape."""
    with Server(moe, model, workdir, extra=["--max-batch", "1", "--max-queue", "1"]) as srv:
        body = {"prompt": "busy", "max_tokens": 200, "ignore_eos": True}
        with cf.ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: srv.post("/v1/completions", body), range(8), timeout=60))
        statuses = sorted(s for s, _ in answers)
        assert statuses.count(200) >= 2 and 503 in statuses, statuses
        for s, b in answers:
            if s == 503:
                assert_error(s, b, 503)
        assert srv.post("/v1/completions", {"prompt": "free again", "max_tokens": 2})[0] == 200


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moe", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("-k", default="")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    model = make_tiny_model(args.moe, args.workdir)
    failed = []
    t0 = time.time()
    with Server(args.moe, model, args.workdir) as srv:
        for fn in TESTS:
            if args.k and args.k not in fn.__name__:
                continue
            t = time.time()
            try:
                fn(srv)
                print(f"PASS {fn.__name__} ({time.time() - t:.1f} s)", flush=True)
            except Exception:
                failed.append(fn.__name__)
                print(f"FAIL {fn.__name__}\n{traceback.format_exc()}", flush=True)
        alive = srv.proc.poll() is None
        if not alive:
            failed.append("server died")
            print(srv.read_log()[-4000:])
    for fn in (queue_full, reasoning_and_drain, port_in_use):
        if args.k and args.k not in fn.__name__:
            continue
        t = time.time()
        try:
            fn(args.moe, model, args.workdir)
            print(f"PASS {fn.__name__} ({time.time() - t:.1f} s)", flush=True)
        except Exception:
            failed.append(fn.__name__)
            print(f"FAIL {fn.__name__}\n{traceback.format_exc()}", flush=True)
    print(f"{len(failed)} failed in {time.time() - t0:.1f} s: {failed}" if failed else
          f"all passed in {time.time() - t0:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
