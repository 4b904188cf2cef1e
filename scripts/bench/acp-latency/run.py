#!/usr/bin/env python3
"""ACP latency beside the command line, on the develop bench (fixtures/develop/bench).

For each task (default: the bench's first five), in the same session and on the same model server:
  cli  `patchwise develop REQUEST --workspace WS --yes --json`: its wall time.
  acp  `patchwise acp --workspace WS` driven by the official ACP TypeScript SDK client of the
       tests (tests/acp/client.mjs: initialize, session/new, session/prompt in develop mode, the
       change rejected so nothing is written): the milliseconds from `session/prompt` to the
       first `session/update`, to `session/request_permission` (when the run made a proposal) and
       to the prompt's answer, and the client's wall time.
Each run holds the model lock (flock(2) on --lock) for its whole run, one run per hold, so others
can interleave. The configuration is the bench's: only the provider and the coder role.

    (cd tests/acp && npm ci)          # the SDK, as scripts/test installs it
    cargo build --bin patchwise
    python3 scripts/bench/acp-latency/run.py [--binary target/debug/patchwise] [--only ID,ID] \\
        [--base-url http://127.0.0.1:8088/v1] [--model qwen2.5-coder-1.5b] [--json FILE.jsonl]

Prints one JSON line per task and way, then a table with ACP's added wall time per task
(acp prompt ms / cli wall ms - 1) and over all tasks.
"""
import argparse
import fcntl
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[3]
BENCH = REPO / "fixtures/develop/bench"
CLIENT = REPO / "tests/acp/client.mjs"

spec = importlib.util.spec_from_file_location("bench", BENCH / "run.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def home_for(base_url, model):
    home = pathlib.Path(tempfile.mkdtemp(prefix="pw-acp-latency-"))
    config_dir = home / "config" / "patchwise"
    config_dir.mkdir(parents=True)
    (config_dir / "config.toml").write_text(
        f'[providers.local]\nkind = "openai"\nbase_url = "{base_url}"\napi_key_env = ""\n\n'
        f'[roles]\ncoder = "local/{model}"\n'
    )
    return home


def locked(lock, fn):
    with open(lock, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            return fn()
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run_cli(task, ws, env, args):
    started = time.monotonic()
    try:
        p = subprocess.run([args.binary, "develop", task["request"], "--workspace", str(ws), "--yes", "--json"],
                           capture_output=True, text=True, env=env, timeout=args.timeout)
        out = p.stdout
    except subprocess.TimeoutExpired:
        out = ""
    wall = time.monotonic() - started
    try:
        status = json.loads(out.strip().splitlines()[-1]).get("status")
    except (ValueError, IndexError):
        status = "error"
    return {"wall_ms": round(wall * 1000), "status": status}


def run_acp(task, ws, env, args):
    scenario = {
        "agent": [args.binary, "acp", "--workspace", str(ws)],
        "fs": {"readTextFile": False, "writeTextFile": False},
        "permission": "reject_once",
        "steps": [{"op": "initialize"}, {"op": "new", "cwd": str(ws)},
                  {"op": "prompt", "prompt": [{"type": "text", "text": task["request"]}]}],
    }
    started = time.monotonic()
    try:
        p = subprocess.run(["node", str(CLIENT), json.dumps(scenario)], capture_output=True, text=True,
                           env=env, cwd=ws, timeout=args.timeout + 60)
        seen = json.loads(p.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError) as e:
        return {"wall_ms": round((time.monotonic() - started) * 1000), "status": f"error: {e}"}
    wall = time.monotonic() - started
    prompt_step = 2
    updates = [u for u in seen["updates"] if u["step"] == prompt_step]
    asked = [p for p in seen["permissions"] if p["step"] == prompt_step]
    answer = [r for r in seen["results"] if r["method"] == "session/prompt"]
    kinds = {}
    for u in updates:
        k = u["update"]["sessionUpdate"]
        kinds[k] = kinds.get(k, 0) + 1
    return {
        "wall_ms": round(wall * 1000),
        "prompt_ms": answer[0].get("ms") if answer else None,
        "first_update_ms": updates[0]["ms"] if updates else None,
        "permission_ms": asked[0]["ms"] if asked else None,
        "stop": (answer[0].get("result") or {}).get("stopReason") if answer else None,
        "updates": kinds,
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--binary", default=str(REPO / "target/debug/patchwise"))
    p.add_argument("--base-url", default="http://127.0.0.1:8088/v1")
    p.add_argument("--model", default="qwen2.5-coder-1.5b")
    p.add_argument("--only", help="task ids, comma-separated (default: the first five)")
    p.add_argument("--lock", default="/tmp/patchwise-model.lock")
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--json", help="append the rows to this JSONL file")
    args = p.parse_args()
    args.binary = str(pathlib.Path(args.binary).resolve())
    tasks = json.loads((BENCH / "tasks.json").read_text())
    if args.only:
        by_id = {t["id"]: t for t in tasks}
        tasks = [by_id[i] for i in args.only.split(",")]
    else:
        tasks = tasks[:5]
    env0 = bench.base_env(bench.ensure_python())
    node_modules = bench.ensure_node_modules() if any(t.get("node_modules") for t in tasks) else None
    rows = []
    root = pathlib.Path(tempfile.mkdtemp(prefix="pw-acp-latency-ws-"))
    for task in tasks:
        for way in ("cli", "acp"):
            ws = root / task["id"] / way
            bench.make_workspace(task, ws, node_modules)
            home = home_for(args.base_url, args.model)
            env = dict(env0, XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"))
            fn = run_cli if way == "cli" else run_acp
            row = {"id": task["id"], "way": way, **locked(args.lock, lambda: fn(task, ws, env, args)),
                   "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            shutil.rmtree(home, ignore_errors=True)
            print(json.dumps(row), flush=True)
            rows.append(row)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(row) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    print("\n| task | cli wall s | acp prompt s | acp first update s | acp permission s | added |")
    print("|---|---|---|---|---|---|")
    cli_sum = acp_sum = 0
    for task in tasks:
        cli = next(r for r in rows if r["id"] == task["id"] and r["way"] == "cli")
        acp = next(r for r in rows if r["id"] == task["id"] and r["way"] == "acp")
        s = lambda ms: "-" if ms is None else f"{ms / 1000:.1f}"
        added = "-"
        if acp.get("prompt_ms") is not None:
            cli_sum += cli["wall_ms"]
            acp_sum += acp["prompt_ms"]
            added = f"{(acp['prompt_ms'] / cli['wall_ms'] - 1) * 100:+.1f} %"
        print(f"| {task['id']} | {s(cli['wall_ms'])} | {s(acp.get('prompt_ms'))} | "
              f"{s(acp.get('first_update_ms'))} | {s(acp.get('permission_ms'))} | {added} |")
    if cli_sum:
        print(f"| all | {cli_sum / 1000:.1f} | {acp_sum / 1000:.1f} | | | {(acp_sum / cli_sum - 1) * 100:+.1f} % |")


if __name__ == "__main__":
    sys.exit(main())
