// The operator process: watched caches of Agents, Profiles, Skills, CronJobs, Secrets and ConfigMaps (and of
// sandbox Pods and workspace PVCs) feed the controllers' work queues; only the leader (a
// coordination.k8s.io Lease) reconciles. Caches stay warm on followers so a failover starts from
// a full cache.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { AppsV1Api, CoreV1Api, type KubeConfig, type KubernetesListObject, type KubernetesObject, type V1ConfigMap, type V1PersistentVolumeClaim, type V1Pod, type V1Secret } from '@kubernetes/client-node';
import type { Db, Logger } from '../services/core/index.js';
import { group, version } from './api/common.js';
import { Controller } from './runtime/controller.js';
import { EventRecorder } from './runtime/events.js';
import { WatchedCache } from './runtime/informer.js';
import { keyOf, ResourceWriter } from './runtime/kube.js';
import { LeaderElector } from './runtime/leader.js';
import type { KubernetesSandboxSettings } from '../services/sandbox/index.js';
import type { OperatorMetrics } from './runtime/metrics.js';
import type { Caches, OperatorContext, RawObject } from './controllers/context.js';
import { reconcileAgent } from './controllers/agent.js';
import { reconcileProfile } from './controllers/profile.js';
import { reconcileSkill } from './controllers/skill.js';
import { skillNameOf, skillSelectionFingerprint } from './controllers/agent-skills.js';
import { reconcileCronJob } from './controllers/cronjob.js';
import { agentSecretNames, profileConfigMapNames, profileSecretNames } from './controllers/refs.js';
import { agentLabel, childSelector } from './controllers/dedicated.js';
import type { RuntimeOptions } from './controllers/context.js';
import { mountedClaimKeys, reconcileSandboxPod, reconcileWorkspace } from './controllers/sandbox-hygiene.js';
import { SESSION_SWEEP_KEY, sweepSessionSandboxes } from './controllers/session-sweep.js';
import { resolveHygieneOptions, type ResolvedHygieneOptions, type SandboxHygieneOptions } from './controllers/sandbox-policy.js';
import { sandboxPodSelector, workspacePvcSelector } from './api/sandbox-labels.js';

/** What every controller reads, from the options (defaults applied). */
function contextOf(opts: OperatorOptions, caches: Caches, writer: OperatorContext['writer'], events: EventRecorder, log: Logger): OperatorContext {
  return { kc: opts.kc, runtime: opts.runtime ?? {}, caches, writer, events, db: opts.db, log, gatewayUrl: opts.gatewayUrl ?? 'http://hermes-gateway:8080', secretEnv: opts.secretEnv ?? {},
    ...(opts.sandboxPod ? { sandboxPod: opts.sandboxPod } : {}), ...(opts.namespace ? { watchNamespace: opts.namespace } : {}) };
}

/** Options for {@link startOperator}. */
export interface OperatorOptions {
  kc: KubeConfig;
  db: Db;
  log: Logger;
  /** Watch one namespace only (then a namespaced Role suffices). @defaultValue all namespaces */
  namespace?: string;
  /** @defaultValue `http://hermes-gateway:8080` */
  gatewayUrl?: string;
  /** @defaultValue true */
  leaderElection?: boolean;
  /** Namespace of the leader Lease. @defaultValue `namespace`, else POD_NAMESPACE, else `default` */
  leaseNamespace?: string;
  /** @defaultValue `hermes-operator` */
  leaseName?: string;
  /** @defaultValue 15 */
  leaseDurationSeconds?: number;
  /** @defaultValue 2_000 ms */
  leaseRetryMs?: number;
  /** @defaultValue hostname + random suffix */
  identity?: string;
  /** Periodic resync of every cached object. @defaultValue 300_000 ms */
  resyncMs?: number;
  /** First retry delay of a failed reconcile. @defaultValue 200 ms */
  retryBaseMs?: number;
  /** Concurrent reconciles per controller. @defaultValue 4 */
  workers?: number;
  /** Image and pod environment of `runtime: dedicated` Agents. */
  runtime?: RuntimeOptions;
  /** Sandbox hygiene (stray sandbox Pods, expired workspace PVCs); `false` turns it off (no Pod/PVC permissions needed then). @defaultValue on, see {@link SandboxHygieneOptions} */
  sandbox?: SandboxHygieneOptions | false;
  /** The install's sandbox Pod settings (HERMES_SANDBOX_*), for the SandboxTemplates of mode session. @defaultValue defaultKubernetesSandboxSettings */
  sandboxPod?: KubernetesSandboxSettings;
  /** Prometheus metrics (reconciles, work queues, leader status); none when absent. */
  metrics?: OperatorMetrics;
  /**
   * The allow-listed variables (HERMES_SECRETS_ENV_ALLOW) that `env:` secret sources resolve to
   * when compiling (API key hashes). @defaultValue none: every `env:` source is refused
   */
  secretEnv?: Readonly<Record<string, string>>;
}

