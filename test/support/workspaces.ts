// A temporary workspaces root with the real bubblewrap backend on it, for tests that run turns
// with sandbox tools. The root is 0711: the sandbox user reaches its own session folder in it
// without listing the others (as HERMES_WORKSPACES_DIR is in a deployment).
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bubblewrapSandbox, type Sandbox } from '../../services/sandbox/index.js';
import { openSandboxBackends, type SandboxBackends } from '../../services/worker/sandboxes.js';
import type { TestRuntime } from './system.js';

export interface BubblewrapWorkspaces {
  /** The host folder the sessions' workspaces live in. */
  readonly dir: string;
  /** A bubblewrap backend on `dir`. */
  readonly sandbox: Sandbox;
  /** A worker's sandbox backends with `sandbox` as its bubblewrap (the metrics are the runtime's). */
  backends(rt: TestRuntime): SandboxBackends;
  remove(): Promise<void>;
}

export async function bubblewrapWorkspaces(name: string): Promise<BubblewrapWorkspaces> {
  const dir = await mkdtemp(join(tmpdir(), `hermes-${name}-ws-`));
  await chmod(dir, 0o711);
  const sandbox = bubblewrapSandbox({ workspacesDir: dir });
  return {
    dir, sandbox,
    backends: (rt) => openSandboxBackends(rt.config, rt.log, { backends: { bubblewrap: sandbox }, metrics: rt.metrics }),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
