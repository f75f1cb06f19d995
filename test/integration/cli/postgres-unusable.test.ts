// Every command that needs Postgres, as an operator meets it when Postgres is down or refuses the
// database: one line naming the server by host and port (never the URL's password) and exit 2.
// `hermes migrate`, `hermes gateway` and `hermes dev` used to die with a Node stack trace
// (ECONNREFUSED from pg), the database commands with a bare "error: connect ECONNREFUSED …".
import { describe, expect, it } from 'vitest';
import { runHermes } from '../../support/cli.js';
import { freePort } from '../../support/ports.js';
import { serverUrls } from '../../support/services.js';

const commands = [['migrate'], ['gateway'], ['dev', '--port', '0'], ['cron', 'list'], ['agents', 'stop', 'default/x']];

describe('a Postgres the command cannot use', () => {
  it('is said in one line with its host and port and exit 2 when nothing listens there', async () => {
    const port = await freePort();
    const env = { DATABASE_URL: `postgresql://hermes:s3cret@127.0.0.1:${port}/hermes`, REDIS_URL: 'redis://127.0.0.1:1', OPENAI_API_KEY: 'sk-test', HERMES_DEV_MANIFESTS: 'examples/minimal' };
    const results = await Promise.all(commands.map((args) => runHermes(args, env)));
    results.forEach((r, i) => {
      const what = commands[i]!.join(' ');
      expect(r.code, what).toBe(2);
      const lines = r.stderr.trim().split('\n');
      expect(lines.at(-1), what).toBe(`Postgres at 127.0.0.1:${port} (DATABASE_URL) cannot be used: connect ECONNREFUSED 127.0.0.1:${port}`);
      expect(r.stderr, what).not.toMatch(/\n\s+at |s3cret/);
    });
  });

  it('says what the server answered when it refuses the database', async () => {
    const url = new URL(serverUrls().databaseUrl);
    url.pathname = '/hermes_no_such_database';
    const r = await runHermes(['gateway'], { DATABASE_URL: url.toString(), REDIS_URL: serverUrls().redisUrl });
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(`Postgres at ${url.hostname}:${url.port} (DATABASE_URL) cannot be used: database "hermes_no_such_database" does not exist`);
  });
});
