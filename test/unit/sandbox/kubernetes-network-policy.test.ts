// network-policy.ts: entries parsed, default deny, private ranges excepted unless named, host
// entries open only public addresses they resolved to, plus DNS.
import { describe, expect, it } from 'vitest';
import { parseAllowEntry, sandboxNetworkPolicy } from '../../../services/sandbox/index.js';
import { exceptsFor, isPrivateAddress } from '../../../services/sandbox/kubernetes/network-policy.js';

const dns = { namespace: 'kube-system', podLabels: { 'k8s-app': 'kube-dns' } };
const policy = (allow: string[], resolved: Record<string, string[]> = {}, egress: 'none' | 'allowlist' = 'allowlist') =>
  sandboxNetworkPolicy({ namespace: 'ns', agent: 'coder', network: { egress, allow }, resolved, dns });

describe('allow entries', () => {
  it('parses CIDR, CIDR:PORT, [v6]:PORT, HOST:PORT, ranges and udp', () => {
    expect(parseAllowEntry('203.0.113.0/24')).toEqual({ kind: 'cidr', cidr: '203.0.113.0/24' });
    expect(parseAllowEntry('203.0.113.9/24:443')).toEqual({ kind: 'cidr', cidr: '203.0.113.0/24', ports: { port: 443, protocol: 'TCP' } });
    expect(parseAllowEntry('[2001:db8::1/48]:8000-8100/udp')).toEqual({ kind: 'cidr', cidr: '2001:db8::/48', ports: { port: 8000, endPort: 8100, protocol: 'UDP' } });
    expect(parseAllowEntry('PyPI.org:443')).toEqual({ kind: 'host', host: 'pypi.org', ports: { port: 443, protocol: 'TCP' } });
    expect(parseAllowEntry('1.2.3.4:80')).toEqual({ kind: 'cidr', cidr: '1.2.3.4/32', ports: { port: 80, protocol: 'TCP' } });
  });

  it('refuses anything else with a message', () => {
    for (const bad of ['pypi.org', 'x:0', 'x:70000', '10.0.0.0/33:1', 'a b:1', 'host:443-80', '[pypi.org]:443', '*.example.com:443']) {
      expect(typeof parseAllowEntry(bad)).toBe('string');
    }
  });
});

describe('sandbox NetworkPolicy', () => {
  it('denies all ingress and egress of the Agent\'s sandbox Pods with egress none (the allow list is ignored)', () => {
    const p = policy(['0.0.0.0/0'], {}, 'none');
    expect(p.spec).toEqual({
      podSelector: { matchLabels: { 'hermes.dev/component': 'sandbox', 'hermes.dev/agent': 'coder' } },
      policyTypes: ['Ingress', 'Egress'], ingress: [], egress: [],
    });
    expect(p.metadata?.name).toBe('hermes-sandbox-coder');
  });

  it('never opens private or link-local ranges through a broad entry', () => {
    expect(exceptsFor('0.0.0.0/0')).toEqual(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '169.254.0.0/16']);
    expect(exceptsFor('::/0')).toEqual(['fc00::/7', 'fe80::/10']);
    expect(exceptsFor('160.0.0.0/3')).toEqual(['172.16.0.0/12', '169.254.0.0/16']); // 160.0.0.0-191.255.255.255
    expect(exceptsFor('169.0.0.0/8')).toEqual(['169.254.0.0/16']);
    const p = policy(['0.0.0.0/0:443', '[::/0]:443']);
    expect(p.spec?.egress?.[0]?.to?.[0]?.ipBlock?.except).toContain('169.254.0.0/16');
    expect(p.spec?.egress?.[1]?.to?.[0]?.ipBlock?.except).toEqual(['fc00::/7', 'fe80::/10']);
  });

  it('opens a private range named explicitly, with no except', () => {
    const p = policy(['10.0.0.0/8:5432', '169.254.169.254/32:80']);
    expect(p.spec?.egress).toEqual([
      { to: [{ ipBlock: { cidr: '10.0.0.0/8' } }], ports: [{ protocol: 'TCP', port: 5432 }] },
      { to: [{ ipBlock: { cidr: '169.254.169.254/32' } }], ports: [{ protocol: 'TCP', port: 80 }] },
    ]);
  });

  it('opens a host\'s public addresses on its port, never its private ones, and DNS to the cluster DNS only', () => {
    const p = policy(['pypi.org:443', 'internal.example:80'], { 'pypi.org': ['151.101.0.223', '2a04:4e42::223', '10.0.0.5'], 'internal.example': ['169.254.169.254'] });
    expect(p.spec?.egress).toEqual([
      { to: [{ ipBlock: { cidr: '151.101.0.223/32' } }, { ipBlock: { cidr: '2a04:4e42::223/128' } }], ports: [{ protocol: 'TCP', port: 443 }] },
      {
        to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } }, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
        ports: [{ protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 53 }],
      },
    ]);
    expect(isPrivateAddress('127.0.0.1')).toBe(true);
    expect(isPrivateAddress('fd00:ec2::254')).toBe(true);
  });

  it('skips entries it cannot parse instead of widening the policy', () => {
    expect(policy(['not an entry', '*:*']).spec?.egress).toEqual([]);
  });
});
