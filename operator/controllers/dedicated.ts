// `runtime: dedicated`: the Agent gets its own gateway and worker Deployments, a Service, a
// ServiceAccount and a RoleBinding that lets its worker read Secrets of the Agent's namespace
// (ClusterRole hermes-worker), owned by the Agent (garbage-collected with it) and applied with server-side
// apply on every reconcile, so manual drift is corrected and an unchanged apply writes nothing.
// Switching back to `shared` deletes them. Secure by default: non-root, no privilege escalation,
// all capabilities dropped, RuntimeDefault seccomp, read-only root filesystem, gateway probes.
import { AppsV1Api, CoreV1Api, KubernetesObjectApi, RbacAuthorizationV1Api, PatchStrategy, type KubernetesObject, type V1Container, type V1Deployment, type V1Probe } from '@kubernetes/client-node';
import type { Agent } from '../api/agent.js';
import type { OperatorContext, RawObject, RuntimeOptions } from './context.js';
import { agentKey } from '../api/sandbox-labels.js';
import { dnsLabel } from '../../services/sandbox/index.js';

export const managedBy = 'hermes-operator';
/** The Agent a child belongs to: the same key as on sandbox Pods and workspace PVCs. */
export const agentLabel = agentKey;
export const childSelector = `app.kubernetes.io/managed-by=${managedBy}`;
/** The worker's ClusterRole in the chart (get Secrets), bound per dedicated Agent in its namespace. */
export const workerClusterRole = 'hermes-worker';

/** Where dedicated runtimes come from. */
/**
 * `hermes-<agent>[-<part>]`, a DNS label (a Service name is one). Past 63 characters the end is a
 * hash of the whole: cut to 63, a long Agent's gateway, worker and Service names were one name (the
 * worker Deployment was refused as the gateway's with an immutable selector), and two long Agents
 * with a common prefix shared their children.
 */
export const childName = (agent: string, part?: string) => `hermes-${dnsLabel(part ? `${agent}-${part}` : agent, 56)}`;

function labels(agent: Agent, component?: string): Record<string, string> {
  return { 'app.kubernetes.io/name': 'hermes', 'app.kubernetes.io/instance': agent.metadata.name, 'app.kubernetes.io/managed-by': managedBy,
    [agentLabel]: agent.metadata.name, ...(component ? { 'app.kubernetes.io/component': component } : {}) };
}

function container(component: 'gateway' | 'worker', opts: RuntimeOptions): V1Container {
  // Both serve /healthz and /readyz on their `http` port: the gateway on HERMES_PORT (8080), the worker
  // its probe and metrics server on HERMES_WORKER_PORT (8081).
  const port = component === 'gateway' ? 8080 : 8081;
  const probes: Partial<V1Container> = {
    readinessProbe: { httpGet: { path: '/readyz', port: 'http' }, periodSeconds: 10 } satisfies V1Probe,
    livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 20 } satisfies V1Probe,
  };
  return {
    name: component, image: opts.image ?? 'ghcr.io/hermes-operator/hermes:0.1.0', command: ['node', 'bin/hermes.js', component],
    envFrom: [{ secretRef: { name: opts.envSecret ?? 'hermes-runtime' } }],
    ports: [{ name: 'http', containerPort: port }],
    ...probes,
    resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } },
    securityContext: { runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } },
    volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
  };
}

function deployment(agent: Agent, component: 'gateway' | 'worker', opts: RuntimeOptions): V1Deployment {
  const sel = { [agentLabel]: agent.metadata.name, 'app.kubernetes.io/component': component };
  return {
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: { name: childName(agent.metadata.name, component), labels: labels(agent, component) },
    spec: {
      replicas: 1, selector: { matchLabels: sel },
      template: {
        metadata: { labels: labels(agent, component) },
        // Only the worker talks to the API: it reads the Secrets its Profile names (HERMES_SECRETS_SOURCE=kubernetes).
        spec: { serviceAccountName: childName(agent.metadata.name), automountServiceAccountToken: component === 'worker',
          securityContext: { runAsNonRoot: true, runAsUser: 10001, fsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [container(component, opts)], volumes: [{ name: 'tmp', emptyDir: {} }] },
      },
    },
  };
}

/** The children of a dedicated Agent, without owner references. */
export function desiredChildren(agent: Agent, opts: RuntimeOptions): KubernetesObject[] {
  const name = childName(agent.metadata.name);
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, labels: labels(agent) }, automountServiceAccountToken: false } as KubernetesObject,
    deployment(agent, 'gateway', opts),
    deployment(agent, 'worker', opts),
    { apiVersion: 'v1', kind: 'Service', metadata: { name, labels: labels(agent, 'gateway') },
      spec: { selector: { [agentLabel]: agent.metadata.name, 'app.kubernetes.io/component': 'gateway' }, ports: [{ name: 'http', port: 8080, targetPort: 'http' }] } } as KubernetesObject,
    // `get` on Secrets of this namespace only (charts/hermes/templates/worker-rbac.yaml).
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: childName(agent.metadata.name, 'secrets'), labels: labels(agent, 'worker') },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: workerClusterRole },
      subjects: [{ kind: 'ServiceAccount', name, namespace: agent.metadata.namespace }] } as KubernetesObject,
  ];
}

/** Applies (dedicated) or deletes (shared) the Agent's children. */
export async function reconcileRuntime(ctx: OperatorContext, raw: RawObject, agent: Agent, opts: RuntimeOptions): Promise<void> {
  const ns = agent.metadata.namespace;
  if (agent.spec.runtime.mode === 'shared') return deleteChildren(ctx, ns, agent.metadata.name);
  const api = KubernetesObjectApi.makeApiClient(ctx.kc);
  const owner = { apiVersion: raw.apiVersion, kind: raw.kind, name: raw.metadata.name, uid: raw.metadata.uid!, controller: true, blockOwnerDeletion: true };
  for (const child of desiredChildren(agent, opts)) {
    child.metadata = { ...child.metadata, namespace: ns, ownerReferences: [owner] };
    await api.patch(child, undefined, undefined, managedBy, true, PatchStrategy.ServerSideApply);
  }
}

async function deleteChildren(ctx: OperatorContext, ns: string, agentName: string): Promise<void> {
  const existing = ctx.caches.children.deployments.list(ns).filter((d) => d.metadata?.labels?.[agentLabel] === agentName);
  const services = ctx.caches.children.services.list(ns).filter((d) => d.metadata?.labels?.[agentLabel] === agentName);
  if (!existing.length && !services.length) return;
  const apps = ctx.kc.makeApiClient(AppsV1Api);
  const core = ctx.kc.makeApiClient(CoreV1Api);
  for (const d of existing) await apps.deleteNamespacedDeployment({ namespace: ns, name: d.metadata!.name! });
  for (const s of services) await core.deleteNamespacedService({ namespace: ns, name: s.metadata!.name! });
  await core.deleteNamespacedServiceAccount({ namespace: ns, name: childName(agentName) }).catch(() => undefined);
  await ctx.kc.makeApiClient(RbacAuthorizationV1Api).deleteNamespacedRoleBinding({ namespace: ns, name: childName(agentName, 'secrets') }).catch(() => undefined);
  ctx.log.info({ agent: `${ns}/${agentName}` }, 'Deleted dedicated runtime');
}
