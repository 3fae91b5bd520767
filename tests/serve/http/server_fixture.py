"""Starts `moe serve` on a tiny random model (made with moe gen-model + moe gen-tokenizer) on 127.0.0.1 and a
port the server itself picks (--port 0, read back from its "listening on" line: picking a free port here and
passing it on could lose it to another process in between), and always stops it. Shared by the server tests."""
import itertools
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request


def make_tiny_model(moe, workdir):
    model = os.path.join(workdir, "tiny-model")
    if not os.path.exists(os.path.join(model, "tokenizer.json")):
        subprocess.run([moe, "gen-model", "--out", model, "--shape", "tiny", "--quiet"], check=True)
        subprocess.run([moe, "gen-tokenizer", "--out", model, "--quiet"], check=True)
    return model


_servers = itertools.count()


class Server:
    def __init__(self, moe, model, workdir, name="tiny", extra=()):
        self.port = None
        self.log_path = os.path.join(workdir, f"serve-{os.getpid()}-{next(_servers)}.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [moe, "serve", "--model", model, "--host", "127.0.0.1", "--port", "0",
             "--served-model-name", name, "--quiet", *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"moe serve exited with {self.proc.returncode}:\n{self.read_log()}")
            if self.port is None:
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.read_log())
                if m:
                    self.port = int(m.group(1))
                    self.base = f"http://127.0.0.1:{self.port}"
            if self.port is not None:
                try:
                    if self.get("/health")[0] == 200:
                        return
                except OSError:
                    pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("moe serve did not answer /health within 30 s")

    def read_log(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def request(self, method, path, body=None, raw=None, timeout=60):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body=None, raw=None):
        status, text = self.request("POST", path, body, raw)
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
