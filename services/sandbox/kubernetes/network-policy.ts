// The Agent's sandbox NetworkPolicy, as pure functions: default-deny ingress and egress for the
// Agent's sandbox Pods; `allowlist` opens only the entries listed. Broad entries never open
// private or link-local ranges (RFC 1918, 100.64.0.0/10, 169.254.0.0/16, fc00::/7, fe80::/10):
// those are `except`ed unless an entry names them (or a range inside them) explicitly. A
// NetworkPolicy cannot name hosts: a `host:port` entry opens the addresses the host resolves to
// (resolved by the worker, refreshed — see network-ensure.ts) and, for the sandbox to resolve the
// name itself, DNS (port 53) to the cluster DNS Pods only.
import { BlockList, isIP } from 'node:net';
import type { V1NetworkPolicy, V1NetworkPolicyEgressRule, V1NetworkPolicyPort } from '@kubernetes/client-node';
import { agentKey, componentLabel, sandboxComponent } from '../../core/index.js';
import type { SandboxNetwork } from '../types.js';
import { labelValue, networkPolicyName } from './names.js';

/** Ranges a broad entry never opens (cloud metadata, node and cluster networks live here). */
export const PRIVATE_RANGES: readonly string[] = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16', 'fc00::/7', 'fe80::/10'];

export interface PortRange { port: number; endPort?: number; protocol: 'TCP' | 'UDP' }

/** One `spec.sandbox.network.allow` entry. */
export type AllowEntry =
  | { kind: 'cidr'; cidr: string; ports?: PortRange }
  | { kind: 'host'; host: string; ports: PortRange };

const PORT = String.raw`(\d{1,5})(?:-(\d{1,5}))?(?:/(tcp|udp))?`;

function portRange(port: string, end: string | undefined, proto: string | undefined): PortRange | string {
  const p = Number(port);
  const e = end === undefined ? undefined : Number(end);
  if (p < 1 || p > 65535 || (e !== undefined && (e < p || e > 65535))) return `port ${port}${end ? `-${end}` : ''} is not within 1-65535`;
  return { port: p, ...(e !== undefined && e !== p ? { endPort: e } : {}), protocol: proto === 'udp' ? 'UDP' : 'TCP' };
}

function toBigInt(addr: string): bigint {
  if (isIP(addr) === 4) return addr.split('.').reduce((acc, octet) => (acc << 8n) + BigInt(Number(octet)), 0n);
  const [head = '', tail = ''] = addr.split('::');
  const groups = (part: string) => (part ? part.split(':') : []);
  const h = groups(head);
  const t = groups(tail);
  const all = addr.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  return all.reduce((acc, g) => (acc << 16n) + BigInt(parseInt(g || '0', 16)), 0n);
}

function fromBigInt(n: bigint, v6: boolean): string {
  if (!v6) return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16));
  return new URL(`http://[${groups.join(':')}]`).hostname.slice(1, -1); // the canonical compressed form
}

/** `addr/bits` in canonical form (the network address), or undefined when it is not an IP range. */
function cidrOf(text: string): string | undefined {
  const [addr = '', bits, ...rest] = text.split('/');
  const family = isIP(addr);
  if (!family || rest.length || addr.includes('.') && family === 6) return undefined;
  const max = family === 4 ? 32 : 128;
  if (bits !== undefined && !/^\d{1,3}$/.test(bits)) return undefined;
  const n = bits === undefined ? max : Number(bits);
  if (n > max) return undefined;
  const mask = ((1n << BigInt(max)) - 1n) ^ ((1n << BigInt(max - n)) - 1n);
  return `${fromBigInt(toBigInt(addr) & mask, family === 6)}/${n}`;
}

/**
 * Parses an allow entry: `CIDR` (every port), `CIDR:PORT`, `[IPv6-CIDR]:PORT` or `HOST:PORT`;
 * PORT is `443`, `8000-8100`, optionally `/udp`. Returns a message for anything else.
 */
