// The ACP client side of tests/acp.rs: the official TypeScript SDK (`@agentclientprotocol/sdk`,
// its `client()` app over `ndJsonStream`) drives `patchwise acp` through a script and prints
// what it saw as one JSON object on stdout, for the Rust test to check.
//
// Usage: node client.mjs '<scenario JSON>'
//   scenario = {
//     agent: ["/path/to/patchwise", "acp", ...],   // spawned with this process's environment
//     fs: {readTextFile: bool, writeTextFile: bool},
//     terminal: bool,
//     permission: "allow_once" | "allow_always" | "reject_once" | "cancelled" | "cancel", or a
//                 list of them answered in turn ("cancel": the user cancels the prompt while
//                 the request is open — session/cancel is sent, and the request is answered
//                 `cancelled` only once the prompt has ended, or after 5 s),
//     open: {"/abs/path": "unsaved text"},           // what fs/read_text_file answers for open files
//     steps: [
//       {op: "initialize"},
//       {op: "new", cwd},                             // sessionId kept for later steps
//       {op: "mode", mode},                           // session/set_mode
//       {op: "option", configId, value},              // session/set_config_option
//       {op: "waitFor", update: "<sessionUpdate kind>"}, // until one arrives (10 s at most)
//       {op: "prompt", prompt: [ContentBlock...], cancelOn?: "<sessionUpdate kind>[:<tool kind>]"},
//       {op: "prompt_twice", prompt},                 // a second prompt while the first runs,
//                                                     // then the first cancelled
//       {op: "load", sessionId?, cwd},
//       {op: "request", method, params},              // anything else, raw
//     ]
//   }
// Every request's result or error is recorded in `results`, in order; `updates` holds every
// `session/update` (with the index of the step it arrived during), `permissions` the permission
// requests, `writes` and `reads` the fs calls, and `sent` the raw lines the client wrote (the
// first is its real `initialize`). A prompt the client cancelled (`cancelOn`, a "cancel"
// permission answer, `prompt_twice`) has `cancelledAfterMs` in its result: milliseconds from
// session/cancel to the prompt's answer. Updates, permission requests and fs calls carry `seq` (one
// count over all of them, the order they arrived in) and `ms` (milliseconds since the last
// `session/prompt` was sent; scripts/bench/acp-latency reads them).

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const scenario = JSON.parse(process.argv[2]);
const out = {
  sent: [],
  results: [],
  updates: [],
  permissions: [],
  writes: [],
  reads: [],
  stderr: "",
};
let step = -1;
let seq = 0;
let promptAt = Date.now();
const mark = () => ({ seq: seq++, ms: Date.now() - promptAt });
let sessionId = null;
let cancelOn = null;
let cancelDelayMs = 0;
let cancelPending = false;
let cancelled = null;
let promptDone = false;
let cx = null;

const child = spawn(scenario.agent[0], scenario.agent.slice(1), {
  stdio: ["pipe", "pipe", "pipe"],
});
child.stderr.on("data", (d) => {
  out.stderr += d.toString();
});

// The agent's stdin, teed into `sent` line by line.
const stdin = Writable.toWeb(child.stdin).getWriter();
let pending = "";
const output = new WritableStream({
  async write(chunk) {
    pending += new TextDecoder().decode(chunk);
    let nl;
    while ((nl = pending.indexOf("\n")) >= 0) {
      out.sent.push(JSON.parse(pending.slice(0, nl)));
      pending = pending.slice(nl + 1);
    }
    await stdin.write(chunk);
  },
  async close() {
    await stdin.close();
  },
});
const stream = acp.ndJsonStream(output, Readable.toWeb(child.stdout));

const app = acp
  .client({ name: "patchwise-acp-test" })
  .onNotification("session/update", ({ params }) => {
    out.updates.push({ step, ...mark(), ...params });
    if (cancelOn && cancels(params.update) && !cancelled && !cancelPending) {
      // `cancelDelayMs`: the cancel goes out that long after the update (a run that is by then
      // waiting for a model that never answers), timed from when it is sent.
      cancelPending = true;
      setTimeout(() => {
        cancelled = Date.now();
        cx.notify("session/cancel", { sessionId: params.sessionId });
      }, cancelDelayMs);
    }
  })
  .onRequest("session/request_permission", async ({ params, signal }) => {
    out.permissions.push({ step, ...mark(), ...params });
    // One answer for every request, or a list answered in turn.
    const answer = Array.isArray(scenario.permission)
      ? scenario.permission[out.permissions.length - 1]
      : scenario.permission;
    if (answer === "cancelled") {
      return { outcome: { outcome: "cancelled" } };
    }
    if (answer === "cancel") {
      cancelled = Date.now();
      await cx.notify("session/cancel", { sessionId: params.sessionId });
      const until = Date.now() + 5000;
      while (!promptDone && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 10));
      }
      return { outcome: { outcome: "cancelled" } };
    }
    const option = params.options.find((o) => o.kind === answer);
    if (!option) {
      throw new Error(`no ${answer} option in ${JSON.stringify(params.options)}`);
    }
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest("fs/write_text_file", async ({ params }) => {
    out.writes.push({ step, ...mark(), ...params });
    return {};
  })
  .onRequest("fs/read_text_file", async ({ params }) => {
    out.reads.push({ step, ...mark(), ...params });
    const open = (scenario.open ?? {})[params.path];
    if (open !== undefined) {
      return { content: open };
    }
    const fs = await import("node:fs/promises");
    return { content: await fs.readFile(params.path, "utf8") };
  });

