// Runs a command to completion with its input on stdin, and returns its exit code and output (a
// non-zero code is returned, not thrown). Shared by the helm/promrules and kubectl helpers.
import { execFile } from 'node:child_process';

export interface CommandResult { code: number; stdout: string; stderr: string }

export interface CommandOptions {
  cwd?: string;
  /** Written to stdin, which is then closed. @defaultValue '' */
  input?: string;
  timeoutMs: number;
}

export function runCommand(cmd: string, args: string[], opts: CommandOptions): Promise<CommandResult> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { cwd: opts.cwd, timeout: opts.timeoutMs, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
    // A command that exits without reading its stdin (promrules refusing a file at once) makes this
    // write fail with EPIPE. Unhandled, that error fails the whole test run although the command's
    // exit code and output, which are the result, arrive intact.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(opts.input ?? '');
  });
}