export interface OperatorHandle {
  identity: string;
  isLeader(): boolean;
  caches: Caches;
  /** Times the caches relisted after a broken watch. */
  restarts(): number;
  /** Reconciles finished per controller. */
  reconciles(): Record<string, number>;
  /** Every watched cache has listed once (the readiness of `hermes operator`). */
  synced(): boolean;
  /** Stops; `releaseLease: false` simulates a crash (the Lease is left to expire). @defaultValue releaseLease true */
  stop(opts?: { releaseLease?: boolean }): Promise<void>;
}

function crPath(plural: string, namespace?: string): string {
  return namespace ? `/apis/${group}/${version}/namespaces/${namespace}/${plural}` : `/apis/${group}/${version}/${plural}`;
}

type CrPlural = 'agents' | 'profiles' | 'skills' | 'cronjobs';
type ChangeHandlers = Record<CrPlural, (o: RawObject) => void> & {
  secrets: (s: V1Secret) => void; configMaps: (c: V1ConfigMap) => void; child: (o: KubernetesObject) => void; pods: (p: V1Pod) => void; workspaces: (c: V1PersistentVolumeClaim) => void;
};

function makeCaches(opts: OperatorOptions, writer: ResourceWriter, onChange: ChangeHandlers, hygiene: ResolvedHygieneOptions | undefined): Caches {
  const ns = opts.namespace;
  const core = opts.kc.makeApiClient(CoreV1Api);
  const cr = (plural: CrPlural) => new WatchedCache<RawObject>({
    kc: opts.kc, path: crPath(plural, ns), what: plural, log: opts.log, onChange: onChange[plural], resyncMs: opts.resyncMs,
    list: async () => (await writer.list(plural, ns)) as KubernetesListObject<RawObject>,
  });
  const apps = opts.kc.makeApiClient(AppsV1Api);
  const labelSelector = childSelector;
  const child = <T extends KubernetesObject>(what: string, path: string, list: () => Promise<KubernetesListObject<T>>) => new WatchedCache<T>({
    kc: opts.kc, path: ns ? `${path.replace(/\/([a-z]+)$/, `/namespaces/${ns}/$1`)}` : path, what, log: opts.log, onChange: onChange.child, resyncMs: 0, labelSelector, list,
  });
  return {
    children: {
      deployments: child('deployments', '/apis/apps/v1/deployments', () => (ns ? apps.listNamespacedDeployment({ namespace: ns, labelSelector }) : apps.listDeploymentForAllNamespaces({ labelSelector }))),
      services: child('services', '/api/v1/services', () => (ns ? core.listNamespacedService({ namespace: ns, labelSelector }) : core.listServiceForAllNamespaces({ labelSelector }))),
    },
    agents: cr('agents'),
    profiles: cr('profiles'),
    skills: cr('skills'),
    cronjobs: cr('cronjobs'),
    secrets: new WatchedCache<V1Secret>({
      kc: opts.kc, path: ns ? `/api/v1/namespaces/${ns}/secrets` : '/api/v1/secrets', what: 'secrets', log: opts.log, onChange: onChange.secrets, resyncMs: 0,
      list: () => (ns ? core.listNamespacedSecret({ namespace: ns }) : core.listSecretForAllNamespaces()),
    }),
    configMaps: new WatchedCache<V1ConfigMap>({
      kc: opts.kc, path: ns ? `/api/v1/namespaces/${ns}/configmaps` : '/api/v1/configmaps', what: 'configmaps', log: opts.log, onChange: onChange.configMaps, resyncMs: 0,
      list: () => (ns ? core.listNamespacedConfigMap({ namespace: ns }) : core.listConfigMapForAllNamespaces()),
    }),
    ...(hygiene ? { sandbox: {
      pods: new WatchedCache<V1Pod>({
        kc: opts.kc, path: ns ? `/api/v1/namespaces/${ns}/pods` : '/api/v1/pods', what: 'sandbox pods', log: opts.log, onChange: onChange.pods,
        resyncMs: hygiene.resyncMs, labelSelector: sandboxPodSelector,
        list: () => (ns ? core.listNamespacedPod({ namespace: ns, labelSelector: sandboxPodSelector }) : core.listPodForAllNamespaces({ labelSelector: sandboxPodSelector })),
      }),
      workspaces: new WatchedCache<V1PersistentVolumeClaim>({
        kc: opts.kc, path: ns ? `/api/v1/namespaces/${ns}/persistentvolumeclaims` : '/api/v1/persistentvolumeclaims', what: 'workspace pvcs', log: opts.log,
        onChange: onChange.workspaces, resyncMs: hygiene.resyncMs, labelSelector: workspacePvcSelector,
        list: () => (ns ? core.listNamespacedPersistentVolumeClaim({ namespace: ns, labelSelector: workspacePvcSelector })
          : core.listPersistentVolumeClaimForAllNamespaces({ labelSelector: workspacePvcSelector })),
      }),
    } } : {}),
  };
}

