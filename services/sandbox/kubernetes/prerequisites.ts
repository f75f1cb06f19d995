// What must exist before an Agent's first sandbox Pod: the sandbox ServiceAccount of the namespace
// (no token mounted; created when missing — a namespace without it would refuse every Pod) and the
// Agent's NetworkPolicy (written before any Pod of that Agent, re-written when the Profile's network
// changes or, for host:port entries, every refresh interval). Both fail closed: a call whose policy
// could not be written does not run. The operator may own both later (per Agent, at reconcile);
// this code then only finds them in place.
import { lookup } from 'node:dns/promises';
import { CoreV1Api, NetworkingV1Api, type KubeConfig, type V1NetworkPolicy } from '@kubernetes/client-node';
import type { SandboxNetwork } from '../types.js';
import { apiCode, apiFailure, bounded } from './failures.js';
import { parseAllowEntry, sandboxNetworkPolicy, type PolicyTarget } from './network-policy.js';
import type { KubernetesSandboxSettings } from './settings.js';

/** Resolves a host to its addresses (none when it does not resolve: the entry then opens nothing). */
export type Resolver = (host: string) => Promise<string[]>;

export const dnsResolver: Resolver = async (host) => {
  try {
    return (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);
  } catch {
    return [];
  }
};

/** JSON with sorted keys and no undefined fields (objects from the API and our own compare equal). */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, val: unknown) => (val && typeof val === 'object' && !Array.isArray(val)
    ? Object.fromEntries(Object.entries(val).filter(([, x]) => x !== undefined).sort(([a], [b]) => a.localeCompare(b)))
    : val));
}

export class Prerequisites {
  private readonly accounts = new Map<string, Promise<void>>();
  private readonly policies = new Map<string, { spec: string; at: number }>();
  private readonly core: CoreV1Api;
  private readonly net: NetworkingV1Api;

  constructor(kc: KubeConfig, private readonly settings: KubernetesSandboxSettings, private readonly resolve: Resolver = dnsResolver) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.net = kc.makeApiClient(NetworkingV1Api);
  }

  /** Creates the sandbox ServiceAccount in `namespace` unless it exists (once per process and namespace). */
  serviceAccount(namespace: string): Promise<void> {
    let p = this.accounts.get(namespace);
    if (!p) {
      p = bounded(this.createServiceAccount(namespace), this.settings.apiTimeoutMs, `ensuring ServiceAccount ${namespace}/${this.settings.serviceAccountName}`);
      this.accounts.set(namespace, p);
      p.catch(() => this.accounts.delete(namespace)); // a failure is tried again by the next call
    }
    return p;
  }

  private async createServiceAccount(namespace: string): Promise<void> {
    const name = this.settings.serviceAccountName;
    try {
      await this.core.readNamespacedServiceAccount({ name, namespace });
      return;
    } catch (err) {
      if (apiCode(err) !== 404) throw apiFailure(err, `reading ServiceAccount ${namespace}/${name}`);
    }
    try {
      await this.core.createNamespacedServiceAccount({ namespace, body: {
        metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'hermes' } },
        automountServiceAccountToken: false,
      } });
    } catch (err) {
      if (apiCode(err) !== 409) throw apiFailure(err, `creating the missing sandbox ServiceAccount ${namespace}/${name}`);
    }
  }

  /** Writes the Agent's sandbox NetworkPolicy unless this process wrote it for the same network settings recently. */
  async networkPolicy(namespace: string, agent: string, network: SandboxNetwork, target?: PolicyTarget): Promise<void> {
    const key = `${namespace}/${target?.name ?? agent}`;
    const settings = JSON.stringify(network);
    const hosts = network.egress === 'allowlist'
      ? network.allow.map(parseAllowEntry).flatMap((e) => (typeof e !== 'string' && e.kind === 'host' ? [e.host] : []))
      : [];
    const cached = this.policies.get(key);
    if (cached?.spec === settings && (hosts.length === 0 || Date.now() - cached.at < this.settings.policyRefreshMs)) return;
    const resolved: Record<string, string[]> = {};
    for (const host of hosts) resolved[host] = (await bounded(this.resolve(host), 5_000, `resolving ${host}`).catch(() => [])).sort();
    await bounded(this.write(sandboxNetworkPolicy({ namespace, agent, network, resolved, dns: this.settings.dns, ...(target ? { target } : {}) })), this.settings.apiTimeoutMs, `writing the sandbox NetworkPolicy of ${key}`);
    this.policies.set(key, { spec: settings, at: Date.now() });
  }

  private async write(policy: V1NetworkPolicy): Promise<void> {
    const name = policy.metadata?.name ?? '';
    const namespace = policy.metadata?.namespace ?? '';
    const doing = `writing the sandbox NetworkPolicy ${namespace}/${name} (no sandbox runs without it)`;
    try {
      const current = await this.net.readNamespacedNetworkPolicy({ name, namespace });
      if (canonical(current.spec) === canonical(policy.spec)) return;
      await this.net.replaceNamespacedNetworkPolicy({ name, namespace, body: { ...policy, metadata: { ...policy.metadata, resourceVersion: current.metadata?.resourceVersion } } });
    } catch (err) {
      if (apiCode(err) !== 404) throw apiFailure(err, doing);
      try {
        await this.net.createNamespacedNetworkPolicy({ namespace, body: policy });
      } catch (createErr) {
        if (apiCode(createErr) !== 409) throw apiFailure(createErr, doing);
      }
    }
  }
}
