// Tests of shapes.mjs (`node --test`, run by run.sh): jco's declarations read, and every
// difference from them refused with its path.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ShapeError, convert, parseShapes } from './shapes.mjs';

// The form `jco transpile` writes declarations in (interfaces/*.d.ts).
const declarations = `
export interface KeyValue {
  key: string,
  value: string,
}
export type TargetPort = TargetPortNumber | TargetPortName;
export interface TargetPortNumber {
  tag: 'number',
  val: number,
}
export interface TargetPortName {
  tag: 'name',
  val: string,
}
export interface Changes {
  labels: Array<KeyValue>,
  'delete': Array<string>,
  cpuMillis: bigint,
  target?: TargetPort,
}
`;
const types = parseShapes(declarations);
const changes = { kind: 'named', name: 'Changes' };

test('JSON becomes jco values and back', () => {
  const json = {
    labels: [{ key: 'app', value: 'web' }],
    delete: ['a'],
    cpuMillis: '18446744073709551615',
    target: { tag: 'name', val: 'http' },
  };
  const js = convert(types, changes, json, 'x', true);
  assert.equal(js.cpuMillis, 18446744073709551615n);
  assert.deepEqual(convert(types, changes, js, 'x', false), json);
  const absent = convert(types, changes, { ...json, target: null }, 'x', true);
  assert.equal(absent.target, undefined, 'an absent option is undefined for jco');
  assert.equal(convert(types, changes, absent, 'x', false).target, null, 'and null in JSON');
});

test('a value of another shape is refused with its path', () => {
  const good = { labels: [], delete: [], cpuMillis: '1' };
  const wrong = [
    [{ ...good, labels: [{ key: 'a', value: 'b', extra: 1 }] }, 'x.labels[0]: unknown key "extra"'],
    [{ ...good, labels: [{ key: 'a' }] }, 'x.labels[0].value: missing'],
    [{ ...good, cpuMillis: 1 }, 'x.cpuMillis: expected a bigint as a decimal string'],
    [{ ...good, target: { tag: 'Name', val: 'a' } }, 'x.target.tag: expected one of number, name'],
    [{ ...good, target: { tag: 'number', val: 1.5 } }, 'x.target.val: expected an integer'],
    [{ ...good, delete: 'a' }, 'x.delete: expected an array'],
  ];
  for (const [value, message] of wrong) {
    assert.throws(() => convert(types, changes, value, 'x', true),
      (e) => e instanceof ShapeError && e.message.startsWith(message), message);
  }
});

test('a declaration it cannot read stops the run', () => {
  assert.throws(() => parseShapes('export interface A {\n  f: Map<string, string>,\n}'), ShapeError);
  assert.throws(() => parseShapes('nothing here'), ShapeError);
});
