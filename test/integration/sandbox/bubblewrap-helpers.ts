// Shared set-up of the bubblewrap backend tests: a fresh workspaces root per file (passable by
// the sandbox uid: mkdtemp makes 0700 folders), requests with sensible defaults, the processes
// under the test process, to show nothing is left running.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { descendants } from '../../../services/sandbox/process-tree.js';
import type { ExecRequest, SandboxSession } from '../../../services/sandbox/index.js';

export function tempRoot(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'hermes-bwrap-test-'));
  chmodSync(dir, 0o711);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export const session = (sessionId: string = randomUUID()): SandboxSession => ({ namespace: 'default', agent: 'coder', sessionId, admissionId: randomUUID() });

export function request(over: Partial<ExecRequest> & { command: string }): ExecRequest {
  return {
    session: session('s-default'),
    workspace: { size: '1Gi', ttlSeconds: 3_600 },
    network: { egress: 'none', allow: [] },
    timeoutMs: 20_000,
    signal: new AbortController().signal,
    maxOutputChars: 10_000,
    ...over,
  };
}

/** Processes this test process has under it (sandboxes left running show here). */
export const leftovers = (): number[] => descendants(process.pid);

/** Polls `check` until it is true or the deadline passes (then fails with `what`). */
export async function waitFor(what: string, check: () => boolean, deadlineMs = 10_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
