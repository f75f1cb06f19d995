// `npm run crds`: writes crds/*.yaml and the chart's copy, charts/hermes/crds/*.yaml (Helm installs
// a chart's crds/ before its templates and never deletes them), and removes generated files of
// kinds that no longer exist. test/integration/chart/chart-files.test.ts keeps the two equal.
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { renderCrds } from './render.js';

const dirs = [fileURLToPath(new URL('../../crds/', import.meta.url)), fileURLToPath(new URL('../../charts/hermes/crds/', import.meta.url))];
const files = renderCrds();
for (const dir of dirs) {
  await mkdir(dir, { recursive: true });
  for (const name of await readdir(dir)) {
    if (/^hermes\.dev_.*\.yaml$/.test(name) && !files.has(name)) await rm(join(dir, name));
  }
  for (const [name, content] of files) await writeFile(join(dir, name), content);
}
process.stderr.write(`crds: wrote ${[...files.keys()].join(', ')} into crds/ and charts/hermes/crds/\n`);
