#!/usr/bin/env python3
"""Completion bench: holes cut from real files of public repositories, replayed over LSP as a
user working down a file and typing (5 characters a second) against `patchwise serve` with the
shipped [completion] defaults, beside the plain baseline (prefix + suffix only, llama.vim's 256
lines before and 64 after, the model's FIM tokens) sent straight to the same model server.

  scripts/bench/completion/bench.py cut MIRRORS_DIR [FILES_PER_REPO] [HOLES_PER_FILE] \\
      > scripts/bench/completion/holes.json
  flock /tmp/patchwise-model.lock scripts/bench/completion/bench.py run \\
      scripts/bench/completion/holes.json MIRRORS_DIR --binary target/debug/patchwise \\
      --gguf "$(../shared/tools/local-model gguf 1.5b)" [--from K] [--files N] [--json OUT] \\
      [--ways patchwise,baseline] [--as NAME] [--completion JSON]

--ways picks the ways run (both by default); --as names the patchwise way's rows (two builds on
the same holes, e.g. `--ways patchwise --as patchwise-83a9f43`); --completion JSON sets
patchwise's `[completion]` section (e.g. `--completion '{"context_tokens": 2048}'`: a default
tried before it is changed).

  scripts/bench/completion/bench.py table ROWS.jsonl... [--by language]

prints the summary of recorded rows per way (and per language with --by language), counting only
the holes every way in the files has a row for, so a run cut short compares like with like.

The model server: with --gguf, the model inside patchwise (`[providers.local] kind =
"embedded"`, `threads = 2`, nothing else: the editor's patchwise starts its host, and the
baseline sends to that host); with --base-url URL instead, an OpenAI-compatible server with
llama.cpp's `/v1/completions` (`kind = "openai"`). Prompt tokens evaluated are read from the
host's `/status` (the model inside only).

Only the hole data is kept here (repository, commit, path, line, expected text); the files are
read from the repositories' checkouts (`git show COMMIT:PATH` in MIRRORS_DIR/owner+name/repo,
as `fetch` leaves them).

A hole: a line of a file with its text removed, the cursor at its indentation. The holes of a
file are visited top to bottom (the lines of earlier holes are back in place: the user wrote
them), as a user works down a file. At each hole, each way:
  arrival   the cursor comes to the line: one automatic request, waited for (an editor asks on
            the cursor's arrival in insert mode); scored against the whole line
  typing    the first TYPED characters of the line typed one by one, 0.2 s apart; each keystroke
            sends didChange + inlineCompletion without waiting (as an editor does; patchwise
            drops a superseded request), the baseline a new streamed request, closing the one
            before it (as llama.vim does). Latency: from a keystroke to the suggestion answering
            it (superseded ones have none). Scored: the suggestion after the last keystroke
            against the rest of the line.
A file's holes are run by patchwise, then by the baseline, so neither evicts the other's cache.
Scores are on the suggestion's first line: exact match, and edit similarity (difflib ratio).
"""
import difflib
import glob
import itertools
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