export function parseAllowEntry(entry: string): AllowEntry | string {
  const text = entry.trim();
  const bare = cidrOf(text);
  if (bare) return { kind: 'cidr', cidr: bare };
  const m = new RegExp(String.raw`^(?:\[([^\]]+)\]|([^:\[\]]+)):${PORT}$`, 'i').exec(text);
  if (!m) return `"${entry}" is not CIDR, CIDR:PORT or HOST:PORT (e.g. 203.0.113.0/24:443, pypi.org:443, 10.0.0.5/32:5432)`;
  const ports = portRange(m[3]!, m[4], m[5]?.toLowerCase());
  if (typeof ports === 'string') return `"${entry}": ${ports}`;
  const target = m[1] ?? m[2]!;
  const cidr = cidrOf(target);
  if (cidr) return { kind: 'cidr', cidr, ports };
  if (m[1] !== undefined || !/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i.test(target)) {
    return `"${entry}": ${target} is neither an IP range nor a host name`;
  }
  return { kind: 'host', host: target.toLowerCase(), ports };
}

const familyOf = (cidr: string) => (isIP(cidr.split('/')[0] ?? '') === 6 ? 'ipv6' : 'ipv4');
const prefixOf = (cidr: string) => Number(cidr.split('/')[1]);

function within(inner: string, outer: string): boolean {
  if (familyOf(inner) !== familyOf(outer) || prefixOf(inner) < prefixOf(outer)) return false;
  const list = new BlockList();
  list.addSubnet(outer.split('/')[0]!, prefixOf(outer), familyOf(outer));
  return list.check(inner.split('/')[0]!, familyOf(inner));
}

/** The private ranges strictly inside `cidr` (a range inside a private range was named explicitly: nothing to except). */
export function exceptsFor(cidr: string): string[] {
  return PRIVATE_RANGES.filter((r) => within(r, cidr) && !within(cidr, r));
}

/** True when `ip` (a resolved host address) is in a private range: a host name never opens those. */
export const isPrivateAddress = (ip: string): boolean =>
  PRIVATE_RANGES.some((r) => within(`${ip}/${isIP(ip) === 6 ? 128 : 32}`, r)) || ip.startsWith('127.') || ip === '::1';

const toPorts = (p: PortRange): V1NetworkPolicyPort[] => [{ protocol: p.protocol, port: p.port, ...(p.endPort ? { endPort: p.endPort } : {}) }];

export interface PolicyInput {
  namespace: string;
  agent: string;
  network: SandboxNetwork;
  /** Addresses each allowed host resolved to (hosts missing here open nothing). */
  resolved: Record<string, string[]>;
  dns: { namespace: string; podLabels: Record<string, string> };
  /** Another set of Pods than the Agent's per-call sandboxes (mode session: a Profile's session sandboxes). */
  target?: PolicyTarget;
}

/** The name and Pod labels of a NetworkPolicy that is not an Agent's per-call one. */
export interface PolicyTarget { name: string; podLabels: Record<string, string> }

function egressRules(input: PolicyInput): V1NetworkPolicyEgressRule[] {
  if (input.network.egress !== 'allowlist') return [];
  const rules: V1NetworkPolicyEgressRule[] = [];
  let hosts = false;
  for (const raw of input.network.allow) {
    const entry = parseAllowEntry(raw);
    if (typeof entry === 'string') continue; // refused at compile time; never widens the policy here
    if (entry.kind === 'cidr') {
      const except = exceptsFor(entry.cidr);
      rules.push({ to: [{ ipBlock: { cidr: entry.cidr, ...(except.length ? { except } : {}) } }], ...(entry.ports ? { ports: toPorts(entry.ports) } : {}) });
      continue;
    }
    hosts = true;
    const addresses = (input.resolved[entry.host] ?? []).filter((ip) => isIP(ip) && !isPrivateAddress(ip));
    if (addresses.length) {
      rules.push({ to: addresses.map((ip) => ({ ipBlock: { cidr: `${ip}/${isIP(ip) === 6 ? 128 : 32}` } })), ports: toPorts(entry.ports) });
    }
  }
  if (hosts) {
    rules.push({
      to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': input.dns.namespace } }, podSelector: { matchLabels: input.dns.podLabels } }],
      ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }],
    });
  }
  return rules;
}

/** The Agent's sandbox NetworkPolicy (or the {@link PolicyTarget}'s). */
export function sandboxNetworkPolicy(input: PolicyInput): V1NetworkPolicy {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: input.target?.name ?? networkPolicyName(input.agent),
      namespace: input.namespace,
      labels: { [agentKey]: labelValue(input.agent), 'app.kubernetes.io/managed-by': 'hermes' },
      annotations: { [agentKey]: input.agent },
    },
    spec: {
      podSelector: { matchLabels: input.target?.podLabels ?? { [componentLabel]: sandboxComponent, [agentKey]: labelValue(input.agent) } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: egressRules(input),
    },
  };
}
