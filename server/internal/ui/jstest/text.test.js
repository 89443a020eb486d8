import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diffLines, pretty } from '../static/diff.js';
import { schemaRows } from '../static/schema.js';

test('pretty sorts keys, so order is never a change', () => {
  assert.equal(pretty({ b: 1, a: { d: [{ z: 1, y: 2 }], c: null } }), pretty({ a: { c: null, d: [{ y: 2, z: 1 }] }, b: 1 }));
  assert.equal(pretty(undefined), 'null');
});

test('diffLines keeps common lines and marks the changed ones', () => {
  const d = diffLines(pretty({ accounts: 3, prefix: 'x' }), pretty({ accounts: 4, prefix: 'x' }));
  assert.deepEqual(d.filter((l) => l.op !== ' ').map((l) => l.op + l.text.trim()), ['-"accounts": 3,', '+"accounts": 4,']);
  assert.equal(d.filter((l) => l.op === ' ').length, 3);
  assert.deepEqual(diffLines('a', 'a'), [{ op: ' ', text: 'a' }]);
  assert.deepEqual(diffLines('', 'b').map((l) => l.op), ['-', '+']);
});

test('diffLines shows huge documents as a replacement instead of a huge table', () => {
  const big = Array.from({ length: 2500 }, (_, i) => `${i}`).join('\n');
  const d = diffLines(big, `${big}\nx`);
  assert.equal(d.length, 2500 + 2501);
});

test('schemaRows flattens properties with type, required and constraints', () => {
  const rows = schemaRows({
    type: 'object',
    required: ['prefix'],
    properties: {
      prefix: { type: 'string', minLength: 1, description: 'Starts every name.' },
      tags: { type: 'array', items: { type: 'object', properties: { k: { type: 'string', enum: ['a', 'b'] } } } },
      extra: { type: 'object', additionalProperties: { type: 'integer' } },
    },
  });
  assert.deepEqual(rows.map((r) => [r.path, r.type, r.required]), [
    ['prefix', 'string', true], ['tags', 'array', false], ['tags[]', 'object', false], ['tags[].k', 'string', false],
    ['extra', 'object', false], ['extra.*', 'integer', false],
  ]);
  assert.equal(rows[0].constraints, 'minLength: 1');
  assert.equal(rows[0].description, 'Starts every name.');
  assert.equal(rows[3].constraints, 'enum: ["a","b"]');
  assert.deepEqual(schemaRows(null), []);
  assert.equal(schemaRows({ properties: Object.fromEntries(Array.from({ length: 900 }, (_, i) => [`p${i}`, {}])) }).length, 500);
});

test('a trailing comma added by a new member is not a change', () => {
  const d = diffLines(pretty({ prefix: 'x' }), pretty({ prefix: 'x', vpc_cidr: '10.1.0.0/16' }));
  assert.deepEqual(d.filter((l) => l.op !== ' ').map((l) => l.op + l.text.trim()), ['+"vpc_cidr": "10.1.0.0/16"']);
  assert.equal(d.find((l) => l.text.includes('prefix')).text, '  "prefix": "x",');
  // A custom key compares lines exactly.
  assert.equal(diffLines('a,', 'a', (l) => l).length, 2);
});
