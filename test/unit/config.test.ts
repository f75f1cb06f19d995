import { describe, expect, it } from 'vitest';
import { allowedSecretEnv, ConfigError, DEV_SECRET_ENV, loadConfig } from '../../services/core/index.js';

const base = { DATABASE_URL: 'postgresql://u@localhost:5432/db', REDIS_URL: 'redis://localhost:6379' };

describe('config', () => {
  it('applies SPEC defaults and freezes the result', () => {
    const c = loadConfig(base);
    expect(c.HERMES_PORT).toBe(8080);
    expect(c.HERMES_LEASE_TTL_SECONDS).toBe(300);
    expect(c.HERMES_LEASE_RENEW_SECONDS).toBe(60);
    expect(c.HERMES_DELIVERY_MAX_ATTEMPTS).toBe(3);
    expect(c.HERMES_TURN_STALL_SECONDS).toBe(600);
    expect(c.HERMES_TURN_WATCHDOG_POLL_SECONDS).toBe(15);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('fails at start on an unknown HERMES_ setting, naming it', () => {
    expect(() => loadConfig({ ...base, HERMES_PROT: '9000' })).toThrow(/HERMES_PROT: unknown setting/);
  });

  it('accepts the port overrides the README documents (hack/ports.sh) and the test harness marks', () => {
    const ports = { HERMES_PG_PORT: '18340', HERMES_REDIS_PORT: '18341', HERMES_KUBE_PORT: '18342', HERMES_ETCD_PORT: '18343' };
    expect(() => loadConfig({ ...base, ...ports })).not.toThrow();
    expect(() => loadConfig({ ...base, HERMES_KUBE_DEV_DIR: '/tmp/k', HERMES_TEST_RUN: '1-2', HERMES_TEST_RESULTS: '/tmp/r.json', HERMES_TEST_PLANE_OWNER: '1:2' })).not.toThrow();
  });

  it('fails with every invalid value listed, with what was given', () => {
    try {
      loadConfig({ DATABASE_URL: 'not a url', REDIS_URL: base.REDIS_URL, HERMES_PORT: '70000' });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(/DATABASE_URL: .*got "not a url"/);
      expect((err as Error).message).toMatch(/HERMES_PORT: .*got "70000"/);
    }
  });

  it('refuses an interval past Node\'s longest timer, which would fire every millisecond', () => {
    // HERMES_SWEEP_SECONDS=3000000 was taken: setInterval overflowed to 1 ms and the worker swept in a loop.
    for (const [name, value] of [['HERMES_SWEEP_SECONDS', '3000000'], ['HERMES_HEARTBEAT_SECONDS', '2147484'], ['HERMES_CURATOR_INTERVAL_HOURS', '597'],
      ['HERMES_CONNECTOR_REFRESH_SECONDS', '9999999'], ['HERMES_PROGRESS_EDIT_SECONDS', '1e10']] as const) {
      expect(() => loadConfig({ ...base, [name]: value }), name).toThrow(new RegExp(`${name}: at most \\d+ \\(≈ 24.8 days, the longest timer\\)`));
    }
    expect(loadConfig({ ...base, HERMES_SWEEP_SECONDS: '2147483', HERMES_CURATOR_INTERVAL_HOURS: '596' }).HERMES_SWEEP_SECONDS).toBe(2147483);
  });

  it('validates the web tools\' settings at load: CIDR ranges, timeout and byte cap with their defaults', () => {
    const c = loadConfig(base);
    expect(c.HERMES_WEB_ALLOW_CIDRS).toEqual([]);
    expect(c.HERMES_WEB_TIMEOUT_SECONDS).toBe(30);
    expect(c.HERMES_WEB_MAX_BYTES).toBe(10 * 1024 * 1024);
    expect(loadConfig({ ...base, HERMES_WEB_ALLOW_CIDRS: '10.20.0.0/16, fd12::/48' }).HERMES_WEB_ALLOW_CIDRS).toEqual(['10.20.0.0/16', 'fd12::/48']);
    expect(() => loadConfig({ ...base, HERMES_WEB_ALLOW_CIDRS: '10.20.0.0/16,intranet.example' })).toThrow(/HERMES_WEB_ALLOW_CIDRS: "intranet.example" is not a CIDR range/);
    expect(() => loadConfig({ ...base, HERMES_WEB_ALLOW_CIDRS: '10.0.0.0/33' })).toThrow(/"10.0.0.0\/33" is not a CIDR range/);
    expect(() => loadConfig({ ...base, HERMES_WEB_MAX_BYTES: '0' })).toThrow(/HERMES_WEB_MAX_BYTES/);
  });

  it('requires DATABASE_URL and REDIS_URL', () => {
    expect(() => loadConfig({})).toThrow(/DATABASE_URL: .*unset[\s\S]*REDIS_URL: .*unset/);
  });

  it('never lets the connection strings, Hermes settings, Postgres or cluster credentials be allow-listed secret variables', () => {
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'HERMES_QUEUE_PREFIX', 'HERMES_ANYTHING', 'OPENAI_BASE_URL', 'PGPASSWORD', 'KUBECONFIG', 'KUBERNETES_SERVICE_HOST']) {
      expect(() => loadConfig({ ...base, HERMES_SECRETS_ENV_ALLOW: `OPENAI_API_KEY,${name}` }), name).toThrow(new RegExp(`HERMES_SECRETS_ENV_ALLOW: ${name} can never be allowed`));
    }
    const c = loadConfig({ ...base, HERMES_SECRETS_ENV_ALLOW: 'OPENAI_API_KEY, HERMES_DEV_API_KEY MY_TOKEN' });
    expect(c.HERMES_SECRETS_ENV_ALLOW).toEqual(['OPENAI_API_KEY', 'HERMES_DEV_API_KEY', 'MY_TOKEN']);
    const env = { ...base, OPENAI_API_KEY: 'sk', MY_TOKEN: 't', ANTHROPIC_API_KEY: 'ak', PGPASSWORD: 'pw' };
    expect(allowedSecretEnv(c, env)).toEqual({ OPENAI_API_KEY: 'sk', MY_TOKEN: 't' });
    // Unset: the command's default list; "none": nothing, whatever the default.
    expect(allowedSecretEnv(loadConfig(base), env, DEV_SECRET_ENV)).toEqual({ OPENAI_API_KEY: 'sk', ANTHROPIC_API_KEY: 'ak' });
    expect(allowedSecretEnv(loadConfig(base), env)).toEqual({});
    expect(allowedSecretEnv(loadConfig({ ...base, HERMES_SECRETS_ENV_ALLOW: 'none' }), env, DEV_SECRET_ENV)).toEqual({});
  });
});
