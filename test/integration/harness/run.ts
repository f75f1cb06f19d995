// Runs a harness command (a script, make) to completion and returns its exit code and output.
import { spawn } from 'node:child_process';

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of this test process without the services, ports and run id it was given. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const key of ['DATABASE_URL', 'REDIS_URL', 'HERMES_PG_PORT', 'HERMES_REDIS_PORT', 'HERMES_KUBE_PORT', 'HERMES_ETCD_PORT', 'HERMES_TEST_RUN']) delete env[key];
  return { ...env, ...extra };
}

export async function run(command: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<RunResult> {
  const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode) => resolve(exitCode));
  });
  return { code, stdout, stderr };
}
