// The chart with the real helm: lint clean, renders with the defaults, the bundled evaluation
// stores and a 3-replica production values file, every rendered object accepted by
// `kubectl apply --dry-run=server` on the real kube-apiserver (with the chart's CRDs and the real
// CRDs of the third-party kinds installed), the security properties of every Pod it renders, and
// bad values (a typo, a wrong type) refused by values.schema.json.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../support/kube/index.js';
import { chartDir, chartTools, parseManifests, run, type K8sObject } from '../../support/chart.js';

const production = join(chartDir, 'ci/production-values.yaml');
const podValues = join(chartDir, 'ci/pod-values.yaml');
let cp: ControlPlane;
let helm: string;
let ns: string;

const template = (...args: string[]) => run(helm, ['template', 'hermes', chartDir, '--namespace', ns, ...args]);

async function render(...args: string[]): Promise<K8sObject[]> {
  const out = await template(...args);
  expect(out.stderr, 'helm template stderr').toBe('');
  expect(out.code).toBe(0);
  return parseManifests(out.stdout);
}

beforeAll(async () => {
  cp = await startControlPlane();
  helm = cp.binaries.helm;
  ns = await cp.createNamespace('chart');
  // The namespaces the rendered objects live in must exist for a server-side dry run of them.
  for (const name of ['hermes-sandbox', 'team-a', 'team-b']) {
    const created = await cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }) });
    expect(created.code, created.stderr).toBe(0);
  }
  const crds = [join(chartDir, 'crds'), ...readdirSync(chartTools().crdDir).filter((f) => f.endsWith('.yaml')).map((f) => join(chartTools().crdDir, f))];
  for (const path of crds) {
    const applied = await cp.kubectl(['apply', '--server-side', '-f', path]);
    expect(applied.code, applied.stderr).toBe(0);
  }
  const established = await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
  expect(established.code, established.stderr).toBe(0);
});
afterAll(async () => { await cp?.stop(); });

