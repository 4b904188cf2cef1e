"""Drives `patchwise mcp` with the official MCP Python SDK (`mcp` on PyPI), as an agent would.

Run by tests/mcp.rs, which builds the workspace and the fake research sources on 127.0.0.1 and
passes them in the environment:

  PATCHWISE_BIN  the binary          MCP_WS       the workspace
  MCP_OUTSIDE    a file next to the workspace, which nothing may read or change
  MCP_HOME       HOME / XDG dirs for the server

Every step asserts; the script prints `ok <step>` per step and exits non-zero on the first
failure, with the server's answer in the message.
"""

import os
import sys
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

WS = Path(os.environ["MCP_WS"])
OUTSIDE = Path(os.environ["MCP_OUTSIDE"])
HOME = os.environ["MCP_HOME"]

TOOLS = [
    "read_file",
    "list_files",
    "search",
    "edit_file",
    "insert_lines",
    "replace_lines",
    "replace_symbol",
    "context",
    "research",
    "research_search",
]


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def check(condition, what, result=None):
    if not condition:
        shown = "" if result is None else f"\n--- answer (isError={result.is_error}):\n{text_of(result)}"
        raise AssertionError(f"{what}{shown}")


def ok(step):
    print(f"ok {step}", flush=True)


async def call(session, name, args, **kwargs):
    return await session.call_tool(name, args, read_timeout_seconds=120, **kwargs)


async def tools_are_listed(session):
    listed = await session.list_tools()
    names = [t.name for t in listed.tools]
    check(names == TOOLS, f"tools listed: {names}")
    by_name = {t.name: t for t in listed.tools}
    for name in ["read_file", "list_files", "search", "context", "research_search"]:
        a = by_name[name].annotations
        check(a is not None and a.read_only_hint is True, f"{name} is read-only: {a}")
    for name in ["edit_file", "insert_lines", "replace_lines", "replace_symbol"]:
        a = by_name[name].annotations
        check(a.read_only_hint is False and a.destructive_hint is True, f"{name} hints: {a}")
        check("dry_run" in by_name[name].input_schema["properties"], f"{name} has dry_run")
    check(by_name["research"].annotations.open_world_hint is True, "research reaches out")
    check(
        set(by_name["edit_file"].input_schema["required"]) == {"path", "old_string", "new_string"},
        "edit_file's required parameters",
    )
    ok("list_tools")


async def read_and_lenient_edit(session):
    r = await call(session, "read_file", {"path": "src/main.rs"})
    check(not r.is_error and "     2\t\tlet x = 1;" in text_of(r), "numbered read", r)
    # The model re-typed the tab-indented block with four spaces: applied, tabs kept.
    r = await call(
        session,
        "edit_file",
        {
            "path": "src/main.rs",
            "old_string": '    if x > 0 {\n        println!("positive");\n    }',
            "new_string": '    if x > 0 {\n        println!("big");\n    }',
        },
    )
    body = text_of(r)
    check(not r.is_error, "the mis-indented edit applies", r)
    check("matched by" in body and "--- a/src/main.rs" in body and '+\t\tprintln!("big");' in body, "diff and pass", r)
    on_disk = (WS / "src/main.rs").read_text()
    check('\t\tprintln!("big");\n' in on_disk and "positive" not in on_disk, f"written with tabs: {on_disk!r}")
    ok("lenient_edit")

    # dry_run: the diff, and nothing written.
    before = (WS / "src/main.rs").read_text()
    r = await call(
        session,
        "edit_file",
        {"path": "src/main.rs", "old_string": "let x = 1;", "new_string": "let x = 2;", "dry_run": True},
    )
    check(not r.is_error and "dry run" in text_of(r) and "+\tlet x = 2;" in text_of(r), "dry run diff", r)
    check((WS / "src/main.rs").read_text() == before, "dry run wrote nothing")
    ok("dry_run")

    # Line and symbol tools write too.
    r = await call(session, "replace_symbol", {"path": "src/main.rs", "symbol": "helper", "text": "fn helper() -> u8 {\n\t2\n}"})
    check(not r.is_error and "-\t1" in text_of(r) and "+\t2" in text_of(r), "replace_symbol", r)
    r = await call(session, "insert_lines", {"path": "src/main.rs", "line": 0, "text": "// top"})
    check(not r.is_error, "insert_lines", r)
    check((WS / "src/main.rs").read_text().startswith("// top\nfn main() {\n"), "inserted on disk")
    ok("line_and_symbol_ops")


async def ambiguous_and_unread(session):
    r = await call(session, "edit_file", {"path": "src/dup.txt", "old_string": "x = 1", "new_string": "x = 2"})
    check(r.is_error and "has not been read" in text_of(r), "an unread file is refused", r)
    await call(session, "read_file", {"path": "src/dup.txt"})
    r = await call(session, "edit_file", {"path": "src/dup.txt", "old_string": "x = 1", "new_string": "x = 2"})
    body = text_of(r)
    check(r.is_error, "ambiguous edit refused", r)
    for line in ["2", "4", "6"]:
        check(line in body, f"line {line} named", r)
    check("replace_all" in body, "says how to get out", r)
    check((WS / "src/dup.txt").read_text().count("x = 1") == 3, "nothing written")
    ok("ambiguous")


async def stale_edit(session):
    await call(session, "read_file", {"path": "src/stale.txt"})
    changed = "alpha\nbeta = 2  # changed on disk\ngamma\n"
    (WS / "src/stale.txt").write_text(changed)
    r = await call(session, "edit_file", {"path": "src/stale.txt", "old_string": "beta = 1", "new_string": "beta = 3"})
    body = text_of(r)
    check(r.is_error and "changed since you read it" in body and "beta = 2  # changed on disk" in body, "stale refused", r)
    check((WS / "src/stale.txt").read_text() == changed, "stale file untouched")
    # Read again: the edit goes through.
    await call(session, "read_file", {"path": "src/stale.txt"})
    r = await call(session, "edit_file", {"path": "src/stale.txt", "old_string": "gamma", "new_string": "delta"})
    check(not r.is_error, "after a fresh read", r)
    ok("stale")


