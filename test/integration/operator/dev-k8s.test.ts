// `hermes dev --k8s` (make dev K8S=1) against a real kube-apiserver: the folder's manifests may
// name namespaces the dev cluster lacks (created, with the Secrets from the environment in the
// namespace that references them); a manifest removed from the folder is deleted from the cluster
// on the next run, while objects made by hand are left alone; a manifest the apiserver refuses
// stops the run with the apiserver's message and the object's name. The plane starts without the
// CRDs, as the dev cluster does: hermes dev installs them, with every rule and default.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ManifestError } from '../../../operator/index.js';
import { applyDevManifests } from '../../../services/cli/dev-k8s.js';
import { startControlPlane, type ControlPlane } from '../../support/kube/index.js';
import { crdsDir, getObject, kubectlOk } from './harness.js';

const doc = (o: Record<string, unknown>) => stringify({ apiVersion: 'hermes.dev/v1alpha1', ...o });
const profile = (name: string, namespace?: string) => doc({ kind: 'Profile', metadata: { name, ...(namespace ? { namespace } : {}) },
  spec: { model: { provider: 'openai', model: 'gpt-4o-mini', apiKey: { secretKeyRef: { name: 'openai', key: 'OPENAI_API_KEY' } } } } });
const agent = (name: string, profileName: string, namespace?: string, spec: Record<string, unknown> = {}) =>
  doc({ kind: 'Agent', metadata: { name, ...(namespace ? { namespace } : {}) }, spec: { profileRef: { name: profileName }, ...spec } });