describe('helm lint', () => {
  it('is clean with the defaults and with the production values', async () => {
    for (const extra of [[], ['-f', production], ['--set', 'bundled.postgresql.enabled=true,bundled.redis.enabled=true']]) {
      const out = await run(helm, ['lint', '--strict', chartDir, ...extra]);
      expect(out.code, `${out.stdout}${out.stderr}`).toBe(0);
      expect(out.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
      expect(out.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    }
  });
});

describe('every rendered object on the real apiserver', () => {
  const variants: [string, string[]][] = [
    ['defaults', []],
    ['production (3 replicas, KEDA, Ingress, monitoring)', ['-f', production]],
    ['bundled evaluation stores, HTTPRoute', ['--set', 'bundled.postgresql.enabled=true,bundled.redis.enabled=true,httpRoute.enabled=true,httpRoute.parentRefs[0].name=public,networkPolicy.enabled=true']],
    ['Pod annotations and labels, ServiceAccount annotations, priority classes, security contexts', ['-f', podValues]],
  ];
  for (const [name, args] of variants) {
    it(`validates with kubectl apply --dry-run=server: ${name}`, async () => {
      const out = await template(...args);
      expect(out.code, out.stderr).toBe(0);
      const objects = parseManifests(out.stdout);
      expect(objects.length).toBeGreaterThan(20);
      const applied = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], { input: out.stdout });
      expect(applied.code, applied.stderr).toBe(0);
      // kubectl names each object it validated: all of them, none refused.
      expect(applied.stdout.trim().split('\n')).toHaveLength(objects.length);
      expect(applied.stdout).toMatch(/\(server dry run\)/);
    });
  }
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- rendered Pod specs, read by path
type Loose = any;
type Container = { name: string; image: string; securityContext?: Loose; resources?: Loose; env?: { name: string; value?: string; valueFrom?: unknown }[] };

function podSpecs(objects: K8sObject[]): [string, Loose][] {
  return objects.filter((o) => ['Deployment', 'StatefulSet', 'Job', 'DaemonSet'].includes(o.kind)).map((o) => [`${o.kind}/${o.metadata.name}`, o.spec.template.spec]);
}

describe('security over the rendered output', () => {
  for (const [name, args] of [['defaults', []], ['production', ['-f', production]]] as [string, string[]][]) {
    it(`${name}: every container non-root, no escalation, drops ALL, read-only root, seccomp, resources, pinned image; no Secret values`, async () => {
      const objects = await render(...args);
      const pods = podSpecs(objects);
      expect(pods.map(([n]) => n).sort()).toEqual(['Deployment/hermes-gateway', 'Deployment/hermes-operator', 'Deployment/hermes-worker', 'Job/hermes-migrate']);
      for (const [where, spec] of pods) {
        expect(spec.securityContext?.runAsNonRoot, where).toBe(true);
        expect(spec.securityContext?.seccompProfile?.type, where).toBe('RuntimeDefault');
        for (const c of [...(spec.initContainers ?? []), ...spec.containers] as Container[]) {
          const at = `${where} container ${c.name}`;
          expect(c.securityContext?.runAsNonRoot, at).toBe(true);
          expect(c.securityContext?.allowPrivilegeEscalation, at).toBe(false);
          expect(c.securityContext?.capabilities?.drop, at).toEqual(['ALL']);
          expect(c.securityContext?.capabilities?.add, at).toBeUndefined();
          expect(c.securityContext?.readOnlyRootFilesystem, at).toBe(true);
          expect(c.securityContext?.privileged, at).not.toBe(true);
          expect(c.resources?.requests?.cpu && c.resources?.requests?.memory, at).toBeTruthy();
          expect(c.resources?.limits?.memory, at).toBeTruthy();
          expect(c.image, at).toMatch(/^[^@\s]+(:[\w][\w.-]*|@sha256:[a-f0-9]{64})$/);
          expect(c.image, at).not.toMatch(/:latest$/);
          for (const e of c.env ?? []) {
            if (/(URL|TOKEN|SECRET|PASSWORD|KEY)$/.test(e.name)) expect(e.value, `${at} env ${e.name} must come from a Secret`).toBeUndefined();
          }
        }
        expect(spec.hostNetwork ?? false, where).toBe(false);
        expect(spec.hostPID ?? false, where).toBe(false);
      }
      expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
      // Probes on the components that serve.
      for (const d of objects.filter((o) => o.kind === 'Deployment')) {
        const c = d.spec.template.spec.containers[0];
        expect(c.livenessProbe.httpGet.path).toBe('/healthz');
        expect(c.readinessProbe.httpGet.path).toBe('/readyz');
        expect(d.spec.template.spec.topologySpreadConstraints).toHaveLength(2);
        expect(objects.some((o) => o.kind === 'PodDisruptionBudget' && o.metadata.name === d.metadata.name)).toBe(true);
      }
    });
  }

  it('renders the sandbox namespace restricted, its ServiceAccount without a token, default deny everywhere', async () => {
    const objects = await render();
    const sandboxNs = objects.find((o) => o.kind === 'Namespace' && o.metadata.name === 'hermes-sandbox')!;
    expect(sandboxNs.metadata.labels).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'restricted', 'hermes.dev/sandbox-namespace': 'true' });
    const sa = objects.find((o) => o.kind === 'ServiceAccount' && o.metadata.name === 'hermes-sandbox') as unknown as { automountServiceAccountToken: boolean };
    expect(sa.automountServiceAccountToken).toBe(false);
    const deny = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.namespace === 'hermes-sandbox')!;
    expect(deny.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
    const releaseDeny = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'hermes-default-deny')!;
    expect(releaseDeny.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(releaseDeny.spec.ingress ?? releaseDeny.spec.egress).toBeUndefined();
    // Workers reach HTTPS outside the private ranges, never the whole internet on any port.
    const worker = objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'hermes-worker')!;
    for (const rule of worker.spec.egress) expect(rule.ports?.length, JSON.stringify(rule)).toBeGreaterThan(0);
  });

  it('runs the migrations as a pre-install/pre-upgrade hook Job, and scales workers with KEDA on the turn queue when asked', async () => {
    const objects = await render('-f', production);
    const job = objects.find((o) => o.kind === 'Job')!;
    expect(job.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
    expect(job.spec.template.spec.containers[0].args).toEqual(['migrate']);
    const scaled = objects.find((o) => o.kind === 'ScaledObject')!;
    expect(scaled.spec.triggers[0]).toMatchObject({ type: 'redis', metadata: { listName: 'hermes:turns:wait', address: 'redis.data.svc:6379' } });
    expect(objects.filter((o) => o.kind === 'HorizontalPodAutoscaler').map((o) => o.metadata.name)).toEqual(['hermes-gateway']);
    expect(objects.filter((o) => o.kind === 'RoleBinding').map((o) => `${o.metadata.namespace}/${o.metadata.name}`).sort())
      .toEqual(['hermes-sandbox/hermes-worker', 'team-a/hermes-gateway', 'team-a/hermes-worker', 'team-b/hermes-gateway', 'team-b/hermes-worker']);
  });
});

