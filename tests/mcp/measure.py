"""Round-trip time of one `edit_file` through `patchwise mcp` against the same edit through
`patchwise edit`, on a 100 KB file, in one run (the machine is shared: read the ratio).

    .venv-test/bin/python tests/mcp/measure.py [BIN [ROUNDS]]   (BIN: target/debug/patchwise)

MCP: one session (as an agent keeps it), the file read once, then ROUNDS edits that flip one
line back and forth, each timed from `tools/call` sent to the result received. CLI: the same
flips, each a fresh `patchwise edit` process (as a script or agent shelling out would run it).
Run on a Rust file (MCP edits also pass the tree-sitter check that refuses new syntax errors,
which `patchwise edit` does not run) and on the same text as `.txt` (no parse check).
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/debug/patchwise")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 50


def make_file(path: Path) -> tuple[str, str]:
    lines = []
    i = 0
    while sum(len(line) for line in lines) < 100 * 1024:
        lines.append(f"fn item_{i}(x: u64) -> u64 {{\n\tlet y = x * {i} + 1;\n\ty ^ (y >> 3)\n}}\n\n")
        i += 1
    path.write_text("".join(lines))
    # A line in the middle, unique in the file.
    mid = i // 2
    return f"\tlet y = x * {mid} + 1;", f"\tlet y = x * {mid} + 2;"


def flips(a: str, b: str):
    for n in range(ROUNDS):
        yield (a, b) if n % 2 == 0 else (b, a)


async def mcp_times(ws: Path, name: str, a: str, b: str) -> list[float]:
    params = StdioServerParameters(command=BIN, args=["mcp", "--workspace", str(ws)], cwd=str(ws))
    times = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("read_file", {"path": name, "limit": 1})
            for old, new in flips(a, b):
                started = time.perf_counter()
                r = await session.call_tool("edit_file", {"path": name, "old_string": old, "new_string": new})
                times.append(time.perf_counter() - started)
                assert not r.is_error, r
    return times


def cli_times(ws: Path, name: str, a: str, b: str) -> list[float]:
    times = []
    old_file, new_file = ws / "old.txt", ws / "new.txt"
    for old, new in flips(a, b):
        old_file.write_text(old)
        new_file.write_text(new)
        started = time.perf_counter()
        subprocess.run(
            [BIN, "edit", str(ws / name), "--old-file", str(old_file), "--new-file", str(new_file)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        times.append(time.perf_counter() - started)
    return times


def main():
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        a, b = make_file(ws / "big.rs")
        (ws / "big.txt").write_text((ws / "big.rs").read_text())
        size = (ws / "big.rs").stat().st_size
        print(f"file: {size} bytes; {ROUNDS} edits each; {BIN}")
        for name in ["big.rs", "big.txt"]:
            mcp = anyio.run(mcp_times, ws, name, a, b)
            cli = cli_times(ws, name, a, b)
            mcp_ms = statistics.median(mcp) * 1000
            cli_ms = statistics.median(cli) * 1000
            print(
                f"{name}: edit_file via MCP median {mcp_ms:.1f} ms (mean {statistics.mean(mcp) * 1000:.1f}); "
                f"patchwise edit median {cli_ms:.1f} ms (mean {statistics.mean(cli) * 1000:.1f}); "
                f"ratio MCP/CLI {mcp_ms / cli_ms:.2f}"
            )


if __name__ == "__main__":
    main()
