// hack/services.sh for real, on loopback and free ports, in throwaway checkouts (the script and
// hack/ports.sh copied into a 0700 temp folder — as root, a folder the `postgres` user cannot
// enter): it starts Postgres and Redis from any folder, reuses its own, refuses another
// checkout's or a stranger's port naming the port and the variable to set, and stops and
// deletes what it started.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../support/kube/binaries.js';
import { freePort } from '../../support/ports.js';
import { cleanEnv, run, type RunResult } from './run.js';

interface Checkout {
  root: string;
  services(command: string, env?: Record<string, string>, cwd?: string): Promise<RunResult>;
}

function makeCheckout(parent: string, name: string): Checkout {
  const root = join(parent, name);
  mkdirSync(join(root, 'hack'), { recursive: true });
  mkdirSync(join(root, 'sub'));
  for (const file of ['services.sh', 'ports.sh']) copyFileSync(join(repoRoot, 'hack', file), join(root, 'hack', file));
  return {
    root,
    services: (command, env = {}, cwd = root) => run('bash', [join(root, 'hack/services.sh'), command], { cwd, env: cleanEnv(env) }),
  };
}

/** The `export NAME=value` lines of `up`, as a map. */
const exportsOf = (stdout: string): Record<string, string> =>
  Object.fromEntries([...stdout.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1], m[2]]));

async function answers(port: number): Promise<boolean> {
  const { connect } = await import('node:net');
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

/** A listener that is no server of ours: it hangs up on every connection. */
async function stranger(): Promise<{ port: number; server: Server }> {
  const server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

describe('hack/services.sh', () => {
  let parent: string;
  let a: Checkout;
  let b: Checkout;
  let ports: Record<string, string>;

  beforeAll(async () => {
    parent = mkdtempSync(join(tmpdir(), 'hermes-harness-')); // mode 0700
    a = makeCheckout(parent, 'a');
    b = makeCheckout(parent, 'b');
    ports = { HERMES_PG_PORT: String(await freePort()), HERMES_REDIS_PORT: String(await freePort()) };
  });
  afterAll(async () => {
    for (const checkout of [a, b]) await checkout?.services('purge', ports);
    if (parent) rmSync(parent, { recursive: true, force: true });
  });

  it('starts Postgres and Redis for a checkout in a 0700 folder, invoked from another folder, and reuses them', async () => {
    expect(statSync(parent).mode & 0o777).toBe(0o700);
    const up = await a.services('up', ports, join(a.root, 'sub'));
    expect(up.stderr).not.toContain('error');
    expect(up.code).toBe(0);
    const env = exportsOf(up.stdout);
    expect(env).toEqual({
      DATABASE_URL: `postgresql://postgres@127.0.0.1:${ports.HERMES_PG_PORT}/hermes`,
      REDIS_URL: `redis://127.0.0.1:${ports.HERMES_REDIS_PORT}`,
    });
    const location = readFileSync(join(a.root, '.hermes/postgres.location'), 'utf8').trim();
    if (process.getuid?.() === 0) expect(location.startsWith(a.root)).toBe(false); // the postgres user cannot enter a.root

    const db = new pg.Client({ connectionString: env.DATABASE_URL });
    await db.connect();
    const { rows } = await db.query<{ db: string; dir: string }>('select current_database() as db, current_setting(\'data_directory\') as dir');
    await db.end();
    expect(rows[0]).toEqual({ db: 'hermes', dir: location });
    const redis = new Redis(env.REDIS_URL!, { maxRetriesPerRequest: 1 });
    expect(await redis.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    redis.disconnect();

    const again = await a.services('up', ports);
    expect([again.code, again.stdout, again.stderr]).toEqual([0, up.stdout, '']);
  });

  it("refuses another checkout's Postgres and Redis on its ports, saying whose they are", async () => {
    const location = readFileSync(join(a.root, '.hermes/postgres.location'), 'utf8').trim();
    const pgClash = await b.services('up', ports);
    expect(pgClash.code).toBe(1);
    expect(pgClash.stdout).toBe('');
    expect(pgClash.stderr).toContain(`port ${ports.HERMES_PG_PORT} (HERMES_PG_PORT) is in use by another process`);
    expect(pgClash.stderr).toContain(`a Postgres with data directory ${location}`);
    expect(pgClash.stderr).toContain('export HERMES_PG_PORT=');

    const redisClash = await b.services('up', { ...ports, DATABASE_URL: 'postgresql://elsewhere/db' });
    expect(redisClash.code).toBe(1);
    expect(redisClash.stderr).toContain(`port ${ports.HERMES_REDIS_PORT} (HERMES_REDIS_PORT) is in use by another process`);
    expect(redisClash.stderr).toContain(`a Redis with dir ${a.root}/.hermes/redis`);
  });

  it('refuses a port held by a process that is no server of ours, naming the port and what to set', async () => {
    const { port, server } = await stranger();
    try {
      const pgTaken = await b.services('up', { ...ports, HERMES_PG_PORT: String(port) });
      expect(pgTaken.code).toBe(1);
      expect(pgTaken.stderr).toMatch(new RegExp(`port ${port} \\(HERMES_PG_PORT\\) is in use by another process.*not this checkout's Postgres`));
      expect(pgTaken.stderr).toContain('export HERMES_PG_PORT=<a free port>');

      const redisTaken = await b.services('up', { ...ports, HERMES_REDIS_PORT: String(port), DATABASE_URL: 'postgresql://elsewhere/db' });
      expect(redisTaken.code).toBe(1);
      expect(redisTaken.stderr).toMatch(new RegExp(`port ${port} \\(HERMES_REDIS_PORT\\) is in use by another process.*not this checkout's Redis`));
    } finally {
      server.close();
    }
    expect((await b.services('status', ports)).stdout).toMatch(/postgres: .*\(not running\)\nredis: .*\(not running\)/);
  });

  it('down stops them whatever ports the environment names now; purge deletes their data', async () => {
    const location = readFileSync(join(a.root, '.hermes/postgres.location'), 'utf8').trim();
    const down = await a.services('down'); // no port variables: hack/ports.sh would name other ports
    expect(down.code).toBe(0);
    expect(down.stderr).toContain('postgres: stopped');
    expect(down.stderr).toContain('redis: stopped');
    expect([await answers(Number(ports.HERMES_PG_PORT)), await answers(Number(ports.HERMES_REDIS_PORT))]).toEqual([false, false]);

    const purge = await a.services('purge');
    expect(purge.code).toBe(0);
    expect([existsSync(location), existsSync(join(a.root, '.hermes/redis'))]).toEqual([false, false]);
  });
});
