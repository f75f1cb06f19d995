// The gateway reads Slack's signing secret by reference on a real kube-apiserver, as a cluster runs
// it: `hermes gateway` with its ServiceAccount bound to the chart's hermes-gateway ClusterRole
// (get on Secrets only) in the tenant's namespace. A signed request verifies against the tenant's
// Secret; a wrong signature is a 401; a namespace that did not bind the role is unreadable (503,
// so Slack retries) and never falls back to anything else.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { publishRevision } from '../../../services/core/index.js';
import { waitFor, type MintedKubeconfig } from '../../support/kube/index.js';
import { slackSignedHeaders } from '../../support/fake-slack.js';
import { testConfig } from '../../support/services.js';
import { openTestRuntime, testAgent, type TestRuntime } from '../../support/system.js';
import { kubectlOk, startPlane, type Plane } from './harness.js';

const bin = fileURLToPath(new URL('../../../bin/hermes.js', import.meta.url));
const rbacFile = new URL('../../../charts/hermes/templates/gateway-rbac.yaml', import.meta.url);

describe('gateway platform secrets on a real kube-apiserver', () => {
  let plane: Plane;
  let rt: TestRuntime;
  let gateway: ChildProcess | undefined;
  let sa: MintedKubeconfig;
  let gatewayNs: string;
  let url = '';
  let logs = '';

  beforeAll(async () => {
    plane = await startPlane();
    rt = await openTestRuntime(testConfig(plane.testDb.url));
    const role = parseAllDocuments(readFileSync(rbacFile, 'utf8')).map((d) => d.toJSON() as { kind: string }).find((d) => d.kind === 'ClusterRole');
    await kubectlOk(plane.cp, ['apply', '-f', '-'], stringify(role));
    gatewayNs = await plane.cp.createNamespace('hermes');
    sa = await plane.cp.mintServiceAccountKubeconfig(gatewayNs, 'hermes-gateway');
    const c = rt.config;
    gateway = spawn(process.execPath, [bin, 'gateway'], {
      env: {
        PATH: process.env.PATH, DATABASE_URL: c.DATABASE_URL, REDIS_URL: c.REDIS_URL, HERMES_QUEUE_PREFIX: c.HERMES_QUEUE_PREFIX,
        KUBECONFIG: sa.path, HERMES_LOG_LEVEL: 'info', HERMES_PORT: '0', HERMES_HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const s of [gateway.stdout!, gateway.stderr!]) s.on('data', (d: Buffer) => { logs += d.toString(); });
    url = await waitFor(() => /"url":"(http:\/\/127\.0\.0\.1:\d+)"[^\n]*Gateway listening/.exec(logs)?.[1], { what: `the gateway to listen (log: ${logs.slice(-300)})`, timeoutMs: 30_000 });
  });
  afterAll(async () => {
    gateway?.kill('SIGKILL');
    await rt?.close();
    await plane?.stop();
  });

  /** A tenant namespace with a Slack Secret and an Agent with a slack platform; `bind`: its Secrets are readable by the gateways. */
  async function tenant(prefix: string, signingSecret: string, bind: boolean): Promise<string> {
    const ns = await plane.cp.createNamespace(prefix);
    await kubectlOk(plane.cp, ['-n', ns, 'create', 'secret', 'generic', 'slack', '--from-literal=SLACK_BOT_TOKEN=xoxb-x', `--from-literal=SLACK_SIGNING_SECRET=${signingSecret}`]);
    if (bind) {
      await kubectlOk(plane.cp, ['-n', ns, 'create', 'rolebinding', 'hermes-gateway', '--clusterrole=hermes-gateway', `--serviceaccount=${gatewayNs}:hermes-gateway`]);
      await waitFor(async () => (await plane.cp.kubectl(['-n', ns, 'auth', 'can-i', 'get', 'secrets'], { kubeconfig: sa.path })).code === 0, { what: 'the RoleBinding to take effect' });
    }
    await publishRevision(rt.db, testAgent('http://127.0.0.1:9/v1', {
      agent: { namespace: ns, name: 'bot' },
      platforms: [{ type: 'slack', credentialsSecret: 'slack', allowlist: [], allowAll: true, dmPairing: false, groupPolicy: 'mention' }],
    }));
    return ns;
  }

  const challenge = async (ns: string, secret: string) => {
    const body = JSON.stringify({ type: 'url_verification', challenge: 'kube-challenge' });
    const res = await fetch(`${url}/hooks/slack/${ns}/bot`, { method: 'POST', headers: slackSignedHeaders(secret, body), body });
    return { status: res.status, body: await res.text() };
  };

  it('verifies Slack requests with the tenant Secret it may read, and refuses the rest', async () => {
    const ns = await tenant('slack', 'tenant-signing-secret', true);
    expect(await challenge(ns, 'tenant-signing-secret')).toEqual({ status: 200, body: JSON.stringify({ challenge: 'kube-challenge' }) });
    expect((await challenge(ns, 'guessed-secret')).status).toBe(401);

    // A namespace that did not bind hermes-gateway: its Secret cannot be read, so nothing is verified.
    const closed = await tenant('closed', 'closed-signing-secret', false);
    const refused = await challenge(closed, 'closed-signing-secret');
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body).error.code).toBe('HERMES_PLATFORM_SECRETS_UNAVAILABLE');
    const { rows } = await rt.db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM admissions`);
    expect(rows[0]!.n).toBe(0);
  });
});