REPOS = [
    ("psf/requests", "python", "src/requests/", ".py"),
    ("BurntSushi/walkdir", "rust", "src/", ".rs"),
    ("BurntSushi/ripgrep", "rust", "crates/", ".rs"),
    ("sindresorhus/ky", "typescript", "source/", ".ts"),
]
TYPED = 3
KEY_INTERVAL = 0.2  # 5 characters a second
FIM = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")
STOPS = ["<|endoftext|>", "<|file_sep|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "\n"]


def git(repo_dir, *args):
    return subprocess.run(["git", "--git-dir", repo_dir, *args], capture_output=True, text=True,
                          check=True).stdout


def repo_dir_of(mirrors, name):
    return os.path.join(mirrors, name.replace("/", "+"), "repo")


def cut(mirrors, files_per_repo, holes_per_file):
    """Files with at least 80 lines; in each, holes at lines of 12+ characters that are not
    comments, spread over the file, in line order."""
    rng = random.Random(37)
    holes = []
    for name, lang, under, ext in REPOS:
        repo_dir = repo_dir_of(mirrors, name)
        commit = git(repo_dir, "rev-parse", "HEAD").strip()
        paths = sorted(p for p in git(repo_dir, "ls-tree", "-r", "--name-only", commit).split("\n")
                       if p.startswith(under) and p.endswith(ext) and "test" not in p)
        files = []
        for path in paths:
            text = git(repo_dir, "show", f"{commit}:{path}")
            lines = text.split("\n")
            candidates = [n for n, line in enumerate(lines)
                          if n >= 5 and len(line.strip()) >= 12
                          and not line.strip().startswith(("#", "//", "/*", "*", '"""'))
                          and not in_docstring(lines, n)]
            if len(lines) >= 80 and len(candidates) >= holes_per_file:
                files.append((path, candidates))
        for path, candidates in rng.sample(files, min(files_per_repo, len(files))):
            lines = git(repo_dir, "show", f"{commit}:{path}").split("\n")
            for number in sorted(rng.sample(candidates, holes_per_file)):
                holes.append({"repo": name, "commit": commit, "language": lang, "path": path,
                              "line": number, "expected": lines[number].strip()})
    return holes


def in_docstring(lines, number):
    """Whether a line is inside a triple-quoted string or a block comment (patchwise suggests
    nothing in strings and comments while typing, by design)."""
    before = "\n".join(lines[:number])
    if (before.count('"""') + before.count("'''")) % 2 == 1:
        return True
    return before.count("/*") > before.count("*/")


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

    def wait(self, ident, timeout=300):
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


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


class Host:
    """The model server's URL and, for the model inside patchwise, its evaluated-token count.
    With `announced_in`, the URL is the one the host announced there once it started."""

    def __init__(self, url, announced_in=None):
        self.fixed = url.rstrip("/") if url else None
        self.announced_in = announced_in

    @property
    def url(self):
        if self.fixed:
            return self.fixed
        announced = glob.glob(os.path.join(self.announced_in, "hosts", "*.json"))
        if not announced:
            return "http://127.0.0.1:9/v1"
        return json.load(open(announced[0]))["url"].rstrip("/")

    def evaluated(self):
        try:
            with urllib.request.urlopen(self.url.removesuffix("/v1") + "/status", timeout=10) as r:
                return json.load(r).get("prompt_tokens_evaluated")
        except Exception:
            return None


class Stream:
    """One streamed /v1/completions request on its own thread; `close` hangs up."""

    def __init__(self, url, prompt, at):
        self.at = at
        self.text = None
        self.done_at = None
        self.closed = False
        parts = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
        body = {"model": "m", "prompt": prompt, "max_tokens": 64, "temperature": 0, "stop": STOPS,
                "cache_prompt": True, "stream": True}
        self.path = parts.path + "/completions"
        self.body = json.dumps(body)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        try:
            self.conn.request("POST", self.path, self.body, {"Content-Type": "application/json"})
            response = self.conn.getresponse()
            text = ""
            for raw in response:
                line = raw.decode("utf-8", "replace").strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                event = json.loads(data)
                text += event["choices"][0].get("text") or ""
                if "\n" in text or event["choices"][0].get("finish_reason"):
                    break
            if not self.closed:
                self.text, self.done_at = text, time.monotonic()
        except Exception:
            pass
        finally:
            self.conn.close()

    def close(self):
        self.closed = True
        try:
            self.conn.sock.shutdown(2)
        except Exception:
            pass


def baseline_prompt(prefix, suffix):
    before = "\n".join(prefix.split("\n")[-256:])
    after = "\n".join(suffix.split("\n")[:64])
    return f"{FIM[0]}{before}{FIM[1]}{after}{FIM[2]}"


def patchwise_file(lsp, host, uri, language, lines, holes, version):
    rows = []
    for hole in holes:
        line = lines[hole["line"]]
        indent = line[: len(line) - len(line.lstrip())]
        text = "\n".join(lines[: hole["line"]] + [indent] + lines[hole["line"] + 1:])
        version += 1
        lsp.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                              "contentChanges": [{"text": text}]})
        row_line, col = hole["line"], len(indent)
        position = {"line": row_line, "character": col}
        before = host.evaluated()
        at = time.monotonic()
        answer = lsp.wait(lsp.send_request("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 2}}))
        arrival_latency = answer[0] - at if answer else None
        items = items_of(answer)
        arrival = items[0]["insertText"] if items else ""
        after_arrival = host.evaluated()
        sent = []
        for i, ch in enumerate(hole["expected"][:TYPED]):
            version += 1
            lsp.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"range": {"start": {"line": row_line, "character": col + i},
                                              "end": {"line": row_line, "character": col + i}}, "text": ch}]})
            ident = lsp.send_request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": {"line": row_line, "character": col + i + 1},
                "context": {"triggerKind": 2}})
            sent.append((ident, time.monotonic()))
            time.sleep(KEY_INTERVAL)
        latencies, final = [], ""
        for k, (ident, at) in enumerate(sent):
            answer = lsp.wait(ident)
            items = items_of(answer)
            if items:
                latencies.append(answer[0] - at)
            if k == len(sent) - 1:
                final = items[0]["insertText"] if items else ""
        after_typing = host.evaluated()
        rows.append(result(hole, arrival, arrival_latency, final, latencies, before, after_arrival,
                           after_typing))
    return rows, version