const hygieneOf = (o: OperatorOptions['sandbox']) => (o === false ? undefined : resolveHygieneOptions(o));
const sandboxCaches = (caches: Caches) => (caches.sandbox ? [caches.sandbox.pods, caches.sandbox.workspaces] : []);

export async function startOperator(opts: OperatorOptions): Promise<OperatorHandle> {
  const identity = opts.identity ?? `${hostname()}-${randomBytes(3).toString('hex')}`;
  const log = opts.log;
  const writer = new ResourceWriter(opts.kc);
  const queueOpts = { baseMs: opts.retryBaseMs ?? 200 };
  const m = opts.metrics;
  // eslint-disable-next-line prefer-const -- assigned after the caches that the reconcilers read
  let ctx: OperatorContext;
  const agents = new Controller('agent', (k) => reconcileAgent(ctx, k), log, queueOpts, m);
  const profiles = new Controller('profile', (k) => reconcileProfile(ctx, k), log, queueOpts, m);
  const skills = new Controller('skill', (k) => reconcileSkill(ctx, k), log, queueOpts, m);
  const cronjobs = new Controller('cronjob', (k) => reconcileCronJob(ctx, k), log, queueOpts, m);
  const hygiene = hygieneOf(opts.sandbox);
  const sandboxPods = new Controller('sandbox-pod', (k) => reconcileSandboxPod(ctx, hygiene!, k), log, queueOpts, m);
  const workspaces = new Controller('workspace', (k) => reconcileWorkspace(ctx, hygiene!, k), log, queueOpts, m);
  const sessionSweep = new Controller('session-sandboxes', () => sweepSessionSandboxes(ctx, {
    resyncMs: hygiene?.resyncMs ?? 60_000,
    report: (counts) => { for (const [state, n] of Object.entries(counts)) m?.sessionSandboxes.set({ state }, n); },
  }, opts.namespace), log, queueOpts, m);

  const skillSeen = new Map<string, string>();
  const agentsOf = (namespace: string, pred: (a: RawObject) => boolean) => {
    for (const a of ctx.caches.agents.list(namespace)) if (pred(a)) agents.enqueue(keyOf(a));
  };
  const caches = makeCaches(opts, writer, {
    agents: (a: RawObject) => {
      agents.enqueue(keyOf(a));
      for (const c of ctx.caches.cronjobs.list(a.metadata.namespace)) {
        if ((c.spec as { agentRef?: { name?: string } } | undefined)?.agentRef?.name === a.metadata.name) cronjobs.enqueue(keyOf(c));
      }
    },
    skills: (s: RawObject) => {
      skills.enqueue(keyOf(s));
      // Only a change of what Agents select (labels, name, deletion) re-queues them, debounced so a burst recompiles once.
      const fp = skillSelectionFingerprint(s);
      const before = skillSeen.get(keyOf(s));
      if (before === fp) return;
      skillSeen.set(keyOf(s), fp);
      // The Skills that shared its name before or share it now: which of them is offered may have changed (NameConflict).
      const names = new Set([skillNameOf(s), ...(before ? [String((JSON.parse(before) as unknown[])[1])] : [])]);
      for (const o of ctx.caches.skills.list(s.metadata.namespace)) if (o.metadata.name !== s.metadata.name && names.has(skillNameOf(o))) skills.enqueue(keyOf(o));
      for (const a of ctx.caches.agents.list(s.metadata.namespace)) agents.enqueueAfter(keyOf(a), 500);
    },
    child: (o: KubernetesObject) => {
      const owner = o.metadata?.labels?.[agentLabel];
      if (owner && o.metadata?.namespace) agents.enqueue(`${o.metadata.namespace}/${owner}`);
    },
    cronjobs: (c: RawObject) => cronjobs.enqueue(keyOf(c)),
    profiles: (p: RawObject) => {
      profiles.enqueue(keyOf(p));
      agentsOf(p.metadata.namespace, (a) => (a.spec as { profileRef?: { name?: string } } | undefined)?.profileRef?.name === p.metadata.name);
    },
    secrets: (s: V1Secret) => {
      const ns = s.metadata?.namespace ?? '';
      const name = s.metadata?.name ?? '';
      for (const p of ctx.caches.profiles.list(ns)) if (profileSecretNames(p).has(name)) profiles.enqueue(keyOf(p));
      agentsOf(ns, (a) => agentSecretNames(a, ctx.caches.profiles).has(name));
    },
    // A ConfigMap edit recompiles the Agents whose Profile reads from it (a new revision when the text changed).
    configMaps: (c: V1ConfigMap) => {
      const ns = c.metadata?.namespace ?? '';
      const name = c.metadata?.name ?? '';
      for (const p of ctx.caches.profiles.list(ns)) {
        if (!profileConfigMapNames(p).has(name)) continue;
        profiles.enqueue(keyOf(p));
        agentsOf(ns, (a) => (a.spec as { profileRef?: { name?: string } } | undefined)?.profileRef?.name === p.metadata.name);
      }
    },
    // A Pod that finishes or goes may free the workspaces it mounted.
    pods: (p: V1Pod) => {
      sandboxPods.enqueue(keyOf({ metadata: { namespace: p.metadata?.namespace, name: p.metadata?.name ?? '' } }));
      for (const k of mountedClaimKeys(p)) workspaces.enqueue(k);
    },
    workspaces: (c: V1PersistentVolumeClaim) => workspaces.enqueue(keyOf({ metadata: { namespace: c.metadata?.namespace, name: c.metadata?.name ?? '' } })),
  }, hygiene);
  ctx = contextOf(opts, caches, writer, new EventRecorder(opts.kc, 'hermes-operator', identity, log), log);
  const allCaches: { start(): Promise<void>; stop(): Promise<void>; hasSynced(): boolean; restarts: number }[] = [caches.agents, caches.profiles, caches.skills, caches.cronjobs, caches.secrets, caches.configMaps, caches.children.deployments, caches.children.services, ...sandboxCaches(caches)];
  await Promise.all(allCaches.map((c) => c.start()));

  const controllers = [agents, profiles, skills, cronjobs, ...(hygiene ? [sandboxPods, workspaces, sessionSweep] : [])];
  const leaseName = opts.leaseName ?? 'hermes-operator';
  const startControllers = () => {
    m?.leader.set({ name: leaseName }, 1);
    for (const c of controllers) c.start(opts.workers ?? 4);
    for (const c of [caches.profiles, caches.agents, caches.skills, caches.cronjobs, ...sandboxCaches(caches)]) c.resync();
    if (hygiene) sessionSweep.enqueue(SESSION_SWEEP_KEY);
  };
  const stopControllers = () => {
    m?.leader.set({ name: leaseName }, 0);
    void Promise.all(controllers.map((c) => c.stop()));
  };
  let elector: LeaderElector | undefined;
  if (opts.leaderElection === false) startControllers();
  else {
    elector = new LeaderElector({
      kc: opts.kc, namespace: opts.leaseNamespace ?? opts.namespace ?? process.env.POD_NAMESPACE ?? 'default', name: leaseName,
      identity, leaseDurationSeconds: opts.leaseDurationSeconds ?? 15, retryPeriodMs: opts.leaseRetryMs ?? 2_000,
      renewDeadlineMs: Math.round((opts.leaseDurationSeconds ?? 15) * 1000 * 2 / 3), log,
      onStartedLeading: startControllers, onStoppedLeading: stopControllers,
    });
    elector.start();
  }
  log.info({ identity, namespace: opts.namespace ?? '(all)' }, 'Started operator');
  return {
    identity,
    isLeader: () => (elector ? elector.isLeader() : true),
    caches,
    reconciles: () => Object.fromEntries(controllers.map((c) => [c.name, c.reconciles])),
    restarts: () => allCaches.reduce((n, c) => n + c.restarts, 0),
    synced: () => allCaches.every((c) => c.hasSynced()),
    async stop({ releaseLease = true } = {}) {
      await elector?.stop({ release: releaseLease });
      await Promise.all(controllers.map((c) => c.stop()));
      await Promise.all(allCaches.map((c) => c.stop()));
    },
  };
}
