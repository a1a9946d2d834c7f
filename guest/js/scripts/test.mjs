// Runs the SDK's unit tests (tests/*.test.ts) under Node: rolldown bundles each with the SDK,
// the WIT log import replaced by tests/log-stub.ts (outside a component there is no host to log
// to), and `node --test` runs the bundles.
import { spawnSync } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { rolldown } from "rolldown";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tests = (await readdir(join(root, "tests"))).filter((f) => f.endsWith(".test.ts"));
const work = await mkdtemp(join(tmpdir(), "weir-js-sdk-tests-"));
try {
  const bundles = [];
  for (const test of tests) {
    const bundle = await rolldown({
      input: join(root, "tests", test),
      resolve: {
        alias: {
          "weir-policy": join(root, "src/weir-policy.ts"),
          "weir:endpoints/log@0.2.0": join(root, "tests/log-stub.ts"),
        },
      },
      logLevel: "warn",
    });
    const file = join(work, test.replace(/\.ts$/, ".mjs"));
    await bundle.write({ file, format: "esm" });
    await bundle.close();
    bundles.push(file);
  }
  const run = spawnSync(process.execPath, ["--test", ...bundles], { stdio: "inherit" });
  process.exitCode = run.status ?? 1;
} finally {
  await rm(work, { recursive: true, force: true });
}