def items_of(answer):
    if not answer:
        return []
    result = answer[1].get("result") or []
    return result.get("items", []) if isinstance(result, dict) else result


def baseline_file(host, lines, holes):
    rows = []
    for hole in holes:
        line = lines[hole["line"]]
        indent = line[: len(line) - len(line.lstrip())]
        prefix = "\n".join(lines[: hole["line"]]) + "\n" + indent
        suffix = "\n" + "\n".join(lines[hole["line"] + 1:])
        before = host.evaluated()
        stream = Stream(host.url, baseline_prompt(prefix, suffix), time.monotonic())
        stream.thread.join()
        arrival = stream.text or ""
        arrival_latency = stream.done_at - stream.at if stream.done_at else None
        after_arrival = host.evaluated()
        streams = []
        for i in range(TYPED):
            typed = hole["expected"][: i + 1]
            if streams:
                streams[-1].close()
            streams.append(Stream(host.url, baseline_prompt(prefix + typed, suffix), time.monotonic()))
            time.sleep(KEY_INTERVAL)
        streams[-1].thread.join()
        latencies = [s.done_at - s.at for s in streams if s.done_at is not None]
        after_typing = host.evaluated()
        rows.append(result(hole, arrival, arrival_latency, streams[-1].text or "", latencies, before,
                           after_arrival, after_typing))
    return rows


def more_lines(suggestion):
    """The lines a suggestion shows after its first (its first line is what is scored; a hole is
    one line, so the lines after it are in the file already and cannot be scored here)."""
    return sum(1 for line in suggestion.split("\n")[1:] if line.strip())


def result(hole, arrival, arrival_latency, final, latencies, before, after_arrival, after_typing):
    exact_arrival, similarity_arrival = score(arrival, hole["expected"])
    exact, similarity = score(final, hole["expected"][TYPED:])
    counted = None not in (before, after_arrival, after_typing)
    return {"repo": hole["repo"], "path": hole["path"], "line": hole["line"],
            "language": hole["language"], "expected": hole["expected"],
            "arrival": first_line(arrival), "arrival_exact": exact_arrival,
            "arrival_similarity": similarity_arrival, "arrival_latency": arrival_latency,
            "typed": first_line(final), "exact": exact, "similarity": similarity,
            "latencies": latencies,
            "arrival_more_lines": more_lines(arrival),
            "typed_more_lines": more_lines(final),
            "arrival_evaluated": after_arrival - before if counted else None,
            "typing_evaluated": after_typing - after_arrival if counted else None}


def summary(rows):
    if not rows:
        return {}
    typing = [l for r in rows for l in r["latencies"]]
    arrivals = [r["arrival_latency"] for r in rows if r["arrival_latency"] is not None]
    evaluated = [r["typing_evaluated"] for r in rows if r["typing_evaluated"] is not None]
    arrival_evaluated = [r["arrival_evaluated"] for r in rows if r["arrival_evaluated"] is not None]
    n = len(rows)
    return {
        "holes": n,
        "arrival_exact": sum(r["arrival_exact"] for r in rows) / n,
        "arrival_similarity": sum(r["arrival_similarity"] for r in rows) / n,
        "typed_exact": sum(r["exact"] for r in rows) / n,
        "typed_similarity": sum(r["similarity"] for r in rows) / n,
        "arrival_p50_s": percentile(arrivals, 50), "arrival_p95_s": percentile(arrivals, 95),
        "typing_p50_s": percentile(typing, 50), "typing_p95_s": percentile(typing, 95),
        "keystrokes_answered": len(typing), "keystrokes": n * TYPED,
        "evaluated_per_keystroke": sum(evaluated) / (n * TYPED) if evaluated else None,
        "evaluated_per_arrival": sum(arrival_evaluated) / n if arrival_evaluated else None,
    }


