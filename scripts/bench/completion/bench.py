#!/usr/bin/env python3
"""Completion bench: holes cut from real files of public repositories, replayed over LSP as a
user typing (5 characters a second) against `patchwise serve` with the shipped [completion]
defaults, beside the plain baseline (prefix + suffix only, llama.vim's 256 lines before and 64
after, Qwen's FIM tokens) sent straight to the same /v1/completions server.

  scripts/bench/completion/bench.py cut   MIRRORS_DIR > scripts/bench/completion/holes.json
  flock /tmp/patchwise-model.lock scripts/bench/completion/bench.py run \
      scripts/bench/completion/holes.json MIRRORS_DIR --binary target/debug/patchwise

Only the hole data is kept here (repository, commit, path, line, expected text); the files are
read from the repositories' checkouts (`git show COMMIT:PATH` in MIRRORS_DIR/owner+name/repo).

A hole: the cursor at the first non-blank character of a line; the expected text is the rest of
that line. The user types its first TYPED characters one by one; each keystroke sends
didChange + inlineCompletion without waiting (as an editor does). Scored: the suggestion shown
after the last keystroke (its first line) against what is left of the expected line.
"""
import difflib
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

REPOS = [
    ("psf/requests", "python", "src/requests/", ".py"),
    ("BurntSushi/walkdir", "rust", "src/", ".rs"),
    ("sindresorhus/ky", "typescript", "source/", ".ts"),
]
TYPED = 3
KEY_INTERVAL = 0.2  # 5 characters a second
URL = os.environ.get("PW_BENCH_URL", "http://127.0.0.1:8088/v1")
MODEL = "qwen2.5-coder-1.5b"


def git(repo_dir, *args):
    return subprocess.run(["git", "--git-dir", repo_dir, *args], capture_output=True, text=True, check=True).stdout


def cut(mirrors, per_repo):
    rng = random.Random(37)
    holes = []
    for name, lang, under, ext in REPOS:
        repo_dir = os.path.join(mirrors, name.replace("/", "+"), "repo")
        commit = git(repo_dir, "rev-parse", "HEAD").strip()
        paths = [p for p in git(repo_dir, "ls-tree", "-r", "--name-only", commit).split("\n")
                 if p.startswith(under) and p.endswith(ext) and "test" not in p]
        candidates = []
        for path in paths:
            text = git(repo_dir, "show", f"{commit}:{path}")
            for number, line in enumerate(text.split("\n")):
                body = line.strip()
                if len(body) < 12 or body.startswith(("#", "//", "/*", "*", '"""')) or number < 5:
                    continue
                candidates.append((path, number, body))
        for path, number, body in rng.sample(candidates, min(per_repo, len(candidates))):
            holes.append({"repo": name, "commit": commit, "language": lang, "path": path,
                          "line": number, "expected": body})
    return holes


class Lsp:
    def __init__(self, binary, config, workdir):
        env = dict(os.environ, XDG_CONFIG_HOME=os.path.join(workdir, "config"))
        self.proc = subprocess.Popen([binary, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(os.path.join(workdir, "server.log"), "w"), env=env)
        self.next_id = 0
        self.answers = {}
        self.cond = threading.Condition()
        threading.Thread(target=self.read, daemon=True).start()
        self.request("initialize", {"processId": None, "rootUri": "file://" + workdir, "capabilities": {},
                                    "initializationOptions": config})
        self.notify("initialized", {})

    def send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self):
        out = self.proc.stdout
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            message = json.loads(out.read(length))
            if "id" in message and "method" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "id" in message:
                with self.cond:
                    self.answers[message["id"]] = (time.monotonic(), message)
                    self.cond.notify_all()

    def send_request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def wait(self, ident, timeout=120):
        deadline = time.monotonic() + timeout
        with self.cond:
            while ident not in self.answers:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.answers[ident]

    def request(self, method, params):
        return self.wait(self.send_request(method, params))[1]

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})


def first_line(text):
    return (text or "").split("\n")[0].strip()


def score(suggestion, expected):
    got = first_line(suggestion)
    return got == expected.strip(), difflib.SequenceMatcher(None, got, expected.strip()).ratio()


