// hermes_sandbox_calls_total{backend,status}: every call through the worker's sandbox backends is
// counted by its result, and a call the backend could not run is `degraded` — what the
// HermesSandboxStartFailures alert watches. Real backends: bubblewrap runs the command; the
// kubernetes backend of a worker without cluster credentials cannot start anything.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger, createMetrics, loadConfig, type CompiledAgent } from '../../../services/core/index.js';
import { bubblewrapSandbox } from '../../../services/sandbox/index.js';
import { openSandboxBackends } from '../../../services/worker/sandboxes.js';
import { execRequest, testSession } from '../../support/sandbox-request.js';

const dirs: string[] = [];
afterAll(async () => { for (const d of dirs) await rm(d, { recursive: true, force: true }); });

const agentWith = (backend: 'bubblewrap' | 'kubernetes') => ({ sandbox: { backend } }) as unknown as CompiledAgent;

describe('sandbox call metrics', () => {
  it('counts each call by backend and status; a backend that cannot start the command counts as degraded', async () => {
    const metrics = createMetrics('worker');
    const workspaces = await mkdtemp(join(tmpdir(), 'sbx-metrics-'));
    dirs.push(workspaces);
    await chmod(workspaces, 0o711); // passable by the sandbox's uid
    const config = loadConfig({}, { DATABASE_URL: 'postgresql://unused@127.0.0.1:1/x', REDIS_URL: 'redis://127.0.0.1:1' });
    const backends = openSandboxBackends(config, createLogger('test', 'silent'), { metrics, backends: { bubblewrap: bubblewrapSandbox({ workspacesDir: workspaces }) } });
    const session = testSession('default');

    const ok = await backends.for(agentWith('bubblewrap'))!.exec(execRequest(session, 'echo hi'));
    expect(ok.status).toBe('ok');
    const running = await backends.for(agentWith('bubblewrap'))!.start(execRequest(session, 'exit 3'));
    expect((await running.done).exitCode).toBe(3);
    const refused = await backends.for(agentWith('kubernetes'))!.exec(execRequest(session, 'echo hi'));
    expect(refused.status).toBe('degraded');

    const text = await metrics.registry.metrics();
    expect(text).toMatch(/hermes_sandbox_calls_total\{backend="bubblewrap",status="ok"[^}]*\} 2\n/);
    expect(text).toMatch(/hermes_sandbox_calls_total\{backend="kubernetes",status="degraded"[^}]*\} 1\n/);
    await backends.close();
  });
});
