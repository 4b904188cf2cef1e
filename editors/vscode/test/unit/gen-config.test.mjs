// The settings generator (scripts/gen-config.mjs) on a schema shaped like schemars' output.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLIENT_SETTINGS, generate, settingsFromSchema } from '../../scripts/gen-config.mjs';

const schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: 'Config',
  type: 'object',
  properties: {
    data_dir: { type: ['string', 'null'], default: null, description: 'Where `data` lives.' },
    edit: { $ref: '#/$defs/Edit', description: '`[edit]`.' },
    providers: { type: 'object', additionalProperties: { $ref: '#/$defs/Provider' }, default: {} },
  },
  $defs: {
    Edit: {
      type: 'object',
      additionalProperties: false,
      properties: {
        auto_apply: { type: 'boolean', default: false, description: 'Apply at once.' },
        format: { $ref: '#/$defs/Format', default: 'auto' },
        checks: {
          type: 'object',
          additionalProperties: false,
          properties: { timeout_secs: { type: 'integer', format: 'uint64', default: 600, 'x-expected': 'seconds' } },
        },
      },
    },
    Format: {
      description: 'How edits are asked for.',
      oneOf: [
        { const: 'auto', type: 'string', description: 'Pick per model.' },
        { const: 'tools', type: 'string', description: 'Tool calls.' },
      ],
    },
    Provider: {
      type: 'object',
      additionalProperties: false,
      properties: { kind: { $ref: '#/$defs/Format' }, base_url: { type: 'string' } },
    },
  },
};

test('fixed tables become one setting per key, nested tables one level deeper', () => {
  const settings = settingsFromSchema(schema);
  assert.deepEqual(Object.keys(settings).sort(), [
    'patchwise.data_dir',
    'patchwise.edit.auto_apply',
    'patchwise.edit.checks.timeout_secs',
    'patchwise.edit.format',
    'patchwise.providers',
  ]);
  assert.deepEqual(settings['patchwise.edit.auto_apply'], { type: 'boolean', default: false, description: 'Apply at once.' });
  // format/x- keywords dropped; the rest kept.
  assert.deepEqual(settings['patchwise.edit.checks.timeout_secs'], { type: 'integer', default: 600 });
});

test('oneOf of consts becomes an enum with descriptions; $ref keywords win', () => {
  const format = settingsFromSchema(schema)['patchwise.edit.format'];
  assert.deepEqual(format.enum, ['auto', 'tools']);
  assert.deepEqual(format.enumDescriptions, ['Pick per model.', 'Tool calls.']);
  assert.equal(format.default, 'auto');
  assert.equal(format.type, 'string');
});

test('optional values lose null; markdown descriptions are marked as such', () => {
  const dataDir = settingsFromSchema(schema)['patchwise.data_dir'];
  assert.equal(dataDir.type, 'string');
  assert.equal('default' in dataDir, false);
  assert.equal(dataDir.markdownDescription, 'Where `data` lives.');
});

test('maps stay one object setting with their refs inlined', () => {
  const providers = settingsFromSchema(schema)['patchwise.providers'];
  assert.equal(providers.type, 'object');
  assert.deepEqual(providers.additionalProperties.properties.kind.enum, ['auto', 'tools']);
  assert.equal(JSON.stringify(providers).includes('$ref'), false);
});

test('package.json keeps its other contributions and the client settings come first', () => {
  const pkg = { name: 'x', contributes: { commands: [{ command: 'a' }], configuration: {} } };
  const out = generate(pkg, schema);
  assert.deepEqual(out.contributes.commands, [{ command: 'a' }]);
  const keys = Object.keys(out.contributes.configuration.properties);
  assert.deepEqual(keys.slice(0, 2), Object.keys(CLIENT_SETTINGS));
  assert.equal(keys.length, 2 + 5);
});

test('an unresolvable $ref is an error naming it', () => {
  const broken = { type: 'object', properties: { a: { $ref: '#/$defs/Missing' } } };
  assert.throws(() => settingsFromSchema(broken), /cannot resolve #\/\$defs\/Missing/);
});