def baseline(prefix, suffix):
    before = "\n".join(prefix.split("\n")[-256:])
    after = "\n".join(suffix.split("\n")[:64])
    body = {"model": MODEL, "prompt": f"<|fim_prefix|>{before}<|fim_suffix|>{after}<|fim_middle|>",
            "max_tokens": 64, "temperature": 0, "stop": ["<|endoftext|>", "<|file_sep|>", "\n"],
            "cache_prompt": True}
    start = time.monotonic()
    request = urllib.request.Request(URL + "/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    answer = json.load(urllib.request.urlopen(request, timeout=180))
    latency = time.monotonic() - start
    return answer["choices"][0]["text"], latency, answer.get("timings", {}).get("prompt_n")


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def run(holes_file, mirrors, binary, limit):
    holes = json.load(open(holes_file))
    if limit:
        # The same share of each language.
        by_language = {}
        for hole in holes:
            by_language.setdefault(hole["language"], []).append(hole)
        holes = [h for group in zip(*by_language.values()) for h in group][:limit]
    workdir = tempfile.mkdtemp(prefix="pw-complete-bench-")
    config = {"providers": {"local": {"kind": "openai", "base_url": URL, "api_key_env": ""}},
              "roles": {"completion": f"local/{MODEL}"}, "data_dir": os.path.join(workdir, "data")}
    lsp = Lsp(binary, config, workdir)
    rows = []
    for n, hole in enumerate(holes):
        repo_dir = os.path.join(mirrors, hole["repo"].replace("/", "+"), "repo")
        text = git(repo_dir, "show", f"{hole['commit']}:{hole['path']}")
        lines = text.split("\n")
        line = lines[hole["line"]]
        indent = line[: len(line) - len(line.lstrip())]
        prefix = "\n".join(lines[: hole["line"]]) + "\n" + indent
        suffix = "\n" + "\n".join(lines[hole["line"] + 1:])
        uri = "file://" + os.path.join(workdir, hole["repo"].replace("/", "_"), hole["path"])
        lsp.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": hole["language"],
                                                              "version": 1, "text": prefix + suffix}})
        row_line = hole["line"]
        col = len(indent)
        typed = hole["expected"][:TYPED]
        sent = []
        for i, ch in enumerate(typed):
            lsp.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": i + 2},
                "contentChanges": [{"range": {"start": {"line": row_line, "character": col + i},
                                              "end": {"line": row_line, "character": col + i}}, "text": ch}]})
            ident = lsp.send_request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": {"line": row_line, "character": col + i + 1},
                "context": {"triggerKind": 2}})
            sent.append((ident, time.monotonic()))
            time.sleep(KEY_INTERVAL)
        latencies = []
        final = ""
        for k, (ident, at) in enumerate(sent):
            answer = lsp.wait(ident)
            if answer is None:
                continue
            when, message = answer
            items = message.get("result") or []
            items = items.get("items", []) if isinstance(items, dict) else items
            if items:
                latencies.append(when - at)
            if k == len(sent) - 1:
                final = items[0]["insertText"] if items else ""
        lsp.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        rest = hole["expected"][TYPED:]
        exact, similarity = score(final, rest)
        base_text, base_latency, base_prompt = baseline(prefix + typed, suffix)
        base_exact, base_similarity = score(base_text, rest)
        rows.append({"hole": n, "language": hole["language"], "exact": exact, "similarity": similarity,
                     "latencies": latencies, "base_exact": base_exact, "base_similarity": base_similarity,
                     "base_latency": base_latency, "base_prompt_tokens": base_prompt})
        print(json.dumps(rows[-1]), file=sys.stderr)
    lsp.request("shutdown", None)
    lsp.notify("exit", None)
    pw_lat = [l for r in rows for l in r["latencies"]]
    base_lat = [r["base_latency"] for r in rows]
    summary = {
        "holes": len(rows),
        "patchwise": {"exact": sum(r["exact"] for r in rows) / len(rows),
                      "similarity": sum(r["similarity"] for r in rows) / len(rows),
                      "p50_s": percentile(pw_lat, 50), "p95_s": percentile(pw_lat, 95),
                      "answered_keystrokes": len(pw_lat), "keystrokes": len(rows) * TYPED},
        "baseline": {"exact": sum(r["base_exact"] for r in rows) / len(rows),
                     "similarity": sum(r["base_similarity"] for r in rows) / len(rows),
                     "p50_s": percentile(base_lat, 50), "p95_s": percentile(base_lat, 95),
                     "prompt_tokens_evaluated_mean": sum(r["base_prompt_tokens"] or 0 for r in rows) / len(rows)},
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    if sys.argv[1] == "cut":
        print(json.dumps(cut(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 70), indent=1))
    else:
        binary = sys.argv[sys.argv.index("--binary") + 1] if "--binary" in sys.argv else "patchwise"
        limit = int(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else 0
        run(sys.argv[2], sys.argv[3], binary, limit)
