// `hermes gateway` and `hermes worker` on a port another process holds: one line naming the
// address and the settings that choose it, exit 2 — the worker before it takes any turn. Both
// died with Node's EADDRINUSE stack trace.
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHermes } from '../../support/cli.js';
import { freePort } from '../../support/ports.js';
import { createTestDatabase, serverUrls, type TestDatabase } from '../../support/services.js';

let db: TestDatabase;
let holder: Server;
let port: number;

beforeAll(async () => {
  db = await createTestDatabase();
  port = await freePort();
  holder = createServer();
  await new Promise<void>((r) => holder.listen(port, '127.0.0.1', r));
});
afterAll(async () => {
  await new Promise((r) => holder.close(r));
  await db.drop();
});

describe('a port that is taken', () => {
  it('is said in one line with the address and the settings, exit 2', async () => {
    const env = { DATABASE_URL: db.url, REDIS_URL: serverUrls().redisUrl, HERMES_HOST: '127.0.0.1', HERMES_SECRETS_SOURCE: 'local', HERMES_CONNECTORS: 'off', HERMES_KANBAN_DISPATCH: 'off' };
    const [gateway, worker] = await Promise.all([
      runHermes(['gateway'], { ...env, HERMES_PORT: String(port) }),
      runHermes(['worker'], { ...env, HERMES_WORKER_PORT: String(port) }),
    ]);
    for (const r of [gateway, worker]) {
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toBe(`Cannot listen on 127.0.0.1:${port}: the port is taken by another process. Choose another with HERMES_HOST and HERMES_PORT (gateway), HERMES_WORKER_PORT (worker) or HERMES_METRICS_PORT, or the command's --port.`);
    }
  });

  it('stops the worker before it consumes any turn', async () => {
    // It bound its probe port after starting to consume turns: a turn claimed in between was left
    // to recovery (settled unknown) when the process then died on the port.
    const r = await runHermes(['worker'], { DATABASE_URL: db.url, REDIS_URL: serverUrls().redisUrl, HERMES_HOST: '127.0.0.1', HERMES_SECRETS_SOURCE: 'local', HERMES_WORKER_PORT: String(port), HERMES_LOG_LEVEL: 'info' });
    expect(r.code).toBe(2);
    expect(r.stdout).not.toContain('"msg":"Started worker"');
    expect(r.stderr).toContain(`Cannot listen on 127.0.0.1:${port}`);
  });
});
