// loadManifests (`hermes dev`'s folder): each problem is a ManifestError naming the file, the
// document and what is wrong, so the CLI prints it instead of a stack trace; an object declared
// twice is refused rather than the later one silently replacing the first.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadManifests, ManifestError } from '../../../operator/index.js';

const agent = (name: string, namespace?: string) =>
  `apiVersion: hermes.dev/v1alpha1\nkind: Agent\nmetadata: { name: ${name}${namespace ? `, namespace: ${namespace}` : ''} }\nspec: { profileRef: { name: p } }\n`;
const profile = (name: string) => `apiVersion: hermes.dev/v1alpha1\nkind: Profile\nmetadata: { name: ${name} }\nspec: { model: { provider: openai, model: m } }\n`;
const configMap = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: ${name} }\ndata: { a: b }\n`;

let dir: string;
beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'hermes-manifests-')); });
afterEach(async () => { await rm(dir, { recursive: true, force: true }); });

const refusal = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => err);

describe('loadManifests', () => {
  it('refuses an object declared twice, in one file or two, naming both places', async () => {
    await writeFile(join(dir, 'a.yaml'), [agent('bot'), profile('p')].join('---\n'));
    await mkdir(join(dir, 'more'));
    await writeFile(join(dir, 'more', 'b.yaml'), agent('bot'));
    const err = await refusal(loadManifests(dir));
    expect(err).toBeInstanceOf(ManifestError);
    expect((err as Error).message).toBe(`${join(dir, 'more', 'b.yaml')} (document 1): Agent default/bot is declared twice (first in ${join(dir, 'a.yaml')} (document 1)); keep one`);

    await writeFile(join(dir, 'more', 'b.yaml'), [configMap('prompt'), configMap('prompt')].join('---\n'));
    expect(((await refusal(loadManifests(dir))) as Error).message).toMatch(/b\.yaml \(document 2\): ConfigMap default\/prompt is declared twice \(first in .*b\.yaml \(document 1\)\)/);
  });

  it('takes one name in two namespaces, or for two kinds', async () => {
    await writeFile(join(dir, 'a.yaml'), [agent('p'), agent('p', 'team'), profile('p'), configMap('p')].join('---\n'));
    const set = await loadManifests(dir);
    expect(set.agents.map((a) => `${a.metadata.namespace}/${a.metadata.name}`)).toEqual(['default/p', 'team/p']);
    expect(set.profiles).toHaveLength(1);
    expect(set.configMaps).toHaveLength(1);
  });

  it('names a missing folder, a YAML error and an invalid manifest as ManifestErrors', async () => {
    const missing = join(dir, 'nope');
    expect(await refusal(loadManifests(missing))).toEqual(new ManifestError(`${missing}: no such folder or file of manifests`));

    await writeFile(join(dir, 'a.yaml'), 'kind: Agent\nmetadata: { name: a\nspec: [\n');
    const yamlError = await refusal(loadManifests(dir));
    expect(yamlError).toBeInstanceOf(ManifestError);
    expect((yamlError as Error).message).toMatch(/a\.yaml: YAML error: /);

    await writeFile(join(dir, 'a.yaml'), agent('Not_A_Name'));
    const invalid = await refusal(loadManifests(dir));
    expect(invalid).toBeInstanceOf(ManifestError);
    expect((invalid as Error).message).toBe(`${join(dir, 'a.yaml')} (document 1): invalid manifest: metadata.name: must be a DNS-1123 label`);
  });
});
