// Writes TypeScript declarations for world `hooks` of wit/hooks/v0.2 into types/ with
// `jco guest-types`' own generator. jco's CLI gives its WIT reader no filesystem access
// (preview2-shim opens no directory by default), so this grants it the WIT directory.
import { existsSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..");
const wit = resolve(root, "../../wit/hooks/v0.2");
const out = join(root, "types");

// The shim instance jco-transpile imports: its own copy when npm nested one, else the shared.
const nested = join(root, "node_modules/@bytecodealliance/jco-transpile/node_modules/@bytecodealliance/preview2-shim");
const shim = existsSync(nested) ? nested : join(root, "node_modules/@bytecodealliance/preview2-shim");
const fs = await import(pathToFileURL(join(shim, "dist/nodejs/filesystem.js")));
fs._setPreopens({ "/": "/" });

const { generateGuestTypes } = await import("@bytecodealliance/jco-transpile");
const files = await generateGuestTypes(wit, { worldName: "hooks", outDir: out + "/" });
await rm(out, { recursive: true, force: true });
for (const [path, data] of Object.entries(files)) {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, data);
}
console.log(`wrote ${Object.keys(files).length} declaration files to ${out}`);