async def sandbox(session):
    secret = OUTSIDE.read_text()
    escapes = [
        ("read_file", {"path": "../outside.txt"}),
        ("read_file", {"path": str(OUTSIDE)}),
        ("read_file", {"path": "escape/outside.txt"}),
        ("context", {"path": "../outside.txt"}),
        ("search", {"pattern": "secret", "path": ".."}),
        ("list_files", {"path": "/"}),
        ("edit_file", {"path": "../outside.txt", "old_string": "secret", "new_string": "pwned"}),
        ("edit_file", {"path": str(OUTSIDE), "old_string": "secret", "new_string": "pwned"}),
        ("edit_file", {"path": "escape/outside.txt", "old_string": "secret", "new_string": "pwned"}),
        ("replace_lines", {"path": "escape/outside.txt", "start": 1, "end": 1, "text": "pwned"}),
    ]
    for name, args in escapes:
        r = await call(session, name, args)
        check(r.is_error, f"{name} {args} refused", r)
        check(secret.strip() not in text_of(r), f"{name} {args} shows nothing outside", r)
    check(OUTSIDE.read_text() == secret, "nothing outside written")
    ok("sandbox")


async def context_tool(session):
    r = await call(session, "context", {"path": "src/main.rs", "symbol": "helper"})
    check(not r.is_error and "fn helper" in text_of(r) and "-- context:" in text_of(r), "context output", r)
    r = await call(session, "context", {"path": "src/main.rs", "symbol": "nope"})
    check(r.is_error, "an unknown symbol is an error result", r)
    ok("context")


async def research(session):
    seen = []

    async def progress(value, total, message):
        seen.append((value, total, message))

    r = await call(
        session,
        "research",
        {"question": "transformer attention", "sources": ["openalex", "workspace"], "depth": 1},
        progress_callback=progress,
    )
    body = text_of(r)
    check(not r.is_error and "library id:" in body and "[1]" in body and "## Sources" in body, "research report", r)
    values = [v for v, _, _ in seen]
    check(len(values) >= 3 and values == sorted(values) and len(set(values)) == len(values), f"progress increases: {seen}")
    check(any(m and m.startswith("synthesis") for _, _, m in seen), f"phases in progress: {seen}")
    rid = body.split("library id:")[1].split()[0]
    r = await call(session, "research_search", {"text": "transformer"})
    check(not r.is_error and rid in text_of(r), "research_search finds it", r)
    r = await call(session, "research_search", {"text": rid})
    check(not r.is_error and "## Synthesis" in text_of(r), "research_search shows a report by id", r)
    ok("research")

    # Cancellation: the source hangs; cancel after the first progress notification.
    started = anyio.Event()

    async def first(value, total, message):
        started.set()

    outcome = {}

    async def run():
        try:
            outcome["result"] = await call(
                session,
                "research",
                {"question": "hanging sources cancelled", "sources": ["crossref"]},
                progress_callback=first,
            )
        except anyio.get_cancelled_exc_class():
            outcome["cancelled"] = True
            raise

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        with anyio.fail_after(60):
            await started.wait()
        await anyio.sleep(0.3)
        tg.cancel_scope.cancel()
    check(outcome.get("cancelled") and "result" not in outcome, f"the call was cancelled: {outcome}")
    # The server is alive and saved nothing for the cancelled run.
    with anyio.fail_after(30):
        r = await call(session, "research_search", {"text": "hanging"})
    check(not r.is_error and "no earlier research" in text_of(r), "cancelled research not saved", r)
    ok("research_cancelled")


async def protocol_errors(session):
    try:
        await call(session, "no_such_tool", {})
        check(False, "an unknown tool is a protocol error")
    except MCPError as e:
        check("read_file" in str(e), f"lists the tools: {e}")
    r = await call(session, "read_file", {"path": ["not", {"a": "string"}]})
    check(r.is_error, "wrong argument types are an error result", r)
    r = await call(session, "edit_file", {"path": "src/dup.txt", "old_string": 5})
    check(r.is_error and "new_string" in text_of(r), "missing argument named", r)
    r = await call(session, "read_file", {"path": "src/main.rs", "offset": "many"})
    check(r.is_error and "offset" in text_of(r), "bad offset named", r)
    ok("tool_errors")


async def main():
    params = StdioServerParameters(
        command=os.environ["PATCHWISE_BIN"],
        args=["mcp", "--workspace", str(WS)],
        env={
            "HOME": HOME,
            "XDG_CONFIG_HOME": f"{HOME}/config",
            "XDG_DATA_HOME": f"{HOME}/data",
            "RUST_LOG": "patchwise=debug",
        },
        cwd=str(WS),
    )
    with open(f"{HOME}/server.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                info = await session.initialize()
                check(info.server_info.name == "patchwise", f"server info: {info.server_info}")
                ok("initialize")
                await tools_are_listed(session)
                await read_and_lenient_edit(session)
                await ambiguous_and_unread(session)
                await stale_edit(session)
                await sandbox(session)
                await context_tool(session)
                await protocol_errors(session)
                await research(session)


if __name__ == "__main__":
    try:
        anyio.run(main)
    except Exception as e:  # noqa: BLE001 - report any failure with its cause
        while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
            e = e.exceptions[0]
        print(f"FAILED: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
