// A request the backend refuses before touching the cluster: every field may come from a
// possibly hostile model, so the Pod never sees a path outside /workspace or a malformed variable.
import { posix } from 'node:path';
import { WORKSPACE_PATH, type ExecRequest } from '../types.js';

/** Largest stdin passed (a ConfigMap holds at most 1 MiB). */
export const MAX_STDIN_BYTES = 1_000_000;
/** Largest command line and environment: one exec argument may not pass 128 KiB (Linux MAX_ARG_STRLEN). */
export const MAX_COMMAND_BYTES = 100_000;
export const MAX_ENV_BYTES = 100_000;

function cwdProblem(cwd: string | undefined): string | undefined {
  if (cwd === undefined) return undefined;
  const normal = posix.normalize(cwd);
  const inside = normal === WORKSPACE_PATH || normal.startsWith(`${WORKSPACE_PATH}/`);
  if (posix.isAbsolute(cwd) && inside && normal === cwd.replace(/\/+$/, '')) return undefined;
  return `The working directory ${JSON.stringify(cwd)} is not an absolute path under ${WORKSPACE_PATH}; use ${WORKSPACE_PATH} or a folder inside it.`;
}

function envProblem(env: Record<string, string>): string | undefined {
  const bytes = Object.entries(env).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v) + 2, 0);
  if (bytes > MAX_ENV_BYTES) return `The environment variables take ${bytes} bytes, more than ${MAX_ENV_BYTES}; pass large values as input or in a file.`;
  for (const [name, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return `${JSON.stringify(name)} is not an environment variable name.`;
    if (value.includes('\0')) return `The value of ${name} contains a NUL character.`;
  }
  return undefined;
}

/** Why the request cannot run as given (a message the model can act on), or undefined. */
export function requestProblem(req: ExecRequest): string | undefined {
  if (!req.command.trim()) return 'The command is empty.';
  if (req.command.includes('\0')) return 'The command contains a NUL character.';
  if (Buffer.byteLength(req.command) > MAX_COMMAND_BYTES) {
    return `The command is ${Buffer.byteLength(req.command)} bytes, more than ${MAX_COMMAND_BYTES}; write a long script to a file first (or pass it as input) and run that.`;
  }
  const where = cwdProblem(req.cwd) ?? envProblem(req.env ?? {});
  if (where) return where;
  if (req.stdin !== undefined && Buffer.byteLength(req.stdin) > MAX_STDIN_BYTES) {
    return `The input of ${Buffer.byteLength(req.stdin)} bytes is more than the ${MAX_STDIN_BYTES} bytes the kubernetes sandbox passes to a command; send it in parts.`;
  }
  return undefined;
}
