// `npm run crds`: writes crds/*.yaml (and removes generated files of kinds that no longer exist).
import { readdir, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { renderCrds } from './render.js';

const dir = fileURLToPath(new URL('../../crds/', import.meta.url));
const files = renderCrds();
for (const name of await readdir(dir)) {
  if (/^hermes\.dev_.*\.yaml$/.test(name) && !files.has(name)) await rm(join(dir, name));
}
for (const [name, content] of files) await writeFile(join(dir, name), content);
process.stderr.write(`crds: wrote ${[...files.keys()].join(', ')}\n`);
