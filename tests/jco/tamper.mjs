// Copies an answers file with one decision changed: the first Endpoints create or update with
// a ready address gets that address moved to the not-ready ones. `run.sh` checks that weir
// then fails that case.
//
//   node tamper.mjs ANSWERS.json TAMPERED.json

import { readFileSync, writeFileSync } from 'node:fs';

const [from, to] = process.argv.slice(2);
const answers = JSON.parse(readFileSync(from, 'utf8'));
const target = answers.find((a) => {
  const endpoints = a.reconcile.tag === 'ok' ? a.reconcile.val.endpoints : undefined;
  return ['create', 'update'].includes(endpoints?.tag) &&
    endpoints.val.subsets.some((s) => s.addresses.length > 0);
});
if (target === undefined) {
  console.error('tamper.mjs: no answer writes Endpoints with a ready address');
  process.exit(2);
}
const subset = target.reconcile.val.endpoints.val.subsets.find((s) => s.addresses.length > 0);
subset.notReadyAddresses.push(subset.addresses.shift());
writeFileSync(to, JSON.stringify(answers));
console.log(`tampered: ${target.case}`);
