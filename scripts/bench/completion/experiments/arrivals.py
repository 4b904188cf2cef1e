"""The arrival prompts patchwise sends on the bench's holes, captured without a model, then sent
cold (one request each, temperature 0) in variants to one model server, to see which part of the
prompt a difference in arrival quality comes from.

  python3 scripts/bench/completion/experiments/arrivals.py capture HOLES MIRRORS --binary BIN OUT.jsonl
  flock /tmp/patchwise-model.lock python3 scripts/bench/completion/experiments/arrivals.py run \
      OUT.jsonl MIRRORS --url http://127.0.0.1:8088/v1 --variants asis,no_extra,plain [--every K] \
      [--only HOLES.jsonl]

(--only: the holes of rows in a JSON-lines file, e.g. those where two ways' arrivals differ.
--cold: a one-token prompt before each request, so a server that keeps the last prompt's cache,
as the model inside patchwise does, reads each arrival prompt whole.)

`capture` replays bench.py's patchwise way (arrival, then three typed characters per hole, the
holes of a file top to bottom) against a stand-in for an OpenAI-compatible server that records
each /v1/completions prompt and answers with an empty suggestion; the first prompt after a hole's
arrival request is its arrival prompt. `run` sends each arrival prompt, changed by a variant, and
scores the answer's first line against the hole's line (as the bench scores an arrival):

  asis      the prompt as captured
  no_extra  without the chunks of other places (recently edited, other files)
  no_later  without the chunk of the lines after the suffix
  bare      the current file's part only (no other chunk)
  same_language  without the chunks of other places in files of another language (by extension;
            TypeScript and JavaScript one, C and C++ one)
  no_header without the current file's `<|file_sep|>path` line (with `bare`: the plain prompt's
            layout around patchwise's text)
  plain     the bench's plain prompt (256 lines before, 64 after, no file header)
  after:N   as captured, with the current file's suffix the N lines after the cursor's line
  before:N  as captured, with the current file's prefix the N lines before the cursor's line
  outline   as captured, with a chunk ahead of the current file's part that lists the file's
            definition lines (def, class, fn, struct, type, interface, …), the hole's aside:
            what the file already defines, which a short prefix cannot show (patchwise's arrivals suggested `def rebuild_auth(` where requests' sessions.py
            defines it 80 lines up, and the plain prompt, 256 lines before, did not)

Variants compose with `+`, left to right: `bare+before:256+after:64` is the plain prompt's text
in patchwise's layout (file header kept).
"""
import difflib
import http.server
import re
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("bench", os.path.join(HERE, "..", "bench.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
SEP = "<|file_sep|>"


class Recorder(http.server.BaseHTTPRequestHandler):
    prompts = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": "qwen2.5-coder-1.5b", "object": "model"}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        Recorder.prompts.append(request.get("prompt"))
        event = {"choices": [{"index": 0, "text": "", "finish_reason": "stop"}]}
        if request.get("stream"):
            body = f"data: {json.dumps(event)}\n\ndata: [DONE]\n\n".encode()
            kind = "text/event-stream"
        else:
            body = json.dumps(dict(event, usage={"prompt_tokens": 1, "completion_tokens": 0})).encode()
            kind = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def capture(holes_file, mirrors, binary, out):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    # The bench's order of files: a file's first arrivals see the places edited last in the
    # file before it (of another language), as in the bench.
    files = bench.files_in_order(json.load(open(holes_file)))
    workdir = tempfile.mkdtemp(prefix="pw-arrivals-")
    config = {"providers": {"local": {"kind": "openai", "base_url": url, "api_key_env": ""}},
              "roles": {"completion": "local/qwen2.5-coder-1.5b"},
              "data_dir": os.path.join(workdir, "data")}
    lsp = bench.Lsp(binary, config, workdir)
    host = bench.Host(url)
    with open(out, "w") as log:
        for (repo, path), group in files:
            group.sort(key=lambda h: h["line"])
            lines = bench.git(bench.repo_dir_of(mirrors, repo), "show",
                              f"{group[0]['commit']}:{path}").split("\n")
            uri = "file://" + os.path.join(workdir, repo.replace("/", "_"), path)
            lsp.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": group[0]["language"], "version": 1, "text": "\n".join(lines)}})
            version = 1
            for hole in group:
                seen = len(Recorder.prompts)
                _, version = bench.patchwise_file(lsp, host, uri, hole["language"], lines, [hole], version)
                time.sleep(0.2)
                asked = Recorder.prompts[seen:]
                print(json.dumps(dict(hole, arrival_prompt=asked[0] if asked else None,
                                      prompts=len(asked))), file=log, flush=True)
            lsp.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    lsp.request("shutdown", None)
    lsp.notify("exit", None)


def parts(prompt):
    """(chunks before the current file's part, that part), split at the file separators."""
    pieces = prompt.split(SEP)
    return [SEP + p for p in pieces[1:-1]], SEP + pieces[-1]


DEFINITION = re.compile(
    r"^\s*(?:(?:pub(?:\([^)]*\))?|export|default|async|unsafe|abstract|declare)\s+)*"
    r"(?:def|class|fn|struct|enum|trait|impl|type|interface|function|mod|const|static)\b")


def outline(lines, hole, name):
    """The chunk listing the definition lines of `lines` but the hole's, in the file's order:
    the same for every hole of a file (but a hole that is itself a definition), so a server's
    prompt cache keeps it while the user works down the file."""
    out = [line.rstrip() for i, line in enumerate(lines) if i != hole and DEFINITION.match(line)]
    if not out:
        return []
    return [f"{SEP}{name} (outline: what the file defines)\n" + "\n".join(out) + "\n"]


FAMILIES = [{".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts"},
            {".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"}]


def family(path):
    """A file's language by its extension, the ones that import each other as one."""
    ext = os.path.splitext(path)[1].lower()
    return next((min(f) for f in FAMILIES if ext in f), ext)


def variant(name, row, lines):
    """The arrival prompt changed by `name`: one variant, or several joined by `+` (applied
    left to right, e.g. `bare+before:256`)."""
    prompt = row["arrival_prompt"]
    chunks, current = parts(prompt)
    # The chunk of later lines is the last one, when there is one (a hole near the end of its
    # file has none): its text is the file's after the hole.
    after = "\n".join(lines[row["line"] + 1:])
    last = chunks[-1].split("\n", 1)[1] if chunks and "\n" in chunks[-1] else ""
    later = chunks[-1:] if last.strip() and last.strip() in after else []
    extra = chunks[: len(chunks) - len(later)]
    line = lines[row["line"]]
    indent = line[: len(line) - len(line.lstrip())]
    if name == "plain":
        prefix = "\n".join(lines[: row["line"]]) + "\n" + indent
        suffix = "\n" + "\n".join(lines[row["line"] + 1:])
        return bench.baseline_prompt(prefix, suffix)
    start, _, rest = current.partition("<|fim_prefix|>")
    prefix, _, suffix = rest.partition("<|fim_suffix|>")
    suffix = suffix[: -len("<|fim_middle|>")]
    for step in name.split("+"):
        kind, _, count = step.partition(":")
        if step == "asis":
            pass
        elif step == "no_extra":
            extra = []
        elif step == "no_later":
            later = []
        elif step == "bare":
            extra, later = [], []
        elif step == "same_language":
            extra = [c for c in extra if family(c[len(SEP):].split("\n", 1)[0]) == family(row["path"])]
        elif step == "no_header":
            start = ""
        elif kind == "after" and count.isdigit():
            suffix = "\n" + "\n".join(lines[row["line"] + 1:][: int(count)])
        elif kind == "before" and count.isdigit():
            prefix = "\n".join(lines[: row["line"]][-int(count):]) + "\n" + indent
        elif step == "outline":
            later = later + outline(lines, row["line"], start[len(SEP):].strip() or row["path"])
        else:
            raise SystemExit(f"no variant {step}")
    return "".join(extra + later) + f"{start}<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>"


def ask(url, prompt, repeat_penalty=None):
    body = {"model": "m", "prompt": prompt, "max_tokens": 64, "temperature": 0,
            "stop": bench.STOPS, "cache_prompt": False}
    if repeat_penalty is not None:
        # llama-cpp-python's server applies 1.1 unless told (over the prompt's last 64
        # tokens too); llama.cpp's server and patchwise's runtime 1.0.
        body["repeat_penalty"] = repeat_penalty
    request = urllib.request.Request(url + "/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    at = time.monotonic()
    with urllib.request.urlopen(request, timeout=600) as r:
        answer = json.load(r)
    return answer["choices"][0]["text"], time.monotonic() - at


def reset(url):
    """A one-token prompt that shares no token with an arrival prompt: a server that keeps the
    last prompt's cache (the model inside patchwise) reads the next prompt whole, as cold."""
    body = {"model": "m", "prompt": "#", "max_tokens": 1, "temperature": 0}
    request = urllib.request.Request(url + "/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as r:
        r.read()


def run(captured, mirrors, url, names, every, only=None, repeat_penalty=None, cold=False):
    rows = [json.loads(l) for l in open(captured) if l.strip()][::every]
    if only:
        wanted = {(h["repo"], h["path"], h["line"]) for h in map(json.loads, open(only)) if h}
        rows = [r for r in rows if (r["repo"], r["path"], r["line"]) in wanted]
    totals = {n: [0, 0.0, 0.0, 0] for n in names}
    files = {}
    for row in rows:
        if not row["arrival_prompt"]:
            continue
        key = (row["repo"], row["path"])
        if key not in files:
            files[key] = bench.git(bench.repo_dir_of(mirrors, row["repo"]), "show",
                                   f"{row['commit']}:{row['path']}").split("\n")
        result = {"repo": row["repo"], "path": row["path"], "line": row["line"],
                  "language": row["language"], "expected": row["expected"]}
        for name in names:
            if cold:
                reset(url)
            text, took = ask(url, variant(name, row, files[key]), repeat_penalty)
            first = text.split("\n")[0].strip()
            exact = first == row["expected"].strip()
            similarity = difflib.SequenceMatcher(None, first, row["expected"].strip()).ratio()
            t = totals[name]
            t[0] += exact
            t[1] += similarity
            t[2] += took
            t[3] += 1
            result[name] = {"first": first, "exact": exact, "similarity": round(similarity, 3),
                            "seconds": round(took, 2)}
        print(json.dumps(result), flush=True)
    for name, (exact, similarity, took, n) in totals.items():
        print(f"# {name}: exact {exact}/{n}, similarity {similarity / max(n, 1):.3f}, "
              f"{took / max(n, 1):.1f} s a request", flush=True)


if __name__ == "__main__":
    option = bench.option
    if sys.argv[1] == "capture":
        capture(sys.argv[2], sys.argv[3], option("--binary", "patchwise"), sys.argv[-1])
    else:
        run(sys.argv[2], sys.argv[3], option("--url", "http://127.0.0.1:8088/v1"),
            option("--variants", "asis,no_extra,plain").split(","), int(option("--every", "1")),
            option("--only"), float(option("--repeat-penalty")) if option("--repeat-penalty") else None,
            "--cold" in sys.argv)
