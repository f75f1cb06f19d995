// Profile `spec.sandbox` and `spec.approvals`: the rules `hermes dev` applies (the CRD's CEL does
// the same on a cluster, tested in crds-apiserver.test.ts), the defaults, and what compile emits.
import { describe, expect, it } from 'vitest';
import { compileSandbox, durationSeconds, profileSchema } from '../../../operator/index.js';

const profile = (spec: Record<string, unknown>) => profileSchema.safeParse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: 'p' }, spec: { model: { provider: 'openai', model: 'm' }, ...spec } });
const spec = (s: Record<string, unknown>) => {
  const r = profile(s);
  if (!r.success) throw new Error(r.error.message);
  return r.data.spec;
};

describe('Profile spec.sandbox', () => {
  it.each([
    [{ backend: 'bubblewrap', mode: 'session' }, 'mode session keeps a sandbox per session in the cluster'],
    [{ warmPool: { size: 1 } }, 'warmPool only applies to mode session'],
    [{ idleTimeoutSeconds: 600 }, 'idleTimeoutSeconds only applies to mode session'],
    [{ backend: 'bubblewrap', runtimeClassName: 'gvisor' }, 'are Pod settings'],
    [{ network: { egress: 'allowlist' } }, 'egress allowlist needs at least one allow entry'],
    [{ network: { allow: ['1.2.3.4:443'] } }, 'egress allowlist needs at least one allow entry'],
    [{ timeoutSeconds: 601 }, '"maximum": 600'],
    [{ network: { egress: 'allowlist', allow: ['https://api.github.com'] } }, 'must be a CIDR, an address or CIDR with :port, or host:port'],
    [{ workspace: { ttl: '1 week' } }, 'must be a duration such as 30m, 168h or 7d'],
  ])('refuses %j with the same message as the CRD', (sandbox, message) => {
    const r = profile({ sandbox });
    expect(r.success).toBe(false);
    expect(r.error?.message).toContain(message);
  });

  it.each(['203.0.113.0/24', '203.0.113.7:443', '10.0.0.0/8:5432', 'api.github.com:443', '[2001:db8::1]:443', '2001:db8::/32', 'pypi.org:8000-8100', '203.0.113.9:53/udp'])('accepts the egress entry %s, which the kubernetes backend can open', (entry) => {
    expect(profile({ sandbox: { network: { egress: 'allowlist', allow: [entry] } } }).success).toBe(true);
    expect(compileSandbox(spec({ sandbox: { network: { egress: 'allowlist', allow: [entry] } } })).sandbox?.network.allow).toEqual([entry]);
  });

  it('refuses at compile an entry of the right shape that opens nothing, saying which', () => {
    expect(() => compileSandbox(spec({ sandbox: { network: { egress: 'allowlist', allow: ['api.github.com:443', '10.0.0.0/33:443', '1.2.3.4:70000'] } } })))
      .toThrow(/spec\.sandbox\.network\.allow\[1\]: .*10\.0\.0\.0\/33/);
  });

  it('compiles nothing for a Profile without sandbox tools, the defaults for one with them', () => {
    expect(compileSandbox(spec({}))).toEqual({});
    expect(compileSandbox(spec({ toolsets: ['terminal'] }))).toEqual({
      sandbox: { mode: 'call', timeoutSeconds: 180, workspace: { size: '5Gi', ttlSeconds: 604_800 }, network: { egress: 'none', allow: [] } },
      approvals: { mode: 'manual', deny: [], allow: [], timeoutSeconds: 60 },
    });
  });

  it('compiles every field as written, the workspace ttl in seconds', () => {
    const out = compileSandbox(spec({
      sandbox: { backend: 'kubernetes', mode: 'session', image: 'ghcr.io/acme/sandbox:1', namespace: 'sandboxes', resources: { limits: { cpu: '2', memory: '2Gi' } }, timeoutSeconds: 300, runtimeClassName: 'gvisor', workspace: { size: '1Gi', ttl: '1d12h' }, network: { egress: 'allowlist', allow: ['api.github.com:443'] }, warmPool: { size: 3 }, idleTimeoutSeconds: 900 },
      approvals: { mode: 'off', deny: ['git push*'] },
    }));
    expect(out).toEqual({
      sandbox: { backend: 'kubernetes', mode: 'session', image: 'ghcr.io/acme/sandbox:1', namespace: 'sandboxes', resources: { limits: { cpu: '2', memory: '2Gi' } }, timeoutSeconds: 300, runtimeClassName: 'gvisor', workspace: { size: '1Gi', ttlSeconds: 129_600 }, network: { egress: 'allowlist', allow: ['api.github.com:443'] }, warmPool: { size: 3 }, idleTimeoutSeconds: 900 },
      approvals: { mode: 'off', deny: ['git push*'], allow: [], timeoutSeconds: 60 },
    });
  });

  it('reads durations in s, m, h and d', () => {
    expect(durationSeconds('90s')).toBe(90);
    expect(durationSeconds('1h30m')).toBe(5_400);
    expect(durationSeconds('7d')).toBe(604_800);
  });
});
