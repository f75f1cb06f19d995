// `hermes dev`'s flags as a developer types them: an empty or malformed --port and an empty
// --manifests are refused by flag with exit 1 before anything starts. `--port ""` used to start
// on HERMES_PORT or 8080 as if it had not been given, and `--manifests ""` loaded the working folder.
import { describe, expect, it } from 'vitest';
import { runHermes } from '../../support/cli.js';

describe('hermes dev flags', () => {
  it('refuses an empty or malformed port and an empty folder, naming the flag', async () => {
    const cases = [
      [['--port', ''], "option '-p, --port <port>' argument '' is invalid. expected a port number from 0 to 65535."],
      [['--port', '1e3'], "option '-p, --port <port>' argument '1e3' is invalid. expected a port number from 0 to 65535."],
      [['--port', '-1'], "option '-p, --port <port>' argument '-1' is invalid. expected a port number from 0 to 65535."],
      [['--manifests', ''], "option '-m, --manifests <dir>' argument '' is invalid. expected a folder."],
    ] as const;
    // A database that does not answer: a flag taken would reach it and fail otherwise.
    const results = await Promise.all(cases.map(([args]) => runHermes(['dev', ...args], { DATABASE_URL: 'postgresql://h@127.0.0.1:1/h', REDIS_URL: 'redis://127.0.0.1:1', OPENAI_API_KEY: 'sk-test' })));
    cases.forEach(([args, said], i) => {
      expect(results[i]!.code, args.join(' ')).toBe(1);
      expect(results[i]!.stderr.trim(), args.join(' ')).toBe(`error: ${said}`);
    });
  });
});
