// A request the backend refuses before touching the cluster: every field may come from a
// possibly hostile model, so the Pod never sees a path outside /workspace or a malformed variable.
import { posix } from 'node:path';
import { WORKSPACE_PATH, type ExecRequest } from '../types.js';

/** Largest stdin passed (a ConfigMap holds at most 1 MiB). */
export const MAX_STDIN_BYTES = 1_000_000;

/** Why the request cannot run as given (a message the model can act on), or undefined. */
export function requestProblem(req: ExecRequest): string | undefined {
  if (!req.command.trim()) return 'The command is empty.';
  if (req.command.includes('\0')) return 'The command contains a NUL character.';
  if (req.cwd !== undefined) {
    const normal = posix.normalize(req.cwd);
    if (!posix.isAbsolute(req.cwd) || (normal !== WORKSPACE_PATH && !normal.startsWith(`${WORKSPACE_PATH}/`)) || normal !== req.cwd.replace(/\/+$/, '')) {
      return `The working directory ${JSON.stringify(req.cwd)} is not an absolute path under ${WORKSPACE_PATH}; use ${WORKSPACE_PATH} or a folder inside it.`;
    }
  }
  for (const [name, value] of Object.entries(req.env ?? {})) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return `${JSON.stringify(name)} is not an environment variable name.`;
    if (value.includes('\0')) return `The value of ${name} contains a NUL character.`;
  }
  if (req.stdin !== undefined && Buffer.byteLength(req.stdin) > MAX_STDIN_BYTES) {
    return `The input of ${Buffer.byteLength(req.stdin)} bytes is more than the ${MAX_STDIN_BYTES} bytes the kubernetes sandbox passes to a command; send it in parts.`;
  }
  return undefined;
}
