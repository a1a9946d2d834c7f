// The JavaScript shapes of a component's WIT types, read from the TypeScript declarations
// `jco transpile` writes next to the module, and strict conversion between them and JSON.
//
// jco reads a record argument by destructuring it, so a misnamed key would reach the guest as
// `undefined` without a word. Checking every value against jco's own declarations, both ways,
// turns any difference between weir's JSON and jco's shapes into an error naming the path.
//
// JSON form (weir's `host/src/cases/js_form.rs`): a record is an object with exactly its
// declared keys, an absent option is null (or left out), a bigint is a decimal string.

/** A value that does not have the declared shape. */
export class ShapeError extends Error {}

/** Parses jco's declarations of interfaces and tagged unions into a table of named types. */
export function parseShapes(declarations) {
  const types = new Map();
  const interfaceRe = /export interface (\w+) \{([^}]*)\}/g;
  for (const [, name, body] of declarations.matchAll(interfaceRe)) {
    const fields = new Map();
    for (const line of body.split('\n')) {
      const field = line.trim().match(/^'?([\w]+)'?(\??): (.+?),?$/);
      if (field) {
        fields.set(field[1], { optional: field[2] === '?', type: parseType(field[3]) });
      } else if (line.trim() !== '') {
        throw new ShapeError(`cannot read the declaration of ${name}: ${line.trim()}`);
      }
    }
    types.set(name, { kind: 'record', fields });
  }
  for (const [, name, members] of declarations.matchAll(/export type (\w+) = ([\w |]+);/g)) {
    types.set(name, { kind: 'union', members: members.split('|').map((m) => m.trim()) });
  }
  if (types.size === 0) {
    throw new ShapeError('no interface or type declarations found');
  }
  return types;
}

function parseType(text) {
  const array = text.match(/^Array<(.+)>$/);
  if (array) return { kind: 'array', item: parseType(array[1]) };
  const literal = text.match(/^'([^']*)'$/);
  if (literal) return { kind: 'literal', value: literal[1] };
  if (['string', 'number', 'boolean', 'bigint'].includes(text)) return { kind: text };
  if (/^\w+$/.test(text)) return { kind: 'named', name: text };
  throw new ShapeError(`unsupported declared type: ${text}`);
}

/** Converts `value` between JSON (`toJs` true: JSON to JavaScript) and jco's shapes. */
export function convert(types, type, value, path, toJs) {
  const fail = (what) => {
    throw new ShapeError(`${path}: expected ${what}, got ${describe(value)}`);
  };
  switch (type.kind) {
    case 'string':
    case 'boolean':
      if (typeof value !== type.kind) fail(`a ${type.kind}`);
      return value;
    case 'number':
      if (typeof value !== 'number' || !Number.isInteger(value)) fail('an integer');
      return value;
    case 'bigint':
      if (toJs) {
        if (typeof value !== 'string' || !/^-?\d+$/.test(value)) fail('a bigint as a decimal string');
        return BigInt(value);
      }
      if (typeof value !== 'bigint') fail('a bigint');
      return value.toString();
    case 'literal':
      if (value !== type.value) fail(JSON.stringify(type.value));
      return value;
    case 'array':
      if (!Array.isArray(value)) fail('an array');
      return value.map((item, i) => convert(types, type.item, item, `${path}[${i}]`, toJs));
    case 'named':
      return convertNamed(types, type.name, value, path, toJs);
    default:
      throw new ShapeError(`${path}: unknown type kind ${type.kind}`);
  }
}

function convertNamed(types, name, value, path, toJs) {
  const type = types.get(name);
  if (type === undefined) throw new ShapeError(`${path}: no declaration of ${name}`);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ShapeError(`${path}: expected an object (${name}), got ${describe(value)}`);
  }
  if (type.kind === 'union') {
    const member = type.members.find((m) => types.get(m)?.fields.get('tag')?.type.value === value.tag);
    if (member === undefined) {
      const tags = type.members.map((m) => types.get(m)?.fields.get('tag')?.type.value);
      throw new ShapeError(`${path}.tag: expected one of ${tags.join(', ')} (${name}), got ${describe(value.tag)}`);
    }
    return convertNamed(types, member, value, path, toJs);
  }
  for (const key of Object.keys(value)) {
    if (!type.fields.has(key) && value[key] !== undefined) {
      throw new ShapeError(`${path}: unknown key ${JSON.stringify(key)} (${name} has ${[...type.fields.keys()].join(', ')})`);
    }
  }
  const out = {};
  for (const [key, field] of type.fields) {
    const v = value[key];
    if (v === undefined || v === null) {
      if (!field.optional) throw new ShapeError(`${path}.${key}: missing (${name})`);
      // jco leaves an absent option undefined; JSON has null for it.
      if (!toJs) out[key] = null;
      continue;
    }
    out[key] = convert(types, field.type, v, `${path}.${key}`, toJs);
  }
  return out;
}

function describe(value) {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'bigint') return `bigint ${value}`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${JSON.stringify(value)}`;
}
