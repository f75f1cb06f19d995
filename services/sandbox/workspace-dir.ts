// The host folder behind a session's /workspace for the bubblewrap backend:
// <root>/<namespace>/<agent>/<sessionId>, created 0700 and owned by the sandbox uid on first use.
// Every name is checked first, so a hostile or broken id can never point outside the root.
import { chmodSync, chownSync, lstatSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { SandboxSession } from './types.js';

/** A Kubernetes object name (DNS-1123 subdomain): no slash, never `.` or `..`. */
const KUBE_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
/** A session id: a UUID in practice; letters, digits, `-` and `_` at most. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** Whose files: the uid/gid that owns the folder (undefined: leave it to the worker's own uid). */
export interface WorkspaceOwner {
  uid: number;
  gid: number;
}

/** Why these session names cannot name a folder, or undefined when they can. */
export function invalidSessionNames(s: SandboxSession): string | undefined {
  if (!KUBE_NAME.test(s.namespace)) return `namespace ${JSON.stringify(s.namespace)} is not a Kubernetes name`;
  if (!KUBE_NAME.test(s.agent)) return `agent ${JSON.stringify(s.agent)} is not a Kubernetes name`;
  if (!SESSION_ID.test(s.sessionId)) return `session id ${JSON.stringify(s.sessionId)} is not an id (letters, digits, - and _)`;
  return undefined;
}

/** The host folder of a session's workspace (no file-system access). Throws on invalid names. */
export function workspaceDir(root: string, s: SandboxSession): string {
  const why = invalidSessionNames(s);
  if (why) throw new Error(`Invalid sandbox session: ${why}`);
  return join(resolve(root), s.namespace, s.agent, s.sessionId);
}

/**
 * The first folder on the way to `dir` that `owner` cannot enter, or undefined. bubblewrap runs
 * as the sandbox uid and opens the bind source by path, so every ancestor must let it pass (x).
 */
export function unreachableAncestor(dir: string, owner: WorkspaceOwner): string | undefined {
  for (let d = dirname(resolve(dir)); ; d = dirname(d)) {
    const st = statSync(d);
    const bits = st.uid === owner.uid ? 0o100 : st.gid === owner.gid ? 0o010 : 0o001;
    if (!(st.mode & bits)) return d;
    if (d === '/') return undefined;
  }
}

/**
 * Creates the session's folder when missing (parents 0711: passable, not listable; the folder
 * 0700, owned by `owner`) and returns its path. Refuses a folder that is a symlink.
 */
export function ensureWorkspaceDir(root: string, s: SandboxSession, owner?: WorkspaceOwner): string {
  const dir = workspaceDir(root, s);
  mkdirSync(dirname(dir), { recursive: true, mode: 0o711 });
  try {
    mkdirSync(dir, { mode: 0o700 });
    if (owner) chownSync(dir, owner.uid, owner.gid);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`Workspace ${dir} is not a folder (a symlink or a file took its place)`);
  if (owner && st.uid !== owner.uid) chownSync(dir, owner.uid, owner.gid);
  // The sandbox owns the folder and may have opened it up (chmod 777 /workspace): close it again.
  if ((st.mode & 0o777) !== 0o700) chmodSync(dir, 0o700);
  return dir;
}
