// The settings sent to the server (initializationOptions, didChangeConfiguration): only what the
// user set, never the contributed defaults — a default sent from here would override the
// workspace's .patchwise/config.toml, which the server reads underneath the client's settings.
// `patchwise.edit.auto_apply` becomes `{ edit: { auto_apply: … } }`; `patchwise.settings` is a
// raw object of the same shape, under the typed keys.
import * as vscode from 'vscode';

const CLIENT_ONLY = new Set(['serverPath', 'settings', 'trace.server']);

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `over` deep-merged onto `base` (objects merge, everything else replaces). */
export function merge(base: Json, over: Json): Json {
  const out: Json = { ...base };
  for (const [key, value] of Object.entries(over)) {
    out[key] = isObject(out[key]) && isObject(value) ? merge(out[key] as Json, value) : value;
  }
  return out;
}

export function explicitSettings(context: vscode.ExtensionContext): Json {
  const config = vscode.workspace.getConfiguration('patchwise');
  const properties = (context.extension.packageJSON?.contributes?.configuration?.properties ?? {}) as Json;
  let typed: Json = {};
  for (const full of Object.keys(properties)) {
    const key = full.replace(/^patchwise\./, '');
    if (CLIENT_ONLY.has(key)) {
      continue;
    }
    const inspected = config.inspect(key);
    const value = inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
    if (value === undefined) {
      continue;
    }
    const path = key.split('.');
    let nested: unknown = value;
    for (const part of path.reverse()) {
      nested = { [part]: nested };
    }
    typed = merge(typed, nested as Json);
  }
  const raw = config.get<Json>('settings') ?? {};
  return merge(isObject(raw) ? raw : {}, typed);
}
