// The Profile and Agent controllers against a real kube-apiserver and Postgres: examples become
// Ready and land in Postgres, problems show up as conditions and Events with actionable
// messages, a Secret created later heals an Agent without a restart, unchanged state is not
// rewritten, and deleting an Agent deletes its rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { AgentCache, findAgent } from '../../../services/core/index.js';
import type { OperatorHandle } from '../../../operator/manager.js';
import { applyDevManifests, referencedSecretKeys } from '../../../services/cli/dev-k8s.js';
import { waitFor } from '../../support/kube/index.js';
import { conditionOf, eventsFor, examplesDir, getObject, kubectlOk, startPlane, waitForCondition, type Plane } from './harness.js';

const doc = (o: Record<string, unknown>) => stringify({ apiVersion: 'hermes.dev/v1alpha1', ...o });
const profile = (name: string, spec: Record<string, unknown> = {}) => doc({ kind: 'Profile', metadata: { name },
  spec: { model: { provider: 'openai', model: 'gpt-4o-mini', apiKey: { secretKeyRef: { name: 'model-key', key: 'OPENAI_API_KEY' } } }, ...spec } });
const agent = (name: string, profileName: string, spec: Record<string, unknown> = {}) => doc({ kind: 'Agent', metadata: { name }, spec: { profileRef: { name: profileName }, ...spec } });