def files_in_order(holes):
    """The holes grouped by file, ((repo, path), holes) in the order the bench visits the files:
    the languages interleaved (a Python file, a Rust file, a TypeScript file, …), so the same
    share of each is run however many files a run takes."""
    by_file = {}
    for hole in holes:
        by_file.setdefault((hole["repo"], hole["path"]), []).append(hole)
    by_language = {}
    for key, group in by_file.items():
        by_language.setdefault(group[0]["language"], []).append((key, group))
    return [f for group in itertools.zip_longest(*by_language.values()) for f in group if f]


def run(holes_file, mirrors, binary, gguf, base_url, files_limit, out):
    files = files_in_order(json.load(open(holes_file)))
    files = files[int(option("--from", "0")):]
    if files_limit:
        files = files[:files_limit]
    workdir = tempfile.mkdtemp(prefix="pw-complete-bench-")
    data_dir = os.path.join(workdir, "data")
    if gguf:
        providers = {"local": {"kind": "embedded", "model": gguf, "threads": 2}}
        config = {"providers": providers, "data_dir": data_dir}
    else:
        config = {"providers": {"local": {"kind": "openai", "base_url": base_url, "api_key_env": ""}},
                  "roles": {"completion": "local/qwen2.5-coder-1.5b"}, "data_dir": data_dir}
    if option("--completion"):
        config["completion"] = json.loads(option("--completion"))
    lsp = Lsp(binary, config, workdir)
    # With the model inside, the editor's patchwise starts the host on its first request.
    host = Host(base_url, announced_in=data_dir)
    ways = option("--ways", "patchwise,baseline").split(",")
    named = option("--as", "patchwise")
    rows = {named: [], "baseline": []}
    log = open(out, "w") if out else None
    for (repo, path), group in files:
        group.sort(key=lambda h: h["line"])
        lines = git(repo_dir_of(mirrors, repo), "show", f"{group[0]['commit']}:{path}").split("\n")
        uri = "file://" + os.path.join(workdir, repo.replace("/", "_"), path)
        lsp.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": group[0]["language"], "version": 1, "text": "\n".join(lines)}})
        pw, base = [], []
        if "patchwise" in ways:
            pw = patchwise_file(lsp, host, uri, group[0]["language"], lines, group, 1)[0]
        lsp.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        if "baseline" in ways:
            base = baseline_file(host, lines, group)
        for way, found in ((named, pw), ("baseline", base)):
            for row in found:
                row["way"] = way
                rows[way].append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
                if log:
                    print(json.dumps(row), file=log, flush=True)
    lsp.request("shutdown", None)
    lsp.notify("exit", None)
    print(json.dumps({way: summary(found) for way, found in rows.items()}, indent=2))


def table(paths, by):
    rows = [json.loads(line) for path in paths for line in open(path) if line.strip()]
    key = lambda r: (r["repo"], r["path"], r["line"])
    ways = sorted({r["way"] for r in rows})
    if not ways:
        print("no rows")
        return
    shared = set.intersection(*({key(r) for r in rows if r["way"] == way} for way in ways))
    rows = [r for r in rows if key(r) in shared]
    groups = {"all": rows}
    if by:
        for r in rows:
            groups.setdefault(r[by], []).append(r)
    for name, found in groups.items():
        print(f"{name}: {len(found) // max(1, len(ways))} holes")
        columns = {way: summary([r for r in found if r["way"] == way]) for way in ways}
        print(f"  {'':26}" + "".join(f"{way:>22}" for way in ways))
        for field in next(iter(columns.values())):
            cells = []
            for way in ways:
                value = columns[way].get(field)
                if field in ("arrival_exact", "typed_exact"):
                    cells.append(f"{round(value * columns[way]['holes'])} ({value:.3f})")
                elif isinstance(value, float):
                    cells.append(f"{value:.3f}")
                else:
                    cells.append(str(value))
            print(f"  {field:26}" + "".join(f"{c:>22}" for c in cells))


def option(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


if __name__ == "__main__":
    if sys.argv[1] == "table":
        table([a for a in sys.argv[2:] if not a.startswith("--") and a != option("--by")],
              option("--by"))
    elif sys.argv[1] == "cut":
        numbers = [int(a) for a in sys.argv[3:5]]
        print(json.dumps(cut(sys.argv[2], *(numbers + [7, 10][len(numbers):])), indent=1))
    else:
        run(sys.argv[2], sys.argv[3], option("--binary", "patchwise"), option("--gguf"),
            option("--base-url"), int(option("--files", "0")), option("--json"))
