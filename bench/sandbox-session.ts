// `make bench-sandbox-session` (node --import tsx bench/sandbox-session.ts): mode session (agent-sandbox),
// warm vs cold session start. For N new sessions, one at a time, the time from a session's first
// command (`true`, through the worker's session backend as the terminal tool calls it:
// bindSession → sessionKubernetesSandbox) to its result, (a) claimed from a warm pool of one that
// is refilled before every sample, (b) from a pool of none (claim → Sandbox → Pod → Ready). Next
// to raw baselines measured in the same run on the same apiserver and test kubelet: a bare Pod
// create → Running and Ready (+ a bare `pods/exec true`), and a bare `pods/exec true` into a
// running Pod. The backend's own claim metric (hermes_sandbox_claim_seconds) splits each first
// command into the wait for a Ready claim and the rest (pods/exec under the wrapper shell).
// BENCH_SCALE scales N (default 20). BENCH_POLL_MS sets the backend's `pollMs` option (default
// the install's 1 000; tests pass 200; not an install setting): the backend waits for its claim
// by a watch on it and re-reads it only every min(pollMs, 250) ms without events.
import { randomUUID } from 'node:crypto';
import {
  bindSession, DEFAULT_IDLE_SECONDS, kubernetesSandbox, sessionClaimName, sessionKubernetesSandbox,
  type ExecResult, type Sandbox, type SandboxSession, type SessionSandboxMetrics,
} from '../services/sandbox/index.js';
import { waitFor } from '../test/support/kube/index.js';
import { summarize, type Summary } from './percentiles.js';
import { watchClaims, type ClaimsWatch } from './session-claims-watch.js';
import { rawPodSample, type RawSample } from './session-raw.js';
import { benchSettings, COLD_PROFILE, sessionSandbox, startSessionPlane, WARM_PROFILE, type SessionPlane } from './session-plane.js';

const progress = (s: string) => process.stderr.write(`[bench:sandbox-session] ${s}\n`);
const N = Math.max(3, Math.round(20 * Number(process.env.BENCH_SCALE ?? '1')));
const pollMs = Number(process.env.BENCH_POLL_MS ?? benchSettings.pollMs);
if (!Number.isInteger(pollMs) || pollMs < 1) throw new Error(`BENCH_POLL_MS must be a whole number of milliseconds ≥ 1, not "${process.env.BENCH_POLL_MS}"`);
const settings = { ...benchSettings, pollMs };

/** Without events the backend re-reads its claim every min(pollMs, 250) ms (agent-sandbox/backend.ts). */
const CLAIM_REREAD_MS = Math.min(settings.pollMs, 250);

type Launch = Parameters<SessionSandboxMetrics['claimSeconds']>[0];

/** The backend's claim metric, kept per call instead of in a histogram. */
class ClaimWaits implements SessionSandboxMetrics {
  private last: { launch: Launch; ms: number } | undefined;
  claimSeconds(launch: Launch, seconds: number): void { this.last = { launch, ms: seconds * 1_000 }; }
  poolClaim(): void { /* the launch says it */ }
  take(): { launch: Launch; ms: number } {
    const l = this.last;
    if (!l) throw new Error('the session backend reported no claim wait for this call');
    this.last = undefined;
    return l;
  }
}

interface SessionSample {
  /** The session's first command, call to result. */
  firstMs: number;
  /** Of which: until the claim's sandbox was Ready (hermes_sandbox_claim_seconds). */
  claimMs: number;
  /** agent-sandbox's part of it, seen by a watch: the claim's creation → Ready with a Sandbox. */
  controllerMs: number;
  /** The session's second command (its sandbox already running). */
  nextMs: number;
}

function ok(r: ExecResult, what: string): void {
  if (r.status !== 'ok' || r.exitCode !== 0) throw new Error(`${what} failed: ${r.status} ${r.reason ?? `exit ${r.exitCode}`}`);
}

interface Probes {
  sandbox: Sandbox;
  waits: ClaimWaits;
  claims: ClaimsWatch;
}

