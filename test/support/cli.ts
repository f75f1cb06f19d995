// The `hermes` binary as a user runs it, for CLI tests: its exit code and what it printed.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const hermesBin = fileURLToPath(new URL('../../bin/hermes.js', import.meta.url));

export interface CliRun { code: number | null; stdout: string; stderr: string }

/** Runs `hermes <args>` with only PATH, HERMES_LOG_LEVEL=warn and `env` in its environment. */
export function runHermes(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const child = spawn(process.execPath, [hermesBin, ...args], { env: { PATH: process.env.PATH, HERMES_LOG_LEVEL: 'warn', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}