describe('per-component Pod settings', () => {
  it('puts podAnnotations, podLabels, priorityClassName, ServiceAccount annotations and security contexts where a platform engineer expects them', async () => {
    const objects = await render('-f', podValues);
    const pods = Object.fromEntries(podSpecs(objects).map(([n]) => [n, objects.find((o) => `${o.kind}/${o.metadata.name}` === n)!.spec.template]));
    const gateway = pods['Deployment/hermes-gateway'];
    // The component's annotations win over the top-level ones; the chart's own labels win over both.
    expect(gateway.metadata.annotations).toEqual({ 'sidecar.istio.io/inject': 'false', 'example.com/owner': 'edge-team' });
    expect(gateway.metadata.labels).toMatchObject({ 'app.kubernetes.io/component': 'gateway', team: 'ai', tier: 'edge' });
    expect(gateway.spec.priorityClassName).toBe('hermes-critical');
    expect(pods['Deployment/hermes-worker'].metadata.annotations).toEqual({ 'sidecar.istio.io/inject': 'false', 'example.com/owner': 'platform' });
    expect(pods['Deployment/hermes-worker'].metadata.labels).toMatchObject({ 'app.kubernetes.io/component': 'worker', team: 'ai' });
    expect(pods['Deployment/hermes-worker'].spec.priorityClassName).toBeUndefined();
    const migrate = pods['Job/hermes-migrate'];
    expect(migrate.spec).toMatchObject({ nodeSelector: { pool: 'system' }, priorityClassName: 'hermes-critical', tolerations: [{ key: 'dedicated', operator: 'Exists' }] });
    expect(migrate.spec.containers[0].env).toContainEqual({ name: 'HERMES_LOG_LEVEL', value: 'debug' });
    for (const [where, template] of Object.entries(pods)) {
      expect(template.spec.securityContext, where).toEqual({ runAsNonRoot: true, runAsUser: 20000, runAsGroup: 20000, fsGroup: 20000, fsGroupChangePolicy: 'OnRootMismatch', seccompProfile: { type: 'RuntimeDefault' } });
      expect(template.spec.containers[0].securityContext.capabilities, where).toEqual({ drop: ['ALL'] });
      // podLabels never change a selector.
      expect(template.metadata.labels['app.kubernetes.io/name'], where).toBe('hermes');
    }
    const accounts = Object.fromEntries(objects.filter((o) => o.kind === 'ServiceAccount').map((o) => [o.metadata.name, o.metadata.annotations ?? {}]));
    expect(accounts['hermes-worker']).toEqual({ 'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/hermes-worker' });
    expect(accounts['hermes-gateway']).toEqual({});
    // The migrations account keeps its hook annotations next to the user's.
    expect(accounts['hermes-migrate']).toEqual({ 'iam.gke.io/gcp-service-account': 'migrate@project.iam.gserviceaccount.com', 'helm.sh/hook': 'pre-install,pre-upgrade', 'helm.sh/hook-weight': '-10', 'helm.sh/hook-delete-policy': 'before-hook-creation' });
    // The defaults render the restricted contexts as before.
    const defaults = podSpecs(await render());
    for (const [where, spec] of defaults) expect(spec.securityContext, where).toEqual({ runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, fsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } });
  });
});