/** A new session of `profile`: its first command and its second, timed; its sandbox stays up. */
async function sessionSample(p: Probes, namespace: string, profile: string, want: Launch): Promise<SessionSample> {
  const sandboxSettings = sessionSandbox(0); // the Profile's workspace, network and timeout (the pool size plays no part here)
  const id: SandboxSession = { namespace, agent: 'bench', sessionId: randomUUID(), admissionId: randomUUID() };
  const session = bindSession(p.sandbox, {
    session: id,
    workspace: sandboxSettings.workspace, network: sandboxSettings.network, timeoutSeconds: sandboxSettings.timeoutSeconds, maxOutputChars: 10_000,
    pod: { session: { profile, idleSeconds: DEFAULT_IDLE_SECONDS } },
  });
  const signal = new AbortController().signal;
  const t0 = performance.now();
  ok(await session.run({ command: 'true' }, signal), `a ${profile} session's first command`);
  const firstMs = performance.now() - t0;
  const claim = p.waits.take();
  if (claim.launch !== want) throw new Error(`a ${profile} session's sandbox was expected to start ${want}, it started ${claim.launch}`);
  const t1 = performance.now();
  ok(await session.run({ command: 'true' }, signal), `a ${profile} session's second command`);
  const nextMs = performance.now() - t1;
  p.waits.take();
  const controllerMs = await waitFor(() => p.claims.readyAfterMs(sessionClaimName(id)), { what: 'the watch to see the claim Ready', timeoutMs: 10_000, intervalMs: 10 });
  return { firstMs, claimMs: claim.ms, controllerMs, nextMs };
}

interface Results {
  raw: RawSample[];
  warm: SessionSample[];
  cold: SessionSample[];
  /** From a warm session's first command until the pool had a Ready warm sandbox again. */
  refillMs: number[];
  firstOfNamespace: { warm: number; cold: number };
}

async function measure(plane: SessionPlane, p: Probes): Promise<Results> {
  const kc = plane.cp.kubeConfig();
  const ns = plane.namespace;
  progress('warm-up: one session of each Profile (each Profile\'s first writes its NetworkPolicy), one raw Pod…');
  const firstWarm = await sessionSample(p, ns, WARM_PROFILE, 'warm');
  await plane.quiet();
  const firstCold = await sessionSample(p, ns, COLD_PROFILE, 'cold');
  await plane.quiet();
  await rawPodSample(kc, ns, 'raw-warmup');
  const r: Results = { raw: [], warm: [], cold: [], refillMs: [], firstOfNamespace: { warm: firstWarm.firstMs, cold: firstCold.firstMs } };
  for (let i = 0; i < N; i++) {
    await plane.quiet();
    r.raw.push(await rawPodSample(kc, ns, `raw-${i}`));
    await plane.quiet();
    const t0 = performance.now();
    r.warm.push(await sessionSample(p, ns, WARM_PROFILE, 'warm'));
    await plane.quiet();
    r.refillMs.push(performance.now() - t0);
    r.cold.push(await sessionSample(p, ns, COLD_PROFILE, 'cold'));
    const f = (n: number) => n.toFixed(0);
    progress(`${i + 1}/${N}: raw Pod→Ready+exec ${f(r.raw[i]!.podReadyExecMs)} ms, warm ${f(r.warm[i]!.firstMs)} ms, cold ${f(r.cold[i]!.firstMs)} ms`);
  }
  return r;
}