// `cancelOn`: a sessionUpdate kind, or `kind:toolKind` for a tool call of that kind
// ("tool_call:edit").
function cancels(update) {
  const [kind, toolKind] = cancelOn.split(":");
  return update.sessionUpdate === kind && (!toolKind || update.kind === toolKind);
}

async function call(method, params) {
  try {
    const result = await cx.request(method, params);
    out.results.push({ step, method, result });
    return result;
  } catch (e) {
    out.results.push({ step, method, error: { code: e.code, message: e.message, data: e.data } });
    return null;
  }
}

try {
  await app.connectWith(stream, async (context) => {
    cx = context;
    for (const [i, s] of scenario.steps.entries()) {
      step = i;
      switch (s.op) {
        case "initialize":
          await call("initialize", {
            protocolVersion: acp.PROTOCOL_VERSION,
            clientCapabilities: {
              fs: scenario.fs ?? { readTextFile: false, writeTextFile: false },
              terminal: scenario.terminal ?? false,
            },
            clientInfo: { name: "patchwise-acp-test", version: "1.0.0" },
          });
          break;
        case "new": {
          const r = await call("session/new", { cwd: s.cwd, mcpServers: [] });
          if (r) sessionId = r.sessionId;
          break;
        }
        case "mode":
          await call("session/set_mode", { sessionId, modeId: s.mode });
          break;
        case "option":
          await call("session/set_config_option", {
            sessionId,
            configId: s.configId,
            value: s.value,
            ...(s.type ? { type: s.type } : {}),
          });
          break;
        case "waitFor": {
          const until = Date.now() + 10000;
          while (
            !out.updates.some((u) => u.update.sessionUpdate === s.update) &&
            Date.now() < until
          ) {
            await new Promise((r) => setTimeout(r, 10));
          }
          break;
        }
        case "prompt": {
          cancelOn = s.cancelOn ?? null;
          cancelDelayMs = s.cancelDelayMs ?? 0;
          cancelPending = false;
          cancelled = null;
          promptDone = false;
          const started = Date.now();
          promptAt = started;
          await call("session/prompt", { sessionId: s.sessionId ?? sessionId, prompt: s.prompt });
          promptDone = true;
          if (cancelled) {
            out.results[out.results.length - 1].cancelledAfterMs = Date.now() - cancelled;
          }
          out.results[out.results.length - 1].ms = Date.now() - started;
          break;
        }
        case "prompt_twice": {
          const first = call("session/prompt", { sessionId, prompt: s.prompt });
          // The second waits until the first has visibly started.
          while (!out.updates.some((u) => u.step === i)) {
            await new Promise((r) => setTimeout(r, 10));
          }
          await call("session/prompt", { sessionId, prompt: s.prompt });
          const cancelledAt = Date.now();
          await cx.notify("session/cancel", { sessionId });
          await first;
          // The refused second prompt answered first; the first's result is the last one.
          out.results[out.results.length - 1].cancelledAfterMs = Date.now() - cancelledAt;
          break;
        }
        case "load": {
          const id = s.sessionId ?? sessionId;
          const r = await call("session/load", { sessionId: id, cwd: s.cwd, mcpServers: [] });
          if (r) sessionId = id;
          break;
        }
        case "request":
          await call(s.method, s.params);
          break;
        default:
          throw new Error(`unknown step ${s.op}`);
      }
    }
  });
} catch (e) {
  out.error = String(e?.stack ?? e);
}
child.stdin.end();
const code = await new Promise((resolve) => {
  if (child.exitCode !== null) resolve(child.exitCode);
  child.on("exit", (c) => resolve(c));
  setTimeout(() => {
    child.kill();
    resolve("killed");
  }, 5000);
});
out.exit = code;
process.stdout.write(JSON.stringify(out) + "\n");