describe('Profile and Agent controllers', () => {
  let plane: Plane;
  let op: OperatorHandle;

  beforeAll(async () => {
    plane = await startPlane();
    op = await plane.start();
  });
  afterAll(async () => { await plane?.stop(); });

  const kc = () => plane.cp.kubeConfig();

  it('applies examples/minimal; with its Secrets the Profile and Agent become Ready and the revision is in Postgres', async () => {
    const ns = await plane.cp.createNamespace('minimal');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'openai', '--from-literal=OPENAI_API_KEY=sk-test']);
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'hermes-api', '--from-literal=HERMES_DEV_API_KEY=hk-secret']);
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', `${examplesDir}minimal/`]);
    await waitForCondition(kc(), 'profiles', ns, 'default', { type: 'Ready', status: 'True', reason: 'Resolved' });
    const a = await waitForCondition(kc(), 'agents', ns, 'hermes', { type: 'Ready', status: 'True', reason: 'Published' });
    expect(conditionOf(a, 'ProfileResolved')?.status).toBe('True');
    expect(conditionOf(a, 'CredentialsResolved')?.status).toBe('True');
    expect(a.status?.observedGeneration).toBe(a.metadata.generation);
    expect(a.status).toMatchObject({ profile: 'default', url: `http://gateway.test:8080/v1/agents/${ns}/hermes/messages`, openaiModel: `${ns}/hermes` });
    expect(a.metadata.finalizers).toContain('hermes.dev/finalizer');
    const row = await findAgent(plane.db.pool, ns, 'hermes');
    expect(row?.hash).toBe(a.status?.revision);
    expect(row?.compiled.model).toEqual({ provider: 'openai', model: 'gpt-4o-mini', apiKeyRef: { name: 'openai', key: 'OPENAI_API_KEY' } });
    expect(row?.compiled.api.keySha256).toHaveLength(1);
    // Secret values never reach status or the compiled revision.
    expect(JSON.stringify(a.status)).not.toContain('hk-secret');
    expect(JSON.stringify(row?.compiled)).not.toMatch(/hk-secret|sk-test/);
    const printed = await kubectlOk(plane.cp, ['get', 'hermes', '-n', ns]);
    expect(printed).toMatch(/agent\.hermes\.dev\/hermes\s+True\s+default/);
  });

  it('an Agent whose Secret is created after it becomes Ready without a restart', async () => {
    const ns = await plane.cp.createNamespace('late');
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], `${profile('p')}---\n${agent('bot', 'p', { api: { keys: [{ secretKeyRef: { name: 'api', key: 'token' } }] } })}`);
    const waiting = await waitForCondition(kc(), 'agents', ns, 'bot', { type: 'CredentialsResolved', status: 'False', reason: 'SecretNotFound' });
    expect(conditionOf(waiting, 'CredentialsResolved')?.message).toContain(`kubectl -n ${ns} create secret generic model-key`);
    expect(conditionOf(waiting, 'Ready')?.status).toBe('False');
    expect(waiting.status?.observedGeneration).toBeUndefined(); // never applied yet
    await waitFor(async () => (await eventsFor(kc(), ns, 'bot')).some((e) => e.type === 'Warning' && e.reason === 'SecretNotFound'), { what: 'a Warning Event' });
    expect(await findAgent(plane.db.pool, ns, 'bot')).toBeUndefined();

    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'model-key', '--from-literal=OPENAI_API_KEY=sk']);
    const missingKey = await waitForCondition(kc(), 'agents', ns, 'bot', { type: 'CredentialsResolved', status: 'False', reason: 'CredentialsMissing' });
    expect(conditionOf(missingKey, 'Ready')?.message).toContain('API key secret "api" key "token" was not found');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'api', '--from-literal=token=t0']);
    const ready = await waitForCondition(kc(), 'agents', ns, 'bot', { type: 'Ready', status: 'True' });
    const first = await findAgent(plane.db.pool, ns, 'bot');
    expect(first?.hash).toBe(ready.status?.revision);

    // A chat platform whose credentials Secret does not exist (credentials.keys left empty) is not Ready either.
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], agent('slacky', 'p', { platforms: [{ type: 'slack', credentials: { secretRef: { name: 'slak' } }, allowlist: ['U1'] }] }));
    const noSlack = await waitForCondition(kc(), 'agents', ns, 'slacky', { type: 'CredentialsResolved', status: 'False', reason: 'SecretNotFound' });
    expect(conditionOf(noSlack, 'Ready')?.message).toContain('spec.platforms[0] (slack): credentials Secret "slak" not found');
    expect(await findAgent(plane.db.pool, ns, 'slacky')).toBeUndefined();
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'slak', '--from-literal=SLACK_BOT_TOKEN=x']);
    await waitForCondition(kc(), 'agents', ns, 'slacky', { type: 'Ready', status: 'True' });

    // Rotating the key re-publishes (the revision carries its hash).
    await kubectlOk(plane.cp, ['-n', ns, 'apply', '-f', '-'], stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'api' }, stringData: { token: 't1' } }));
    await waitFor(async () => (await findAgent(plane.db.pool, ns, 'bot'))?.hash !== first?.hash, { what: 'a new revision after the key rotation' });

    // Deleting the key's Secret does not revoke the key: the last revision keeps serving, and Ready says so.
    const rotated = (await findAgent(plane.db.pool, ns, 'bot'))!;
    await kubectlOk(plane.cp, ['-n', ns, 'delete', 'secret', 'api']);
    const gone = await waitForCondition(kc(), 'agents', ns, 'bot', { type: 'CredentialsResolved', status: 'False', reason: 'CredentialsMissing' });
    expect(conditionOf(gone, 'Ready')?.message).toContain(`Revision ${rotated.hash.slice(0, 12)}, published before, keeps serving until this is fixed; to stop it, delete the Agent (to revoke an API key, remove it from spec.api.keys).`);
    expect((await findAgent(plane.db.pool, ns, 'bot'))?.hash).toBe(rotated.hash);
    // An Agent never published says nothing of the kind.
    expect(conditionOf(noSlack, 'Ready')?.message).not.toContain('keeps serving');
  });

  it('a Profile whose key is env DATABASE_URL (never allowed) is not Ready, and neither is its Agent', async () => {
    const ns = await plane.cp.createNamespace('envdb');
    const hostile = doc({ kind: 'Profile', metadata: { name: 'p' }, spec: { model: { provider: 'openai', model: 'gpt-4o-mini', apiKey: { env: 'DATABASE_URL' } } } });
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], `${hostile}---\n${agent('a', 'p')}`);
    const p = await waitForCondition(kc(), 'profiles', ns, 'p', { type: 'Ready', status: 'False', reason: 'SecretEnvForbidden' });
    expect(conditionOf(p, 'Ready')?.message).toBe('spec.model.apiKey.env: DATABASE_URL can never be a secret source (it is a Hermes setting); put the key in a Secret and use secretKeyRef');
    const a = await waitForCondition(kc(), 'agents', ns, 'a', { type: 'CredentialsResolved', status: 'False', reason: 'SecretEnvForbidden' });
    expect(conditionOf(a, 'Ready')?.status).toBe('False');
    expect(await findAgent(plane.db.pool, ns, 'a')).toBeUndefined();
  });

  it('reports a missing Profile, and an invalid Profile, as conditions; fixing them makes the Agent Ready', async () => {
    const ns = await plane.cp.createNamespace('prof');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'model-key', '--from-literal=OPENAI_API_KEY=sk']);
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], agent('a', 'later'));
    const a = await waitForCondition(kc(), 'agents', ns, 'a', { type: 'ProfileResolved', status: 'False', reason: 'ProfileNotFound' });
    // Every condition speaks of this reconcile: none is left at "first reconcile not finished".
    expect(conditionOf(a, 'SandboxReady')).toMatchObject({ status: 'Unknown', reason: 'AgentNotReady', observedGeneration: a.metadata.generation });
    expect(conditionOf(a, 'ProfileResolved')?.message).toContain(`Profile "later" not found in namespace ${ns}`);
    expect(conditionOf(a, 'CredentialsResolved')?.status).toBe('Unknown');

    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], profile('later', { model: { provider: 'openai-compatible', model: 'llama3.2' } }));
    const p = await waitForCondition(kc(), 'profiles', ns, 'later', { type: 'Valid', status: 'False', reason: 'InvalidSpec' });
    expect(conditionOf(p, 'Valid')?.message).toContain('provider openai-compatible needs baseURL');

    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], profile('later', { model: { provider: 'openai-compatible', model: 'llama3.2', baseURL: 'http://ollama:11434/v1' } }));
    await waitForCondition(kc(), 'profiles', ns, 'later', { type: 'Ready', status: 'True' });
    await waitForCondition(kc(), 'agents', ns, 'a', { type: 'Ready', status: 'True' });
  });

  it('bumps observedGeneration only once a spec change is applied, and two reconciles of unchanged state write nothing', async () => {
    const ns = await plane.cp.createNamespace('gen');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'model-key', '--from-literal=OPENAI_API_KEY=sk']);
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], `${profile('p')}---\n${agent('a', 'p')}`);
    const ready = await waitForCondition(kc(), 'agents', ns, 'a', { type: 'Ready', status: 'True' });
    const gen1 = ready.metadata.generation!;
    expect(ready.status?.observedGeneration).toBe(gen1);

    // Unchanged state: resync twice; nothing is written (resourceVersion, revisions, Events).
    const revisions = async () => Number((await plane.db.pool.query('SELECT count(*) FROM config_revisions r JOIN agents a ON a.id = r.agent_id WHERE a.namespace = $1', [ns])).rows[0].count);
    const before = { rv: ready.metadata.resourceVersion, revisions: await revisions(), events: (await eventsFor(kc(), ns, 'a')).length };
    for (let i = 0; i < 2; i++) {
      const n = op.reconciles().agent!;
      op.caches.agents.resync();
      await waitFor(() => op.reconciles().agent! >= n + 1, { what: 'a resync reconcile' });
    }
    const after = await getObject(kc(), 'agents', ns, 'a');
    expect({ rv: after?.metadata.resourceVersion, revisions: await revisions(), events: (await eventsFor(kc(), ns, 'a')).length }).toEqual(before);

    // A spec change that cannot be applied (missing Profile): observedGeneration stays.
    await kubectlOk(plane.cp, ['-n', ns, 'patch', 'agents.hermes.dev', 'a', '--type=merge', '-p', '{"spec":{"profileRef":{"name":"nope"}}}']);
    const broken = await waitForCondition(kc(), 'agents', ns, 'a', { type: 'Ready', status: 'False', reason: 'ProfileNotFound' });
    expect(broken.metadata.generation).toBe(gen1 + 1);
    expect(broken.status?.observedGeneration).toBe(gen1);
    expect(conditionOf(broken, 'Ready')?.observedGeneration).toBe(gen1 + 1);
    await kubectlOk(plane.cp, ['-n', ns, 'patch', 'agents.hermes.dev', 'a', '--type=merge', '-p', '{"spec":{"profileRef":{"name":"p"},"busyPolicy":"queue"}}']);
    const fixed = await waitFor(async () => {
      const o = await getObject(kc(), 'agents', ns, 'a');
      return o?.status?.observedGeneration === gen1 + 2 ? o : undefined;
    }, { what: 'observedGeneration of the fixed spec' });
    expect(conditionOf(fixed, 'Ready')?.status).toBe('True');
    expect((await findAgent(plane.db.pool, ns, 'a'))?.compiled.busyPolicy).toBe('queue');
  });

  it('runs no sandbox in another namespace unless that namespace takes them (label hermes.dev/sandbox-namespace=true)', async () => {
    const ns = await plane.cp.createNamespace('team-a');
    const other = await plane.cp.createNamespace('team-b');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'model-key', '--from-literal=OPENAI_API_KEY=sk']);
    // A manifest author of team-a points its sandboxes (a Pod per call, an image of its choice) at team-b.
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], `${profile('p', { toolsets: ['terminal'], sandbox: { backend: 'kubernetes', namespace: other, image: 'attacker/tools:1' } })}---\n${agent('a', 'p')}`);
    const p = await waitForCondition(kc(), 'profiles', ns, 'p', { type: 'Ready', status: 'False', reason: 'SandboxNamespaceNotAllowed' });
    expect(conditionOf(p, 'Ready')?.message).toContain(`kubectl label namespace ${other} hermes.dev/sandbox-namespace=true`);
    const a = await waitForCondition(kc(), 'agents', ns, 'a', { type: 'Ready', status: 'False', reason: 'SandboxNamespaceNotAllowed' });
    expect(conditionOf(a, 'ProfileResolved')?.reason).toBe('SandboxNamespaceNotAllowed');
    // No revision: no worker runs a Pod in team-b for it.
    expect(await findAgent(plane.db.pool, ns, 'a')).toBeUndefined();
    await kubectlOk(plane.cp, ['label', 'namespace', other, 'hermes.dev/sandbox-namespace=true']);
    await waitForCondition(kc(), 'agents', ns, 'a', { type: 'Ready', status: 'True' }, 45_000);
    expect((await findAgent(plane.db.pool, ns, 'a'))?.compiled.sandbox?.namespace).toBe(other);
    await waitForCondition(kc(), 'profiles', ns, 'p', { type: 'Ready', status: 'True' }, 45_000);
  }, 120_000);

  it('deleting an Agent deletes its rows in Postgres and tells the gateways, then the finalizer lets it go', async () => {
    const ns = await plane.cp.createNamespace('del');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'model-key', '--from-literal=OPENAI_API_KEY=sk']);
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], `${profile('p')}---\n${agent('gone', 'p')}`);
    await waitForCondition(kc(), 'agents', ns, 'gone', { type: 'Ready', status: 'True' });
    expect(await findAgent(plane.db.pool, ns, 'gone')).toBeDefined();
    // A gateway's cache that has served the agent: it must drop it (it listed the agent in /v1/models
    // and admitted messages for it into rows that no longer exist: 500 HERMES_INTERNAL).
    const cache = new AgentCache(plane.db, plane.testDb.url);
    await cache.start();
    try {
      expect(await cache.get(ns, 'gone')).toBeDefined();
      await kubectlOk(plane.cp, ['-n', ns, 'delete', 'agents.hermes.dev', 'gone', '--wait=false']);
      await waitFor(async () => (await getObject(kc(), 'agents', ns, 'gone')) === undefined, { what: 'the Agent to be deleted' });
      const { rows } = await plane.db.pool.query('SELECT 1 FROM agents WHERE namespace = $1 AND name = $2', [ns, 'gone']);
      expect(rows).toHaveLength(0);
      await waitFor(async () => (await cache.get(ns, 'gone')) === undefined, { what: 'the gateway cache to forget the deleted Agent', timeoutMs: 10_000 });
    } finally {
      await cache.close();
    }
  });

  it('hermes dev --k8s: installs CRDs, creates referenced Secrets from the environment and applies the manifests; the operator makes them Ready', async () => {
    const ns = await plane.cp.createNamespace('devk8s');
    const { agents } = await applyDevManifests(kc(), `${examplesDir}minimal`, { OPENAI_API_KEY: 'sk-env', HERMES_DEV_API_KEY: 'hk-env' }, { namespace: ns });
    expect(agents).toEqual([`${ns}/hermes`]);
    const secret = JSON.parse(await kubectlOk(plane.cp, ['-n', ns, 'get', 'secret', 'openai', '-o', 'json'])) as { data: Record<string, string> };
    expect(Buffer.from(secret.data.OPENAI_API_KEY!, 'base64').toString()).toBe('sk-env');
    await waitForCondition(kc(), 'agents', ns, 'hermes', { type: 'Ready', status: 'True' });
    const row = await findAgent(plane.db.pool, ns, 'hermes');
    expect(row?.compiled.api.keySha256[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(referencedSecretKeys([{ spec: { platforms: [{ credentials: { secretRef: { name: 's' }, keys: ['A', 'B'] } }] } }])).toEqual(new Map([['s', new Set(['A', 'B'])]]));
  });
});
