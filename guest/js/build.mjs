#!/usr/bin/env node
// Builds a JavaScript or TypeScript policy into a hooks component (world `weir:hooks/hooks`):
//   node build.mjs POLICY.(js|ts) -o HOOKS.wasm
// rolldown bundles the policy with this SDK (`import ... from "weir-policy"`) into one ES
// module, stripping TypeScript types; componentize-js builds that module into a component.
// `weir policy build HOOKS.wasm -o POLICY.wasm` then composes it with upstream's engine.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const usage = "usage: node build.mjs POLICY.(js|ts) -o HOOKS.wasm";

let input, output;
try {
  const { values, positionals } = parseArgs({
    options: { out: { type: "string", short: "o" }, help: { type: "boolean", short: "h" } },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  if (positionals.length !== 1 || !values.out) throw new Error("one policy file and -o are required");
  [input, output] = [resolve(positionals[0]), resolve(values.out)];
} catch (e) {
  console.error(`error: ${e.message}\n${usage}`);
  process.exit(2);
}

const { rolldown } = await import("rolldown");
const { componentize } = await import("@bytecodealliance/componentize-js");

const work = await mkdtemp(join(tmpdir(), "weir-js-policy-"));
try {
  const bundle = await rolldown({
    input,
    // WIT imports stay imports: componentize-js binds them to the component's imports.
    external: [/^weir:/],
    resolve: { alias: { "weir-policy": join(here, "src/weir-policy.ts") } },
    logLevel: "warn",
  });
  const source = join(work, "policy.js");
  await bundle.write({ file: source, format: "esm" });
  await bundle.close();
  const { component } = await componentize({
    sourcePath: source,
    witPath: resolve(here, "../../wit/hooks/v0.2"),
    worldName: "hooks",
    // The host offers no network: a policy that could fetch would fail to link.
    disableFeatures: ["http", "fetch-event"],
  });
  await writeFile(output, component);
  console.log(`built ${output}`);
} catch (e) {
  console.error(`error: cannot build ${input}: ${e.message ?? e}`);
  process.exitCode = 1;
} finally {
  await rm(work, { recursive: true, force: true });
}
