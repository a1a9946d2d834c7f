// Calls a guest that `jco transpile` turned into a JavaScript module on the requests
// `weir test --write-requests` wrote, and writes its answers for `weir test --answers`.
//
//   node run.mjs MODULE.js TYPES.d.ts REQUESTS.json ANSWERS.json
//
// TYPES.d.ts is jco's declaration of the `weir:endpoints/types` interface
// (`interfaces/weir-endpoints-types.d.ts` next to the module): every request and every
// decision is checked against it (shapes.mjs). For each case, as weir's case runner does:
// `validateConfig(config)` when the case has a configuration, then `reconcile(request)`.
// A guest error (jco throws it as an error whose `payload` is the guest's message) is
// answered `{tag: "err"}`, any other failure of the call `{tag: "trap"}`; a shape mismatch
// stops the run (exit 2), since it is a fault of this harness or of jco, not of the guest.

import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { ShapeError, convert, parseShapes } from './shapes.mjs';

/** Calls `f`, recording its result as weir reads one. */
function call(f) {
  try {
    return { tag: 'ok', val: f() };
  } catch (e) {
    if (e !== null && typeof e === 'object' && Object.prototype.hasOwnProperty.call(e, 'payload')) {
      if (typeof e.payload !== 'string') {
        throw new ShapeError(`the guest's error is not a string: ${String(e.payload)}`);
      }
      return { tag: 'err', val: e.payload };
    }
    return { tag: 'trap', val: String(e?.stack ?? e) };
  }
}

async function main() {
  const [moduleFile, typesFile, requestsFile, answersFile] = process.argv.slice(2);
  if (answersFile === undefined) {
    console.error('usage: node run.mjs MODULE.js TYPES.d.ts REQUESTS.json ANSWERS.json');
    return 2;
  }
  const types = parseShapes(readFileSync(typesFile, 'utf8'));
  const named = (name) => ({ kind: 'named', name });
  const guest = await import(pathToFileURL(resolve(moduleFile)).href);
  for (const name of ['validateConfig', 'reconcile']) {
    if (typeof guest[name] !== 'function') {
      throw new ShapeError(`${moduleFile} exports no function ${name}`);
    }
  }
  const requests = JSON.parse(readFileSync(requestsFile, 'utf8'));
  if (!Array.isArray(requests)) throw new ShapeError(`${requestsFile}: expected an array`);
  const answers = [];
  const tally = { ok: 0, err: 0, trap: 0 };
  for (const entry of requests) {
    const at = `${entry.case}: request`;
    const request = convert(types, named('Request'), entry.request, at, true);
    const answer = { case: entry.case, requestSha256: entry.requestSha256, validateConfig: null };
    if (entry.config !== null) {
      if (typeof entry.config !== 'string') throw new ShapeError(`${entry.case}: config is not a string`);
      const result = call(() => guest.validateConfig(entry.config));
      if (result.tag === 'ok') {
        if (result.val !== undefined) throw new ShapeError(`${entry.case}: validateConfig returned a value`);
        delete result.val;
      }
      answer.validateConfig = result;
    }
    const result = call(() => guest.reconcile(request));
    if (result.tag === 'ok') {
      result.val = convert(types, named('Decision'), result.val, `${entry.case}: decision`, false);
    }
    tally[result.tag] += 1;
    answer.reconcile = result;
    answers.push(answer);
  }
  writeFileSync(answersFile, JSON.stringify(answers));
  console.log(`${answers.length} requests answered under Node.js ${process.version}: ` +
    `${tally.ok} decisions, ${tally.err} guest errors, ${tally.trap} failed calls`);
  return 0;
}

try {
  process.exitCode = await main();
} catch (e) {
  console.error(`run.mjs: ${e instanceof ShapeError ? e.message : e?.stack ?? e}`);
  process.exitCode = 2;
}
