// The test plane's etcd and kube-apiserver never outlive the run: they die with the process that
// started them however it ends (here: SIGKILL, which skips every 'exit' handler), and the reaper
// (vitest's global setup and teardown, hack/test.sh's EXIT trap) kills marked processes whose
// owner is dead or whose run is over — never those of a run that is still going. Checked in /proc.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { markedProcesses, pidsWithArg, reapTestPlane, waitFor } from '../../support/kube/index.js';
import { repoRoot } from '../../support/kube/binaries.js';
import { OWNER_ENV, OWNER_FILE, ownerId, processGone, RUN_ENV } from '../../support/kube/reaper.js';

const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

/** `sleep 600` carrying the test-plane mark with the given owner and run. */
function marked(owner: string, run: string): ChildProcess {
  const child = spawn('sleep', ['600'], { stdio: 'ignore', env: { ...process.env, [OWNER_ENV]: owner, [RUN_ENV]: run } });
  started.push(child);
  return child;
}

/** The owner id of a process that has exited. */
async function deadOwner(): Promise<string> {
  const child = spawn('sleep', ['600'], { stdio: 'ignore' });
  const owner = ownerId(child.pid);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return owner;
}

const alive = (child: ChildProcess): boolean => child.pid !== undefined && !processGone(child.pid);

describe('the test plane never outlives its run', () => {
  it('a control plane whose owner is SIGKILLed takes its etcd and kube-apiserver with it', async () => {
    const holder = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'test/integration/kube/fixtures/hold-control-plane.ts')],
      { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    started.push(holder);
    let output = '';
    holder.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    holder.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    const dir = await waitFor(() => /^ready (.+)$/m.exec(output)?.[1], {
      what: 'the holder to start a control plane', timeoutMs: 100_000, bail: () => (holder.exitCode !== null ? new Error(`holder exited: ${output}`) : undefined),
    });
    // Found by their argv, not by the mark, so that this test does not depend on what it checks.
    const pids = [...pidsWithArg(`--data-dir=${dir}/etcd`), ...pidsWithArg(`--cert-dir=${dir}/apiserver-certs`)];
    expect(pids).toHaveLength(2);
    const owner = ownerId(holder.pid);
    const marked = markedProcesses().filter((p) => p.owner === owner).map((p) => basename(p.command)).sort();

    holder.kill('SIGKILL');
    await waitFor(() => pids.every((pid) => processGone(pid)), { what: 'etcd and kube-apiserver to die with their owner', timeoutMs: 15_000 });
    rmSync(dir, { recursive: true, force: true });
    expect(marked).toEqual(['etcd', 'kube-apiserver']); // for the reaper, had they survived
  }, 120_000);

  it('the reaper kills marked processes of dead owners and of a finished run, and spares a live run', async () => {
    const orphan = marked(await deadOwner(), 'some-earlier-run');
    const finished = marked(ownerId(), 'finished-run');
    const live = marked(ownerId(), 'live-run');
    const unmarked = spawn('sleep', ['600'], { stdio: 'ignore' });
    started.push(unmarked);
    const deadDir = mkdtempSync(join(tmpdir(), 'hermes-kube-'));
    writeFileSync(join(deadDir, OWNER_FILE), await deadOwner());
    const liveDir = mkdtempSync(join(tmpdir(), 'hermes-kube-'));
    writeFileSync(join(liveDir, OWNER_FILE), ownerId());
    await waitFor(() => markedProcesses().filter((p) => [orphan.pid, finished.pid, live.pid].includes(p.pid)).length === 3,
      { what: 'the marked processes to show in /proc' });

    const reaped = await reapTestPlane({ run: 'finished-run' });

    expect(reaped.map((p) => p.pid)).toEqual(expect.arrayContaining([orphan.pid, finished.pid]));
    expect(reaped.map((p) => p.pid)).not.toContain(live.pid);
    expect([alive(orphan), alive(finished), alive(live), alive(unmarked)]).toEqual([false, false, true, true]);
    expect([existsSync(deadDir), existsSync(liveDir)]).toEqual([false, true]);
    rmSync(liveDir, { recursive: true, force: true });
  });

  it("hack/test.sh's reaper (reap.ts <run>) kills that run's processes, whoever owns them", async () => {
    const mine = marked(ownerId(), 'run-of-test-sh');
    const other = marked(ownerId(), 'another-run');
    await waitFor(() => markedProcesses().some((p) => p.pid === mine.pid), { what: 'the marked process to show in /proc' });
    const reap = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'test/support/kube/reap.ts'), 'run-of-test-sh'],
      { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    reap.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const code = await new Promise((resolve) => reap.once('exit', resolve));
    expect(code).toBe(0);
    expect(stderr).toContain(`sleep (pid ${mine.pid}`);
    expect([alive(mine), alive(other)]).toEqual([false, true]);
  });
});