describe('values.schema.json', () => {
  it('refuses an unknown key (a typo) with a clear message', async () => {
    const out = await template('--set', 'gateway.replica=3');
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(/at '\/gateway': additional properties 'replica' not allowed/);
    const nested = await template('--set', 'metrics.serviceMonitor.intervall=1m');
    expect(nested.stderr).toMatch(/additional properties 'intervall' not allowed/);
  });

  it('refuses wrong types and values, and the latest tag', async () => {
    expect((await template('--set', 'worker.turnConcurrency=lots')).stderr).toMatch(/at '\/worker\/turnConcurrency': got string, want integer/);
    expect((await template('--set', 'sandbox.backend=docker')).stderr).toMatch(/sandbox\/backend/);
    // The latest tag is refused saying why (the schema's `not` only said "'not' failed").
    const latest = await template('--set', 'image.tag=latest');
    expect(latest.code).not.toBe(0);
    expect(latest.stderr).toMatch(/image\.tag: not `latest`/);
    const bundledLatest = await template('--set', 'bundled.redis.enabled=true', '--set', 'bundled.redis.image=redis:latest');
    expect(bundledLatest.stderr).toMatch(/bundled\.redis\.image: not a `:latest` tag/);
    expect((await template('--set', 'sandbox.image=ghcr.io/x/sandbox:latest')).stderr).toMatch(/sandbox\.image: not a `:latest` tag/);
    expect((await template('--set-string', 'image.digest=abc')).stderr).toMatch(/image\/digest/);
  });

  // Hostile values used to render: names the apiserver refuses halfway through an install (naming a
  // derived object), numbers past int32, and values that crash-looped every worker at start
  // (HERMES_SHUTDOWN_GRACE_SECONDS 0, a DNS selector that is not name=value). Each is now refused
  // by helm template, naming the value.
  it.each([
    ['fullnameOverride=My Release', /at '\/fullnameOverride': 'My Release' does not match pattern/],
    ['nameOverride=a b', /at '\/nameOverride': 'a b' does not match pattern/],
    ['commonLabels.team=a b', /at '\/commonLabels\/team': 'a b' does not match pattern/],
    ['gateway.podLabels.team=a b', /at '\/gateway\/podLabels\/team': 'a b' does not match pattern/],
    ['database.existingSecret=Bad Secret', /at '\/database\/existingSecret': 'Bad Secret' does not match pattern/],
    ['redis.secretKey=redis url', /at '\/redis\/secretKey': 'redis url' does not match pattern/],
    ['worker.replicas=99999999999999', /at '\/worker\/replicas': maximum: got .*, want 1,000/],
    ['gateway.replicas=-1', /at '\/gateway\/replicas': minimum: got -1, want 1/],
    ['worker.shutdownGraceSeconds=0', /at '\/worker\/shutdownGraceSeconds': minimum: got 0, want 1/],
    ['migrations.backoffLimit=-1', /at '\/migrations\/backoffLimit': minimum: got -1, want 0/],
    ['sandbox.dnsSelector=k8s-app', /at '\/sandbox\/dnsSelector': 'k8s-app' does not match pattern/],
    ['ingress.host=not a host', /at '\/ingress\/host': 'not a host' does not match pattern/],
    ['gateway.autoscaling.minReplicas=5,gateway.autoscaling.maxReplicas=2', /gateway\.autoscaling\.minReplicas \(5\) is above gateway\.autoscaling\.maxReplicas \(2\)/],
    ['keda.enabled=true,keda.redisAddress=redis:6379,worker.autoscaling.minReplicas=30', /worker\.autoscaling\.minReplicas \(30\) is above worker\.autoscaling\.maxReplicas \(20\)/],
  ])('refuses the hostile value %s, naming it', async (value, message) => {
    const out = await template('--set', value);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(message);
  });

  it('fails helm install too, before anything reaches the cluster', async () => {
    const out = await run(helm, ['install', 'typo', chartDir, '--namespace', ns, '--kubeconfig', cp.adminKubeconfig, '--set', 'worker.replicass=2', '--dry-run=server']);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(/additional properties 'replicass' not allowed/);
  });
});

describe('helm install, upgrade and uninstall on the real apiserver (objects only: no Pods run here)', () => {
  it('installs, upgrades with changed values, and leaves the CRDs and the sandbox namespace on uninstall', async () => {
    const releaseNs = await cp.createNamespace('release');
    const helmArgs = (...args: string[]) => run(helm, [...args, '--kubeconfig', cp.adminKubeconfig, '--namespace', releaseNs]);
    // --no-hooks: the migrations hook Job needs a Job controller and a kubelet to finish, which
    // this plane does not run; the hook itself is checked above.
    const installed = await helmArgs('install', 'hermes', chartDir, '--no-hooks', '--set', 'sandbox.namespace.name=sbx-install');
    expect(installed.code, installed.stderr).toBe(0);
    const deployments = await cp.kubectl(['-n', releaseNs, 'get', 'deployments', '-o', 'name']);
    expect(deployments.stdout.trim().split('\n').sort()).toEqual(['deployment.apps/hermes-gateway', 'deployment.apps/hermes-operator', 'deployment.apps/hermes-worker']);
    const hpa = () => cp.kubectl(['-n', releaseNs, 'get', 'hpa', 'hermes-gateway', '-o', 'jsonpath={.spec.maxReplicas}']);
    expect((await hpa()).stdout).toBe('10');

    const upgraded = await helmArgs('upgrade', 'hermes', chartDir, '--no-hooks', '--reuse-values', '--set', 'gateway.autoscaling.maxReplicas=5');
    expect(upgraded.code, upgraded.stderr).toBe(0);
    expect((await hpa()).stdout).toBe('5');
    expect((await helmArgs('history', 'hermes')).stdout).toMatch(/\n2\s+.*deployed/);

    const uninstalled = await helmArgs('uninstall', 'hermes', '--wait');
    expect(uninstalled.code, uninstalled.stderr).toBe(0);
    expect((await cp.kubectl(['-n', releaseNs, 'get', 'deployments', '-o', 'name'])).stdout.trim()).toBe('');
    // CRDs from the chart's crds/ are never deleted by Helm (Agents and their data stay), nor is the sandbox namespace (resource-policy keep).
    expect((await cp.kubectl(['get', 'crd', 'agents.hermes.dev'])).code).toBe(0);
    expect((await cp.kubectl(['get', 'namespace', 'sbx-install'])).code).toBe(0);
  });
});
