import { randomUUID } from 'node:crypto';
import type { ExecRequest, SandboxSession } from '../../services/sandbox/index.js';

/** A session of agent `agent` in `namespace` with fresh ids. */
export const testSession = (namespace: string, agent = 'coder', sessionId = randomUUID()): SandboxSession => ({
  namespace, agent, sessionId, admissionId: randomUUID(),
});

/** An ExecRequest with test defaults (no egress, 30 s, 10 000 chars). */
export function execRequest(session: SandboxSession, command: string, over: Partial<ExecRequest> = {}): ExecRequest {
  return {
    session: { ...session, admissionId: randomUUID() },
    workspace: { size: '1Gi', ttlSeconds: 3_600 },
    command,
    timeoutMs: 30_000,
    signal: new AbortController().signal,
    network: { egress: 'none', allow: [] },
    maxOutputChars: 10_000,
    ...over,
  };
}
