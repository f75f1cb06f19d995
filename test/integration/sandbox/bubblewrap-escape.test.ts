// Escape attempts against the bubblewrap backend (issue 10, point 8), all contained: host files
// outside the workspace, writes outside it, the network and the host's loopback services, the
// worker's environment and model key, the uid and capabilities, a fork bomb, an output flood and
// a command that sleeps past its timeout.
import { createServer, type Server } from 'node:net';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bubblewrapSandbox } from '../../../services/sandbox/index.js';
import { leftovers, request, session, tempRoot, waitFor } from './bubblewrap-helpers.js';

const root = tempRoot();
const sandbox = bubblewrapSandbox({ workspacesDir: root.dir });
const shared = bubblewrapSandbox({ workspacesDir: root.dir, allowlist: 'host' });
const checkout = process.cwd();
let hostTmp: string;
let listener: Server;
let port: number;
let connections = 0;

beforeAll(async () => {
  hostTmp = mkdtempSync(join(tmpdir(), 'hermes-host-secret-'));
  writeFileSync(join(hostTmp, 'secret.txt'), 'host-tmp-secret');
  listener = createServer((s) => { connections++; s.end('hello from the host\n'); });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  port = (listener.address() as { port: number }).port;
});
afterAll(async () => {
  await sandbox.close();
  await shared.close();
  listener.close();
  rmSync(hostTmp, { recursive: true, force: true });
  root.remove();
});

const run = (command: string, over: Parameters<typeof request>[0] extends infer R ? Partial<R> : never = {}) => sandbox.exec(request({ command, ...over }));

describe('bubblewrap escapes: files', () => {
  it('cannot read host secrets, home folders, /var, host /tmp or the checkout', async () => {
    const targets = ['/etc/shadow', '/etc/gshadow', '/etc/ssh', '/root', '/home', '/var', join(hostTmp, 'secret.txt'),
      join(checkout, 'package.json'), join(checkout, 'services'), root.dir];
    for (const path of targets) {
      const r = await run(`cat ${path} 2>&1 || ls ${path} 2>&1`);
      expect(r.output, path).toMatch(/No such file or directory/);
      expect(r.exitCode, path).not.toBe(0);
    }
    const tmp = await run('ls -A /tmp; ls -A /; ls /etc');
    expect(tmp.output).not.toMatch(/hermes-host-secret/);
    expect(tmp.output).not.toMatch(/\b(shadow|gshadow|ssh|sudoers)\b/);
    // and the same host file is there when read on the host: the test would see a leak
    expect(existsSync(join(hostTmp, 'secret.txt'))).toBe(true);
  });

  it('sees a synthetic /etc with only the sandbox user', async () => {
    const r = await run('cat /etc/passwd; id -un');
    expect(r.output).toMatch(/^sandbox:x:1000:1000:/m);
    expect(r.output).not.toMatch(/^(postgres|_apt|messagebus):/m);
    expect(r.output.trim().endsWith('sandbox')).toBe(true);
  });

  it('cannot write outside /workspace (root, /usr, /etc read-only; /tmp private and gone after the call)', async () => {
    const r = await run('for p in /x /usr/x /etc/x /bin/x /proc/x; do touch $p 2>&1; done; echo private > /tmp/mine; cat /tmp/mine');
    expect(r.output.match(/Read-only file system|Permission denied|No such file/g)?.length).toBe(5);
    expect(r.output).toMatch(/private\n$/);
    expect((await run('cat /tmp/mine')).exitCode).not.toBe(0);
    expect(existsSync('/tmp/mine')).toBe(false);
  });

  it('cannot see the host\'s processes nor the worker\'s /proc', async () => {
    const r = await run(`ls /proc | grep -c '^[0-9]'; cat /proc/${process.pid}/environ 2>&1; cat /proc/1/cmdline | tr '\\0' ' '`);
    const [count] = r.output.split('\n');
    expect(Number(count)).toBeLessThanOrEqual(6);
    expect(r.output).toMatch(/No such file/);
    expect(r.output).toMatch(/bwrap/);
  });
});

