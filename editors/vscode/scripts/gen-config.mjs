// Generates package.json's `contributes.configuration` from the JSON schema of patchwise's
// configuration (docs/config.schema.json, itself generated from the Rust config types), so the
// settings VS Code offers are exactly the keys the server reads.
//
//   node scripts/gen-config.mjs           rewrite package.json
//   node scripts/gen-config.mjs --check   exit 1 when package.json is stale (tests/vscode.rs)
//
// Fixed tables become one setting per key (`patchwise.edit.auto_apply`, and one level deeper for
// nested tables such as `patchwise.develop.checks.test`), so the settings UI can edit them;
// open-ended maps (`patchwise.providers`, `patchwise.models`) stay one object setting each.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Settings of the extension itself, not of the server. */
export const CLIENT_SETTINGS = {
  'patchwise.serverPath': {
    type: 'string',
    default: 'patchwise',
    scope: 'machine-overridable',
    description: 'The patchwise binary (absolute path if not on PATH). Changing it restarts the server.',
  },
  'patchwise.settings': {
    type: 'object',
    default: {},
    description:
      'Raw server settings, the shape of .patchwise/config.toml, under the typed settings below. Only settings you set are sent; the configuration files apply underneath.',
  },
};

const MAX_DEPTH = 32;

function resolve(schema, root, depth = 0) {
  if (depth > MAX_DEPTH) {
    throw new Error('the schema nests $ref deeper than 32 levels (a cycle?)');
  }
  if (schema && typeof schema === 'object' && typeof schema.$ref === 'string') {
    const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(schema.$ref);
    if (!match || !root[match[1]]?.[match[2]]) {
      throw new Error(`cannot resolve ${schema.$ref}`);
    }
    const { $ref, ...rest } = schema;
    // Keywords next to $ref (description, default) win over the definition's.
    return { ...resolve(root[match[1]][match[2]], root, depth + 1), ...rest };
  }
  return schema;
}

/** `schema` with every $ref inlined and what VS Code's settings do not use removed. */
export function inline(schema, root, depth = 0) {
  if (depth > MAX_DEPTH) {
    throw new Error('the schema nests deeper than 32 levels (a cycle?)');
  }
  if (Array.isArray(schema)) {
    return schema.map((s) => inline(s, root, depth + 1));
  }
  if (!schema || typeof schema !== 'object') {
    return schema;
  }
  const resolved = resolve(schema, root);
  const out = {};
  for (const [key, value] of Object.entries(resolved)) {
    if (['$schema', '$defs', 'definitions', 'title', 'format'].includes(key) || key.startsWith('x-')) {
      continue;
    }
    out[key] = ['properties', 'patternProperties'].includes(key)
      ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inline(v, root, depth + 1)]))
      : inline(value, root, depth + 1);
  }
  // An enum written as oneOf of consts: VS Code shows `enum` with `enumDescriptions` as a list.
  if (Array.isArray(out.oneOf) && out.oneOf.every((o) => o && 'const' in o)) {
    out.enum = out.oneOf.map((o) => o.const);
    if (out.oneOf.some((o) => o.description)) {
      out.enumDescriptions = out.oneOf.map((o) => o.description ?? '');
    }
    out.type ??= out.oneOf[0].type;
    delete out.oneOf;
  }
  // Optional values: unset is what null means, and VS Code's UI edits single types only.
  if (Array.isArray(out.type) && out.type.includes('null')) {
    const types = out.type.filter((t) => t !== 'null');
    out.type = types.length === 1 ? types[0] : types;
    if (out.default === null) {
      delete out.default;
    }
  }
  if (typeof out.description === 'string' && /[`*[]/.test(out.description)) {
    out.markdownDescription = out.description;
    delete out.description;
  }
  return out;
}

function isTable(schema) {
  return schema && schema.type === 'object' && schema.properties && !schema.additionalProperties;
}

/** The `patchwise.*` settings for the configuration schema `root`. */
export function settingsFromSchema(root) {
  const settings = {};
  const add = (prefix, schema, depth) => {
    const resolved = resolve(schema, root);
    if (isTable(resolved) && depth < 2) {
      for (const [key, child] of Object.entries(resolved.properties)) {
        add(`${prefix}.${key}`, child, depth + 1);
      }
      return;
    }
    settings[prefix] = inline(schema, root);
  };
  for (const [key, schema] of Object.entries(root.properties ?? {})) {
    add(`patchwise.${key}`, schema, 0);
  }
  return settings;
}

/** package.json with its configuration generated from `schema`. */
export function generate(pkg, schema) {
  const generated = settingsFromSchema(schema);
  const properties = { ...CLIENT_SETTINGS };
  for (const key of Object.keys(generated).sort()) {
    properties[key] = generated[key];
  }
  return {
    ...pkg,
    contributes: {
      ...pkg.contributes,
      configuration: { title: 'patchwise', properties },
    },
  };
}

const here = dirname(fileURLToPath(import.meta.url));
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const packagePath = join(here, '..', 'package.json');
  const schemaPath = process.env.PATCHWISE_CONFIG_SCHEMA ?? join(here, '..', '..', '..', 'docs', 'config.schema.json');
  const pkg = JSON.parse(readFileSync(packagePath, 'utf8'));
  const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));
  const text = JSON.stringify(generate(pkg, schema), null, 2) + '\n';
  if (process.argv.includes('--check')) {
    if (readFileSync(packagePath, 'utf8') !== text) {
      console.error(
        `editors/vscode/package.json's settings are stale against ${schemaPath}: run \`npm run gen:config\` in editors/vscode`,
      );
      process.exit(1);
    }
    console.log('package.json settings match the configuration schema');
  } else {
    writeFileSync(packagePath, text);
    console.log(`wrote ${Object.keys(generate(pkg, schema).contributes.configuration.properties).length} settings`);
  }
}
