#!/usr/bin/env python3
"""Serves recorded model answers by request: the user message of each recorded request
(rec-*/qNN*.request.json) maps to its recorded .http answer. Runs `research` for every
question with BIN and prints, per question, whether the synthesis equals the recorded run's."""
import glob, http.server, json, os, re, subprocess, sys, tempfile, threading
corpus, rec, rows_file, binary = sys.argv[1:5]
answers = {}
for f in glob.glob(f"{rec}/*.request.json"):
    r = json.load(open(f))
    key = json.dumps(r["messages"], sort_keys=True)
    http_text = open(f.replace(".request.json", ".http")).read()
    body = http_text.split("\n\n", 1)[1] if http_text.startswith("#") else http_text
    # strip the recorded comment header lines and the HTTP head
    lines = http_text.split("\n")
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    raw = "\n".join(lines)
    head, _, data = raw.partition("\n\n")
    answers[key] = data
missing = []
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        key = json.dumps(body["messages"], sort_keys=True)
        data = answers.get(key)
        if data is None:
            missing.append(body["messages"][-1]["content"][:80])
            data = 'data: {"id":"x","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"none"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
        b = data.encode()
        self.send_response(200); self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(b))); self.end_headers(); self.wfile.write(b)
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
port = srv.server_address[1]
rows = [json.loads(l) for l in open(rows_file)]
state = tempfile.mkdtemp(); print("STATE", state)
os.makedirs(f"{state}/config/patchwise")
open(f"{state}/config/patchwise/config.toml", "w").write(
    f'[providers.local]\nkind = "openai"\nbase_url = "http://127.0.0.1:{port}/v1"\n\n[roles]\ncoder = "local/qwen2.5-coder-1.5b"\n')
env = dict(os.environ, XDG_CONFIG_HOME=f"{state}/config", XDG_DATA_HOME=f"{state}/data", RUST_LOG="warn")
same = 0
for r in rows:
    out = subprocess.run([binary, "research", r["question"], "--sources", "workspace", "--json", "--workspace", corpus],
                         env=env, capture_output=True, text=True)
    j = json.loads(out.stdout) if out.stdout.strip() else {}; new = j.get("synthesis", out.stderr[-300:]); print("ID", r["n"], j.get("id"))
    ok = new == r["synthesis"]
    same += ok
    print(r["n"], "same" if ok else "DIFFERENT", flush=True)
    if not ok:
        import difflib
        print("\n".join(difflib.unified_diff(r["synthesis"].split("\n"), new.split("\n"), lineterm="", n=0)))
print(f"{same} of {len(rows)} the same; requests not recorded: {len(missing)}")
for m in missing[:5]: print("  missing:", m)
