// bindSession: the session's settings reach every request; foreground commands are capped at
// 600 s (SPEC), background ones may run up to a day (that is what they are for).
import { describe, expect, it } from 'vitest';
import { bindSession, type ExecRequest, type ExecResult, type RunningCommand, type Sandbox } from '../../../services/sandbox/index.js';

function recorder(): Sandbox & { seen: ExecRequest[] } {
  const seen: ExecRequest[] = [];
  const result: ExecResult = { exitCode: 0, output: '', truncated: false, status: 'ok', durationMs: 0 };
  return {
    backend: 'bubblewrap', seen,
    exec: (req) => { seen.push(req); return Promise.resolve(result); },
    start: (req): Promise<RunningCommand> => { seen.push(req); return Promise.resolve({ output: () => ({ text: '', truncated: false }), done: Promise.resolve(result), kill: () => undefined }); },
    close: () => Promise.resolve(),
  };
}

const binding = {
  session: { namespace: 'team', agent: 'coder', sessionId: 's-1', admissionId: 'a-1' },
  workspace: { size: '1Gi', ttlSeconds: 60 },
  network: { egress: 'none' as const, allow: [] },
  timeoutSeconds: 180,
  maxOutputChars: 1_000,
  pod: { image: 'busybox' },
};

describe('bindSession', () => {
  it('fills in the session, its limits and Pod settings; a foreground command is capped at 600 s', async () => {
    const box = recorder();
    const s = bindSession(box, binding);
    const signal = new AbortController().signal;
    await s.run({ command: 'true' }, signal);
    await s.run({ command: 'sleep 1000', timeoutMs: 3_600_000, cwd: '/workspace/src', env: { A: '1' }, stdin: 'x', maxOutputChars: 5 }, signal);
    expect(box.seen[0]).toEqual({ session: binding.session, workspace: binding.workspace, network: binding.network, pod: binding.pod, command: 'true', timeoutMs: 180_000, maxOutputChars: 1_000, signal });
    expect(box.seen[1]).toMatchObject({ timeoutMs: 600_000, cwd: '/workspace/src', env: { A: '1' }, stdin: 'x', maxOutputChars: 5 });
  });

  it('lets a background command run past 600 s, up to a day', async () => {
    const box = recorder();
    const s = bindSession(box, binding);
    await s.start({ command: 'make build', timeoutMs: 7_200_000 }, new AbortController().signal);
    await s.start({ command: 'forever', timeoutMs: 10 * 86_400_000 }, new AbortController().signal);
    expect(box.seen.map((r) => r.timeoutMs)).toEqual([7_200_000, 86_400_000]);
  });
});
