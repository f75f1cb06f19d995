// The Makefile's steps stop the recipe with the real cause when a step fails (they used to go on
// under `set -e`: a failing `$(…)` inside `a && b` does not stop a shell), hack/ports.sh gives each
// checkout its own ports, and `make dev K8S=1`'s control plane says which port is taken.
// Each recipe step is run for real through `make --eval`, with the Makefile's own macros.
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../support/kube/binaries.js';
import { freePort } from '../../support/ports.js';
import { cleanEnv, run } from './run.js';

let scratch: string;
beforeAll(() => { scratch = mkdtempSync(join(tmpdir(), 'hermes-make-')); });
afterAll(() => { rmSync(scratch, { recursive: true, force: true }); });

function script(name: string, body: string): string {
  const path = join(scratch, name);
  writeFileSync(path, `#!/usr/bin/env bash\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** Runs `recipe` as the recipe of a probe target defined next to the Makefile's own. */
const make = (recipe: string, vars: string[] = [], env: NodeJS.ProcessEnv = cleanEnv()) =>
  run('make', ['--no-print-directory', '-C', repoRoot, '--eval', `harness-probe: ; @${recipe}`, 'harness-probe', ...vars], { cwd: scratch, env });

describe('Makefile steps', () => {
  it('a failing hack/services.sh stops the recipe with its message', async () => {
    const failing = script('services-fails.sh', 'echo "[services] error: port 1 (HERMES_PG_PORT) is in use" >&2; exit 1');
    const result = await make('$(SERVICES); echo "recipe went on"', [`SERVICES_SH=${failing}`]);
    expect(result.code).not.toBe(0);
    expect(result.stdout).not.toContain('recipe went on');
    expect(result.stderr).toContain('[services] error: port 1 (HERMES_PG_PORT) is in use');

    const working = script('services-works.sh', 'echo "export HARNESS_PROBE=from-services"');
    const ok = await make('$(SERVICES); echo "recipe went on with $$HARNESS_PROBE"', [`SERVICES_SH=${working}`]);
    expect([ok.code, ok.stdout.trim()]).toEqual([0, 'recipe went on with from-services']);
  });

  it("a failing control plane stops `make dev K8S=1`'s recipe before hermes dev starts", async () => {
    const failing = script('kube-fails.sh', 'echo "[kube] error: port 2 (HERMES_ETCD_PORT) is in use" >&2; exit 1');
    const result = await make('if [ 1 = 1 ]; then $(KUBE_DEV); fi; echo "hermes dev started"', [`KUBE_DEV_SH=${failing}`]);
    expect(result.code).not.toBe(0);
    expect(result.stdout).not.toContain('hermes dev started');
    expect(result.stderr).toContain('[kube] error: port 2 (HERMES_ETCD_PORT) is in use');
  });

  it("`make test`'s kube build fails, saying why, when Go is missing", async () => {
    const path = (process.env.PATH ?? '').split(delimiter).filter((dir) => !/\bgo\b/.test(dir)).join(delimiter);
    const env = cleanEnv({ PATH: path, KUBE_TEST_BIN_DIR: join(scratch, 'no-kube-binaries') });
    const result = await make('$(KUBE_BUILD); echo "tests ran"', [], env);
    expect(result.code).not.toBe(0);
    expect(result.stdout).not.toContain('tests ran');
    expect(result.stderr).toContain('Go is not installed');
  });
});

describe('hack/ports.sh', () => {
  /** What hack/ports.sh documents: a block of five ports in 20000–29999 from the checkout's real path. */
  const expectedBase = (root: string): number =>
    20000 + (Number.parseInt(createHash('sha256').update(realpathSync(root)).digest('hex').slice(0, 8), 16) % 2000) * 5;

  function checkout(name: string): string {
    const root = join(scratch, name);
    mkdirSync(join(root, 'hack'), { recursive: true });
    copyFileSync(join(repoRoot, 'hack/ports.sh'), join(root, 'hack/ports.sh'));
    return root;
  }
  const portsOf = async (root: string, env: Record<string, string> = {}) => {
    const result = await run('bash', [join(root, 'hack/ports.sh')], { cwd: scratch, env: cleanEnv(env) });
    expect(result.code).toBe(0);
    return Object.fromEntries([...result.stdout.matchAll(/^export (\w+)=(\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
  };

  it('gives each checkout its own block of ports, the same every time; the environment overrides', async () => {
    const one = checkout('one');
    let other = checkout('other');
    for (let i = 0; expectedBase(other) === expectedBase(one); i++) other = checkout(`other-${i}`); // 1 in 2000
    const base = expectedBase(one);
    expect(await portsOf(one)).toEqual({ HERMES_PG_PORT: base, HERMES_REDIS_PORT: base + 1, HERMES_KUBE_PORT: base + 2, HERMES_ETCD_PORT: base + 3 });
    expect(await portsOf(one)).toEqual(await portsOf(one));
    expect((await portsOf(other)).HERMES_PG_PORT).toBe(expectedBase(other));
    expect(await portsOf(one, { HERMES_PG_PORT: '55999', HERMES_ETCD_PORT: '52999' }))
      .toEqual({ HERMES_PG_PORT: 55999, HERMES_REDIS_PORT: base + 1, HERMES_KUBE_PORT: base + 2, HERMES_ETCD_PORT: 52999 });
    const bad = await run('bash', [join(one, 'hack/ports.sh')], { cwd: scratch, env: cleanEnv({ HERMES_REDIS_PORT: 'sixty' }) });
    expect([bad.code, bad.stderr.trim()]).toEqual([1, '[ports] error: HERMES_REDIS_PORT=sixty is not a TCP port (1–65534)']);
  });
});

describe('hack/kube/dev-env.sh (make dev K8S=1)', () => {
  let server: Server;
  let taken: number;
  beforeAll(async () => {
    server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    taken = (server.address() as { port: number }).port;
  });
  afterAll(() => { server?.close(); });

  it("says which port is taken when etcd's is, and starts nothing", async () => {
    const env = cleanEnv({ HERMES_ETCD_PORT: String(taken), HERMES_KUBE_PORT: String(await freePort()) });
    const result = await run('bash', [join(repoRoot, 'hack/kube/dev-env.sh'), 'up'], { cwd: scratch, env });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(''); // no `export KUBECONFIG=…` to eval
    // This checkout's own dev plane, if one runs, is named instead of a stranger; both name the port.
    expect(result.stderr).toMatch(new RegExp(`\\[kube\\] error: (port ${taken} \\(HERMES_ETCD_PORT\\) is in use by another process|this checkout's etcd already runs .*:${taken})`));
    expect(result.stderr).not.toMatch(/^\s+at /m); // a message, not a stack trace
  });
});
