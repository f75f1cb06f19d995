// A SessionSandbox for tool tests: the real bubblewrap backend, bound to a fresh session whose
// workspace folder lives under a temporary root. Fixtures (`put`, `mkdir`, `symlink`) are written
// on the host into that folder, owned by the sandbox uid as the backend's own files are.
import { randomUUID } from 'node:crypto';
import { chmod, lchown, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import {
  bindSession, bubblewrapSandbox, ensureWorkspaceDir, type RunningCommand, type SandboxBackendName, type SandboxSession, type SessionCommand, type SessionSandbox,
} from '../../services/sandbox/index.js';

/** The host uid the bubblewrap backend runs sandboxes as when the tests run as root. */
const SANDBOX_UID = 65534;

export interface TestSandboxOptions {
  /** @defaultValue 180 */
  timeoutSeconds?: number;
  /** The backend the tools are told they talk to (some limits depend on it); commands always run in bubblewrap. @defaultValue bubblewrap */
  backend?: SandboxBackendName;
  /** @defaultValue 100 000 */
  maxOutputChars?: number;
  /** A backend that cannot run anything (bwrap missing): every call is `degraded`. */
  unavailable?: boolean;
}

export interface TestSessionSandbox extends SessionSandbox {
  /** The host folder mounted at /workspace. */
  readonly root: string;
  readonly session: SandboxSession;
  /** Commands started so far (run and start). */
  readonly calls: SessionCommand[];
  /** Test fixtures in the workspace (`rel` under /workspace), parents created, owned by the sandbox uid. */
  put(rel: string, content: string | Buffer): Promise<void>;
  mkdir(rel: string): Promise<void>;
  symlink(target: string, rel: string): Promise<void>;
  cleanup(): Promise<void>;
}

const owner = process.getuid?.() === 0 ? { uid: SANDBOX_UID, gid: SANDBOX_UID } : undefined;

/** Creates `rel`'s parents under `root`, giving each new one to the sandbox uid. */
async function parents(root: string, rel: string): Promise<string> {
  const abs = join(root, rel);
  const first = await mkdir(dirname(abs), { recursive: true });
  if (first && owner) {
    const parts = relative(root, dirname(abs)).split(sep);
    const from = relative(root, first).split(sep).length;
    for (let i = from; i <= parts.length; i++) await lchown(join(root, ...parts.slice(0, i)), owner.uid, owner.gid);
  }
  return abs;
}

/** A session sandbox on the bubblewrap backend over a new temporary workspace root. */
export async function testSessionSandbox(opts: TestSandboxOptions = {}): Promise<TestSessionSandbox> {
  const workspaces = await mkdtemp(join(tmpdir(), 'hermes-ws-'));
  await chmod(workspaces, 0o711); // the sandbox uid must pass through to its folder
  const sandbox = bubblewrapSandbox({ workspacesDir: workspaces, ...(opts.unavailable ? { bwrap: '/nonexistent/bwrap' } : {}) });
  const session: SandboxSession = { namespace: 'test', agent: 'tools', sessionId: randomUUID(), admissionId: randomUUID() };
  const root = ensureWorkspaceDir(workspaces, session, owner);
  const bound = bindSession(sandbox, { session, workspace: { size: '1Gi', ttlSeconds: 3_600 }, network: { egress: 'none', allow: [] }, timeoutSeconds: opts.timeoutSeconds ?? 180, maxOutputChars: opts.maxOutputChars ?? 100_000 });
  const calls: SessionCommand[] = [];
  const own = async (abs: string) => { if (owner) await lchown(abs, owner.uid, owner.gid); };
  return {
    backend: opts.backend ?? 'bubblewrap',
    timeoutSeconds: bound.timeoutSeconds,
    root,
    session,
    calls,
    run(cmd, signal) {
      calls.push(cmd);
      return bound.run(cmd, signal);
    },
    start(cmd, signal): Promise<RunningCommand> {
      calls.push(cmd);
      return bound.start(cmd, signal);
    },
    open(cmd, signal) {
      calls.push(cmd);
      return bound.open!(cmd, signal);
    },
    async put(rel, content) {
      const abs = await parents(root, rel);
      await writeFile(abs, content);
      await own(abs);
    },
    async mkdir(rel) {
      const abs = await parents(root, rel);
      await mkdir(abs, { recursive: true });
      await own(abs);
    },
    async symlink(target, rel) {
      const abs = await parents(root, rel);
      await symlink(target, abs);
      await own(abs);
    },
    async cleanup() {
      await sandbox.close();
      await rm(workspaces, { recursive: true, force: true });
    },
  };
}