describe('hermes dev --k8s manifests', () => {
  let plane: { cp: ControlPlane };
  let dir: string;
  beforeAll(async () => {
    plane = { cp: await startControlPlane() };
    dir = await mkdtemp(join(tmpdir(), 'hermes-dev-k8s-'));
  });
  afterAll(async () => {
    await plane?.cp.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const kc = () => plane.cp.kubeConfig();
  const secretValue = async (ns: string, name: string, key: string) => {
    const s = JSON.parse(await kubectlOk(plane.cp, ['-n', ns, 'get', 'secret', name, '-o', 'json'])) as { data: Record<string, string> };
    return Buffer.from(s.data[key]!, 'base64').toString();
  };

  it('creates the namespaces the manifests name, with referenced Secrets there; prunes what the folder stopped declaring, never hand-made objects', async () => {
    const ns = await plane.cp.createNamespace('devk8s');
    const team = `${ns}-team`; // does not exist yet
    await writeFile(join(dir, 'main.yaml'), `${profile('p')}---\n${agent('hermes', 'p')}`);
    await writeFile(join(dir, 'team.yaml'), `${profile('tp', team)}---\n${agent('helper', 'tp', team)}`);
    await writeFile(join(dir, 'extra.yaml'), [
      doc({ kind: 'CronJob', metadata: { name: 'nightly' }, spec: { agentRef: { name: 'hermes' }, schedule: '@daily', prompt: 'summarise' } }),
      doc({ kind: 'Skill', metadata: { name: 'extra' }, spec: { name: 'extra', description: 'An extra skill', body: '# Extra' } }),
      stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'extra-cm' }, data: { a: 'b' } }),
    ].join('---\n'));
    const first = await applyDevManifests(kc(), dir, { OPENAI_API_KEY: 'sk-env' }, { namespace: ns });
    expect(first.agents.sort()).toEqual([`${ns}/hermes`, `${team}/helper`].sort());
    expect(first.pruned).toEqual([]);
    // The Secret lives where the Profile that references it lives.
    expect(await secretValue(team, 'openai', 'OPENAI_API_KEY')).toBe('sk-env');
    expect(await secretValue(ns, 'openai', 'OPENAI_API_KEY')).toBe('sk-env');
    expect(await getObject(kc(), 'agents', team, 'helper')).toBeDefined();

    // Made by hand in the same namespace: never pruned.
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], agent('mine', 'p'));
    await rm(join(dir, 'extra.yaml'));
    await rm(join(dir, 'team.yaml'));
    const second = await applyDevManifests(kc(), dir, { OPENAI_API_KEY: 'sk-env' }, { namespace: ns });
    expect(second.agents).toEqual([`${ns}/hermes`]);
    expect(second.pruned.sort()).toEqual([`Agent ${team}/helper`, `ConfigMap ${ns}/extra-cm`, `CronJob ${ns}/nightly`, `Profile ${team}/tp`, `Secret ${team}/openai`, `Skill ${ns}/extra`].sort());
    expect(await getObject(kc(), 'agents', team, 'helper')).toBeUndefined();
    expect(await getObject(kc(), 'cronjobs', ns, 'nightly')).toBeUndefined();
    expect(await getObject(kc(), 'skills', ns, 'extra')).toBeUndefined();
    expect(await getObject(kc(), 'agents', ns, 'mine')).toBeDefined();
    expect(await getObject(kc(), 'agents', ns, 'hermes')).toBeDefined();
    expect(await secretValue(ns, 'openai', 'OPENAI_API_KEY')).toBe('sk-env');
    // Nothing left to prune: a third run deletes nothing.
    expect((await applyDevManifests(kc(), dir, { OPENAI_API_KEY: 'sk-env' }, { namespace: ns })).pruned).toEqual([]);
  });

  it('installs the CRDs whole: enums, defaults and CEL rules hold in the dev cluster', async () => {
    const ns = await plane.cp.createNamespace('devk8s-crds');
    const own = await mkdtemp(join(tmpdir(), 'hermes-dev-k8s-crds-'));
    await writeFile(join(own, 'main.yaml'), `${profile('p')}---\n${agent('hermes', 'p')}`);
    await applyDevManifests(kc(), own, {}, { namespace: ns }).finally(() => rm(own, { recursive: true, force: true }));
    const crd = JSON.parse(await kubectlOk(plane.cp, ['get', 'crd', 'cronjobs.hermes.dev', '-o', 'json'])) as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: Record<string, Record<string, unknown>> } } } } }[] } };
    const props = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties;
    expect(props.concurrencyPolicy).toMatchObject({ enum: ['Forbid', 'Allow', 'Replace'], default: 'Forbid' });
    expect(props.schedule!['x-kubernetes-validations']).toHaveLength(1);
    // Defaults reach the stored object; a CEL rule refuses at kubectl apply.
    expect((await getObject(kc(), 'agents', ns, 'hermes'))?.spec).toMatchObject({ busyPolicy: 'interrupt', platforms: [] });
    const cel = await plane.cp.kubectl(['apply', '-n', ns, '-f', '-'], { input: doc({ kind: 'CronJob', metadata: { name: 'c' }, spec: { agentRef: { name: 'hermes' }, schedule: 'every day', prompt: 'x' } }) });
    expect(cel.code).not.toBe(0);
    expect(cel.stderr).toContain('schedule must be a 5-field cron expression');
  });

  it('replaces CRDs an older hermes dev installed without their rules, while their storage reinitializes', async () => {
    // What client-node's typed serializer used to leave of the CRDs: no enum, default or CEL rule.
    const strip = (v: unknown): unknown => Array.isArray(v) ? v.map(strip) : v && typeof v === 'object'
      ? Object.fromEntries(Object.entries(v).filter(([k]) => !['enum', 'default', 'x-kubernetes-validations'].includes(k)).map(([k, x]) => [k, strip(x)])) : v;
    const crds = await readdir(crdsDir);
    for (const f of crds) {
      const stripped = strip(parse(await readFile(join(crdsDir, f), 'utf8')));
      await kubectlOk(plane.cp, ['apply', '--server-side', '--force-conflicts', '--field-manager=hermes-dev', '-f', '-'], JSON.stringify(stripped));
    }
    const ns = await plane.cp.createNamespace('devk8s-upgrade');
    const own = await mkdtemp(join(tmpdir(), 'hermes-dev-k8s-upgrade-'));
    try {
      await writeFile(join(own, 'main.yaml'), `${profile('p')}---\n${agent('hermes', 'p')}`);
      await applyDevManifests(kc(), own, {}, { namespace: ns });
      await kubectlOk(plane.cp, ['wait', '--for=condition=Established', '--timeout=60s', 'crd', '-l', 'app.kubernetes.io/part-of=hermes']);
      const refused = await plane.cp.kubectl(['apply', '-n', ns, '-f', '-'], { input: agent('yolo', 'p', undefined, { busyPolicy: 'yolo' }) });
      expect(refused.stderr).toContain('Unsupported value: "yolo"');
    } finally {
      await rm(own, { recursive: true, force: true });
    }
  });

  it('HERMES_DEV_MODEL replaces the model of the folder\'s Profiles, as file-mode hermes dev does', async () => {
    const ns = await plane.cp.createNamespace('devk8s-model');
    const own = await mkdtemp(join(tmpdir(), 'hermes-dev-k8s-model-'));
    try {
      await writeFile(join(own, 'main.yaml'), `${profile('p')}---\n${agent('hermes', 'p')}`);
      await applyDevManifests(kc(), own, {}, { namespace: ns, model: 'llama3.2' });
      expect((await getObject(kc(), 'profiles', ns, 'p'))?.spec.model).toMatchObject({ provider: 'openai', model: 'llama3.2' });
      await applyDevManifests(kc(), own, {}, { namespace: ns });
      expect((await getObject(kc(), 'profiles', ns, 'p'))?.spec.model).toMatchObject({ model: 'gpt-4o-mini' });
    } finally {
      await rm(own, { recursive: true, force: true });
    }
  });

  it('a manifest the apiserver refuses stops the run with its message and name', async () => {
    const ns = await plane.cp.createNamespace('devk8s-bad');
    const bad = await mkdtemp(join(tmpdir(), 'hermes-dev-k8s-bad-'));
    try {
      await writeFile(join(bad, 'agent.yaml'), agent('broken', 'p', undefined, { busyPolicy: 'yolo' }));
      const err = await applyDevManifests(kc(), bad, {}, { namespace: ns }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ManifestError);
      expect((err as Error).message).toMatch(new RegExp(`^Agent ${ns}/broken: the dev cluster refused it: .*busyPolicy`));
    } finally {
      await rm(bad, { recursive: true, force: true });
    }
  });
});
