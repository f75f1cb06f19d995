// The operator as it runs in a cluster: two replicas elect one leader on a Lease and fail over
// when the leader stops renewing; the operator works as a ServiceAccount bound to the chart's
// ClusterRole; a broken watch is relisted and the operator converges on what changed meanwhile.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { request } from 'undici';
import { waitFor } from '../../support/kube/index.js';
import { freePort } from '../../support/ports.js';
import { kubectlOk, startPlane, waitForCondition, type Plane } from './harness.js';

const rbacFile = new URL('../../../charts/hermes/templates/operator-rbac.yaml', import.meta.url);
const workerRbacFile = new URL('../../../charts/hermes/templates/worker-rbac.yaml', import.meta.url);
const manifests = (name: string, profileSpec: Record<string, unknown> = {}) => [
  { apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: `${name}-p` }, spec: { model: { provider: 'openai', model: 'm', apiKey: { secretKeyRef: { name: 'model-key', key: 'k' } } }, ...profileSpec } },
  { apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name }, spec: { profileRef: { name: `${name}-p` } } },
].map((o) => stringify(o)).join('---\n');

describe('operator leader election, RBAC and broken watches', () => {
  let plane: Plane;
  beforeAll(async () => { plane = await startPlane(); });
  afterAll(async () => { await plane?.stop(); });
  const kc = () => plane.cp.kubeConfig();

  async function namespaceWithKey(prefix: string): Promise<string> {
    const ns = await plane.cp.createNamespace(prefix);
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'model-key', '--from-literal=k=v']);
    return ns;
  }

  it('two replicas elect one leader; when the leader stops renewing the other takes over and reconciles', async () => {
    const ns = await namespaceWithKey('ha');
    const opts = { namespace: ns, leaderElection: true, leaseNamespace: ns, leaseDurationSeconds: 2, leaseRetryMs: 200 };
    const a = await plane.start({ ...opts, identity: 'replica-a' });
    const b = await plane.start({ ...opts, identity: 'replica-b' });
    const leader = await waitFor(() => [a, b].find((o) => o.isLeader()), { what: 'a leader' });
    const follower = leader === a ? b : a;
    const leases = kc().makeApiClient(CoordinationV1Api);
    const lease = await leases.readNamespacedLease({ name: 'hermes-operator', namespace: ns });
    expect(lease.spec?.holderIdentity).toBe(leader.identity);
    expect(lease.spec?.leaseDurationSeconds).toBe(2);
    expect(follower.isLeader()).toBe(false);

    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], manifests('one'));
    await waitForCondition(kc(), 'agents', ns, 'one', { type: 'Ready', status: 'True' });
    expect(follower.reconciles().agent).toBe(0); // followers only watch
    expect(follower.isLeader()).toBe(false);

    // The leader crashes: it stops renewing without releasing the Lease.
    await leader.stop({ releaseLease: false });
    await waitFor(() => follower.isLeader(), { what: 'the follower to take over after the Lease expired', timeoutMs: 30_000 });
    const after = await leases.readNamespacedLease({ name: 'hermes-operator', namespace: ns });
    expect(after.spec?.holderIdentity).toBe(follower.identity);
    expect(after.spec?.leaseTransitions).toBe((lease.spec?.leaseTransitions ?? 0) + 1);
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], manifests('two'));
    await waitForCondition(kc(), 'agents', ns, 'two', { type: 'Ready', status: 'True' });

    // A clean stop releases the Lease; a new replica acquires it.
    await follower.stop();
    const released = await leases.readNamespacedLease({ name: 'hermes-operator', namespace: ns });
    expect(released.spec?.holderIdentity).toBe('');
    const c = await plane.start({ ...opts, identity: 'replica-c' });
    await waitFor(() => c.isLeader(), { what: 'a new replica to acquire the released Lease' });
    await c.stop();
  });

  it('runs as a ServiceAccount bound (RoleBinding) to the chart\'s operator ClusterRole', async () => {
    const ns = await namespaceWithKey('rbac');
    const role = parseAllDocuments(readFileSync(rbacFile, 'utf8')).map((d) => d.toJSON() as { kind: string }).find((d) => d.kind === 'ClusterRole');
    expect(role).toBeDefined();
    await kubectlOk(plane.cp, ['apply', '-f', '-'], stringify(role));
    const sa = await plane.cp.mintServiceAccountKubeconfig(ns, 'hermes-operator');
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'rolebinding', 'hermes-operator', '--clusterrole=hermes-operator', `--serviceaccount=${ns}:hermes-operator`]);
    // RoleBindings take a moment to reach the authorizer's cache.
    await waitFor(async () => (await plane.cp.kubectl(['-n', ns, 'get', 'agents.hermes.dev'], { kubeconfig: sa.path })).code === 0, { what: 'the RoleBinding to take effect' });
    const denied = await plane.cp.kubectl(['get', 'secrets', '-A'], { kubeconfig: sa.path });
    expect(denied.code).not.toBe(0); // namespaced only

    const op = await plane.start({ kc: sa.kubeConfig, namespace: ns, leaderElection: true, leaseNamespace: ns, leaseDurationSeconds: 2, leaseRetryMs: 200, identity: 'sa-operator', runtime: { image: 'registry.example/hermes:test', envSecret: 'hermes-runtime' } });
    await waitFor(() => op.isLeader(), { what: 'the ServiceAccount operator to lead' });
    // The persona comes from a ConfigMap, so the ConfigMap watch needs its permission too.
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'configmap', 'persona', '--from-literal=persona.md=You are the RBAC bot.']);
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], manifests('rbac', { personaFrom: { configMapKeyRef: { name: 'persona', key: 'persona.md' } } }));
    await waitForCondition(kc(), 'agents', ns, 'rbac', { type: 'Ready', status: 'True' });
    const { rows } = await plane.db.pool.query(`SELECT r.compiled->>'persona' AS persona FROM agents a JOIN config_revisions r ON r.id = a.current_revision_id WHERE a.namespace = $1`, [ns]);
    expect(rows[0]?.persona).toBe('You are the RBAC bot.');
    await waitForCondition(kc(), 'profiles', ns, 'rbac-p', { type: 'Ready', status: 'True' });
    // A dedicated Agent: the operator binds its worker to the chart's hermes-worker ClusterRole,
    // whose sandbox permissions it does not hold itself (it may `bind` that role).
    for (const workerRole of parseAllDocuments(readFileSync(workerRbacFile, 'utf8')).map((d) => d.toJSON() as { kind: string })) await kubectlOk(plane.cp, ['apply', '-f', '-'], stringify(workerRole));
    const dedicated = manifests('solo').replace('profileRef:\n    name: solo-p\n', 'profileRef:\n    name: solo-p\n  runtime:\n    mode: dedicated\n');
    expect(dedicated).toContain('mode: dedicated');
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], dedicated);
    await waitForCondition(kc(), 'agents', ns, 'solo', { type: 'Ready', status: 'True' });
    const binding = JSON.parse(await kubectlOk(plane.cp, ['-n', ns, 'get', 'rolebinding', 'hermes-solo-secrets', '-o', 'json'])) as { roleRef: { name: string } };
    expect(binding.roleRef.name).toBe('hermes-worker');
    // Events and finalizer removal work with these permissions too.
    await kubectlOk(plane.cp, ['-n', ns, 'delete', 'agents.hermes.dev', 'rbac', 'solo', '--timeout=30s']);
    await op.stop();
    // Bound cluster-wide (no watchNamespace), the role reads namespaces: whether a Profile's
    // spec.sandbox.namespace takes its sandboxes (label hermes.dev/sandbox-namespace), and Pod Security.
    await kubectlOk(plane.cp, ['create', 'clusterrolebinding', `hermes-operator-${ns}`, '--clusterrole=hermes-operator', `--serviceaccount=${ns}:hermes-operator`]);
    await waitFor(async () => (await plane.cp.kubectl(['auth', 'can-i', 'get', 'namespaces'], { kubeconfig: sa.path })).stdout.trim() === 'yes',
      { what: 'the operator ServiceAccount to read namespaces', timeoutMs: 10_000 });
  });

  it('relists after the watch breaks and converges on what changed while it was down', async () => {
    const ns = await namespaceWithKey('relist');
    const op = await plane.start({ namespace: ns });
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], manifests('before'));
    await waitForCondition(kc(), 'agents', ns, 'before', { type: 'Ready', status: 'True' });

    await plane.cp.stopApiServer();
    await plane.cp.startApiServer();
    // Changed right after the restart, while the operator's watches are still broken.
    await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], manifests('during'));
    await kubectlOk(plane.cp, ['-n', ns, 'patch', 'agents.hermes.dev', 'before', '--type=merge', '-p', '{"spec":{"busyPolicy":"steer"}}']);

    await waitForCondition(kc(), 'agents', ns, 'during', { type: 'Ready', status: 'True' }, 60_000);
    await waitFor(async () => {
      const { rows } = await plane.db.pool.query(`SELECT r.compiled->>'busyPolicy' AS p FROM agents a JOIN config_revisions r ON r.id = a.current_revision_id WHERE a.namespace = $1 AND a.name = 'before'`, [ns]);
      return rows[0]?.p === 'steer';
    }, { what: 'the change made during the outage to reach Postgres', timeoutMs: 60_000 });
    expect(op.restarts()).toBeGreaterThan(0);
    await op.stop();
  });

  it('`hermes operator` runs the controllers from the CLI and releases its Lease on SIGTERM', async () => {
    const ns = await namespaceWithKey('cli');
    const bin = fileURLToPath(new URL('../../../bin/hermes.js', import.meta.url));
    const port = await freePort();
    const child = spawn(process.execPath, [bin, 'operator', '--namespace', ns, '--identity', 'cli-operator', '--gateway-url', 'http://gw.cli:8080', '--http-host', '127.0.0.1', '--http-port', String(port)], {
      env: { PATH: process.env.PATH, KUBECONFIG: plane.cp.adminKubeconfig, DATABASE_URL: plane.testDb.url, HERMES_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await kubectlOk(plane.cp, ['apply', '-n', ns, '-f', '-'], manifests('cli'));
      const a = await waitForCondition(kc(), 'agents', ns, 'cli', { type: 'Ready', status: 'True' });
      expect(a.status?.url).toBe(`http://gw.cli:8080/v1/agents/${ns}/cli/messages`);
      const leases = kc().makeApiClient(CoordinationV1Api);
      expect((await leases.readNamespacedLease({ name: 'hermes-operator', namespace: ns })).spec?.holderIdentity).toBe('cli-operator');
      // Probes and controller-runtime metrics on --http-port.
      const base = `http://127.0.0.1:${port}`;
      const ready = await request(`${base}/readyz`);
      expect(ready.statusCode).toBe(200);
      expect(await ready.body.json()).toEqual({ status: 'ready', leader: true, checks: { caches: { ok: true }, postgres: { ok: true } } });
      const metrics = await (await request(`${base}/metrics`)).body.text();
      expect(metrics).toMatch(/^controller_runtime_reconcile_total\{(?=[^}]*controller="agent")(?=[^}]*result="success")[^}]*\} [1-9]/m);
      expect(metrics).toMatch(/^controller_runtime_reconcile_time_seconds_count\{[^}]*controller="profile"[^}]*\} [1-9]/m);
      expect(metrics).toMatch(/^workqueue_depth\{[^}]*name="agent"[^}]*\} 0$/m);
      expect(metrics).toMatch(/^leader_election_master_status\{[^}]*name="hermes-operator"[^}]*\} 1$/m);
      child.kill('SIGTERM');
      expect(await exited, stderr).toBe(0);
      expect((await leases.readNamespacedLease({ name: 'hermes-operator', namespace: ns })).spec?.holderIdentity).toBe('');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