describe('bubblewrap escapes: identity and environment', () => {
  it('runs as a non-root uid with no capabilities, no new privileges, even though the worker is root', async () => {
    const r = await run('grep -E "^(Uid|Gid|CapEff|CapPrm|CapBnd|NoNewPrivs):" /proc/self/status; unshare -U true 2>&1 || echo no-userns');
    expect(r.output).toMatch(/^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
    expect(r.output).toMatch(/^CapEff:\s+0+$/m);
    expect(r.output).toMatch(/^CapPrm:\s+0+$/m);
    expect(r.output).toMatch(/^CapBnd:\s+0+$/m);
    expect(r.output).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(r.output).toMatch(/no-userns/);
    // On the host its files belong to the unprivileged sandbox uid, not to root.
    const s = session();
    await run('touch /workspace/owned', { session: s });
    const { statSync } = await import('node:fs');
    const { workspaceDir } = await import('../../../services/sandbox/index.js');
    if (process.getuid?.() === 0) expect(statSync(join(workspaceDir(root.dir, s), 'owned')).uid).toBe(65534);
  });

  it('sees none of the worker\'s environment: no model key, only PATH/HOME/LANG and what the call sets', async () => {
    process.env.OPENAI_API_KEY = 'sk-test-fake-key-must-not-leak';
    try {
      const r = await run('env; cat /proc/1/environ | tr "\\0" "\\n"', { env: { GIVEN: 'yes' } });
      expect(r.output).not.toMatch(/sk-test-fake-key|OPENAI_API_KEY|DATABASE_URL|REDIS_URL|HERMES_TEST_RUN|VITEST/);
      const names = r.output.split('\n').filter((l) => /^[A-Z_]+=/.test(l)).map((l) => l.split('=')[0]);
      expect(new Set(names)).toEqual(new Set(['PATH', 'HOME', 'LANG', 'USER', 'HOSTNAME', 'PWD', 'SHLVL', 'OLDPWD', 'GIVEN']));
    } finally {
      delete process.env.OPENAI_API_KEY;
    }
  });
});

describe('bubblewrap escapes: network', () => {
  const probe = (host: string, p: number) => `(exec 3<>/dev/tcp/${host}/${p} && cat <&3) 2>&1 || echo BLOCKED`;

  it('cannot reach a service on the host\'s loopback, nor the outside, with egress none', async () => {
    const before = connections;
    const r = await run(`bash -c '${probe('127.0.0.1', port)}; ${probe('1.1.1.1', 53)}; cat /proc/net/dev | grep -c :'`);
    expect(r.output).not.toMatch(/hello from the host/);
    expect(r.output.match(/BLOCKED/g)?.length).toBe(2);
    expect(r.output.trim().split('\n').at(-1)).toBe('1'); // only lo
    expect(connections).toBe(before);
  });

  it('egress: allowlist is refused by default (bwrap cannot filter destinations)', async () => {
    const r = await run('echo ran', { network: { egress: 'allowlist', allow: ['10.0.0.1/32:443'] } });
    expect(r).toMatchObject({ status: 'degraded', exitCode: -1 });
    expect(r.reason).toMatch(/cannot enforce.*HERMES_BWRAP_ALLOWLIST=host/);
  });

  it('allowlist: host shares the host network — the same probe then reaches the listener', async () => {
    const before = connections;
    const r = await shared.exec(request({ command: `bash -c '${probe('127.0.0.1', port)}'; cat /etc/resolv.conf >/dev/null && echo has-resolv`, network: { egress: 'allowlist', allow: ['0.0.0.0/0:443'] } }));
    expect(r.output).toMatch(/hello from the host/);
    expect(r.output).toMatch(/has-resolv/);
    expect(connections).toBe(before + 1);
  });
});

describe('bubblewrap escapes: resources', () => {
  it('a fork bomb is contained by the process limit and ends with the call', async () => {
    const r = await run('n=0; while [ $n -lt 2000 ]; do sleep 60 & n=$((n+1)); done; echo started $n', { timeoutMs: 15_000 });
    expect(r.output).toMatch(/Cannot fork|Resource temporarily unavailable/);
    expect(r.output).not.toMatch(/started 2000/);
    const bomb = await run('b() { b | b & }; b; sleep 2', { timeoutMs: 1_000 });
    expect(['ok', 'timeout']).toContain(bomb.status);
    expect(leftovers()).toEqual([]);
    expect((await run('echo still fine')).output).toBe('still fine\n');
  });

  it('a fork bomb in one session holds at most its own process limit; other sessions still fork', async () => {
    const bomb = await sandbox.start(request({ session: session(), command: String.raw`bash -c 'for i in $(seq 2000); do sleep 60 & done; wait'`, timeoutMs: 60_000 }));
    await waitFor('the bomb to reach its process limit', () => leftovers().length >= 250, 30_000);
    // 256 inside the sandbox (its init, bash, the sleeps) plus bubblewrap outside it
    expect(leftovers().length).toBeLessThanOrEqual(257);
    const other = await run('for i in 1 2 3 4 5 6 7 8; do sleep 0.1 & done; wait; echo other-ok', { session: session() });
    expect(other.output).toBe('other-ok\n');
    bomb.kill();
    expect((await bomb.done).status).toBe('interrupted');
    expect(leftovers()).toEqual([]);
  });

  it('an output flood is capped and memory stays bounded', async () => {
    const rss = process.memoryUsage().rss;
    const r = await run('yes | head -c 300000000; echo; echo END', { maxOutputChars: 50_000, timeoutMs: 60_000 });
    expect(r.status).toBe('ok');
    expect(r.truncated).toBe(true);
    expect(r.output.length).toBeLessThan(50_100);
    expect(r.output).toMatch(/END\n$/);
    expect(process.memoryUsage().rss - rss).toBeLessThan(150 * 1024 * 1024);
  });

  it('a command sleeping past its timeout is killed and answers timeout', async () => {
    const r = await run('sleep 600', { timeoutMs: 300 });
    expect(r).toMatchObject({ status: 'timeout', exitCode: 143 });
    expect(leftovers()).toEqual([]);
  });

  it('a file larger than the file-size limit cannot be written', async () => {
    const small = bubblewrapSandbox({ workspacesDir: root.dir, limits: { fileBytes: 1024 * 1024 } });
    const r = await small.exec(request({ command: 'head -c 5000000 /dev/zero > /workspace/big; echo rc=$?; stat -c %s /workspace/big' }));
    expect(r.output).toMatch(/File size limit exceeded\nrc=153/);
    expect(r.output).toMatch(/^1048576$/m);
  });
});