function print(r: Results): void {
  const row = (label: string, ms: number[]): Summary => {
    const s = summarize(ms);
    const f = (n: number) => n.toFixed(0).padStart(7);
    console.log(`  ${label.padEnd(62)}${f(s.p50)}${f(s.p95)}${f(s.mean)}`);
    return s;
  };
  console.log(`\nmode session (agent-sandbox), a new session's first command \`true\`: ${N} sessions each, one at a time,`);
  console.log('same apiserver, test kubelet, agent-sandbox controller; every sample starts with the warm pool full and no Pod starting;');
  console.log(`the backend waits for its claim by a watch (pollMs ${settings.pollMs}: a re-read every ${CLAIM_REREAD_MS} ms without events)`);
  console.log(`  ${''.padEnd(62)}${'p50'.padStart(7)}${'p95'.padStart(7)}${'mean'.padStart(7)}  (ms)`);
  const podReady = row('raw Pod create → Running and Ready', r.raw.map((x) => x.podReadyMs));
  const podExec = row('raw Pod create → Running and Ready → pods/exec true', r.raw.map((x) => x.podReadyExecMs));
  const exec = row('raw pods/exec true into a running Pod', r.raw.map((x) => x.execMs));
  const warm = row('warm: first command of a new session', r.warm.map((x) => x.firstMs));
  const warmClaim = row('  of which the claim until Ready (launch=warm)', r.warm.map((x) => x.claimMs));
  const warmController = row('    agent-sandbox: claim created → Ready (watch)', r.warm.map((x) => x.controllerMs));
  row('  of which the rest (pods/exec under the wrapper shell)', r.warm.map((x) => x.firstMs - x.claimMs));
  const cold = row('cold: first command of a new session', r.cold.map((x) => x.firstMs));
  const coldClaim = row('  of which the claim until Ready (launch=cold)', r.cold.map((x) => x.claimMs));
  const coldController = row('    agent-sandbox: claim created → Ready (watch)', r.cold.map((x) => x.controllerMs));
  row('  of which the rest (pods/exec under the wrapper shell)', r.cold.map((x) => x.firstMs - x.claimMs));
  const next = row('second command of a session (launch=running)', [...r.warm, ...r.cold].map((x) => x.nextMs));
  row('warm pool Ready again, from the claiming command\'s start', r.refillMs);
  console.log(`  first session of the namespace (NetworkPolicy written): warm ${r.firstOfNamespace.warm.toFixed(0)} ms, cold ${r.firstOfNamespace.cold.toFixed(0)} ms`);
  const x = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
  console.log('\nRatios (this run\'s own baselines)');
  console.log(`  warm / cold: ${x(warm.p50, cold.p50)} at p50, ${x(warm.p95, cold.p95)} at p95 (cold − warm = ${Math.round(cold.p50 - warm.p50) || 0} ms at p50)`);
  console.log(`  agent-sandbox alone (watch), warm / cold: ${x(warmController.p50, coldController.p50)} at p50; the backend's wait beyond it`
    + ` (its own requests: create, watch events, Sandbox read and lease): warm +${(warmClaim.p50 - warmController.p50).toFixed(0)} ms, cold +${(coldClaim.p50 - coldController.p50).toFixed(0)} ms at p50`);
  console.log(`  cold vs raw Pod → Ready → exec: ${x(cold.p50, podExec.p50)} at p50 (+${(cold.p50 - podExec.p50).toFixed(0)} ms); raw Pod → Ready alone ${podReady.p50.toFixed(0)} ms`);
  console.log(`  warm vs raw pods/exec: ${x(warm.p50, exec.p50)} at p50 (+${(warm.p50 - exec.p50).toFixed(0)} ms)`);
  console.log(`  second command vs raw pods/exec: ${x(next.p50, exec.p50)} at p50 (+${(next.p50 - exec.p50).toFixed(0)} ms: the claim's last-used stamp and the wrapper)`);
}

async function main(): Promise<void> {
  const plane = await startSessionPlane(progress);
  const kubeConfig = plane.cp.kubeConfig();
  const waits = new ClaimWaits();
  // As the worker builds it (services/worker/sandboxes.ts), with the install's default settings.
  const perCall = kubernetesSandbox({ kubeConfig, settings });
  const sandbox = sessionKubernetesSandbox({ kubeConfig, settings, perCall, metrics: waits });
  let claims: ClaimsWatch | undefined;
  try {
    claims = await watchClaims(kubeConfig, plane.namespace);
    print(await measure(plane, { sandbox, waits, claims }));
  } finally {
    claims?.stop();
    await sandbox.close();
    await perCall.close();
    await plane.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
