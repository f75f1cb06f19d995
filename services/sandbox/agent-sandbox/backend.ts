// The kubernetes Sandbox in mode session (Profile `spec.sandbox.mode: session`): one sandbox per
// active session, claimed from the Profile's agent-sandbox warm pool (claims.ts), commands run in
// its Pod by `pods/exec` (pod-exec.ts) with the working directory kept across calls. Requests
// without `pod.session` — and every request while agent-sandbox is not installed — go to the
// per-call backend given as `perCall`. Every failure of the cluster is a `degraded` result.
import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { CappedOutput, RollingOutput } from '../output.js';
import type { ExecRequest, ExecResult, RunningCommand, Sandbox } from '../types.js';
import { apiFailure } from '../kubernetes/failures.js';
import type { PodOutcome } from '../kubernetes/pod-run.js';
import { INTERRUPTED_EXIT_CODE } from '../kubernetes/pod-run.js';
import { Prerequisites, type Resolver } from '../kubernetes/prerequisites.js';
import { requestProblem } from '../kubernetes/request-check.js';
import { defaultKubernetesSandboxSettings, type KubernetesSandboxSettings } from '../kubernetes/settings.js';
import { AgentSandboxMissing, Claims, type Launch, type SessionSandboxRef } from './claims.js';
import { podExec } from './pod-exec.js';
import { sessionPodLabels, sessionPolicyName, sessionPoolName } from './resources.js';

/** What the backend reports (the worker registers them: hermes_sandbox_claim_seconds, hermes_sandbox_pool_claims_total). */
export interface SessionSandboxMetrics {
  /** A claim's wait until its sandbox was Ready, by launch (warm, cold, resumed, running). */
  claimSeconds(launch: Launch, seconds: number): void;
  /** A new session's claim: `hit` when it adopted a warm sandbox, `miss` when agent-sandbox cold-started one. */
  poolClaim(result: 'hit' | 'miss'): void;
}

export interface SessionSandboxOptions {
  kubeConfig: KubeConfig;
  settings?: Partial<KubernetesSandboxSettings>;
  /** Where requests without a session pool go, and all requests while agent-sandbox is missing. */
  perCall: Sandbox;
  metrics?: SessionSandboxMetrics;
  resolver?: Resolver;
  /** Told once per namespace that agent-sandbox is not installed (the worker logs it). */
  onMissing?: (namespace: string) => void;
}

type Output = CappedOutput | RollingOutput;

/** How long calls go per call after agent-sandbox was found missing, before it is looked for again. */
const MISSING_RECHECK_MS = 60_000;

/** A call; `done` is undefined when agent-sandbox turned out to be missing (the caller then runs it per call). */
interface Call { running: Promise<boolean>; done: Promise<ExecResult | undefined>; abort: AbortController }

class SessionKubernetesSandbox implements Sandbox {
  readonly backend = 'kubernetes' as const;
  private readonly settings: KubernetesSandboxSettings;
  private readonly claims: Claims;
  private readonly prerequisites: Prerequisites;
  private readonly calls = new Set<Call>();
  /** Namespaces where agent-sandbox was missing, and when we learnt it (looked at again after MISSING_RECHECK_MS). */
  private readonly missing = new Map<string, number>();

  constructor(private readonly o: SessionSandboxOptions) {
    this.settings = { ...defaultKubernetesSandboxSettings, ...o.settings };
    this.claims = new Claims(o.kubeConfig, { apiTimeoutMs: this.settings.apiTimeoutMs, startTimeoutMs: this.settings.startTimeoutMs, pollMs: Math.min(this.settings.pollMs, 250) });
    this.prerequisites = new Prerequisites(o.kubeConfig, this.settings, o.resolver);
  }

  private perCall(req: ExecRequest): boolean {
    const namespace = req.pod?.namespace ?? req.session.namespace;
    const since = this.missing.get(namespace);
    if (since !== undefined && Date.now() - since > MISSING_RECHECK_MS) this.missing.delete(namespace);
    return !req.pod?.session || this.missing.has(namespace);
  }

  private withoutSession(req: ExecRequest): ExecRequest {
    const { session: _session, ...pod } = req.pod ?? {};
    return { ...req, pod };
  }

  exec(req: ExecRequest): Promise<ExecResult> {
    if (this.perCall(req)) return this.o.perCall.exec(this.withoutSession(req));
    return this.call(req, new CappedOutput(req.maxOutputChars)).done.then((r) => r ?? this.o.perCall.exec(this.withoutSession(req)));
  }

  async start(req: ExecRequest): Promise<RunningCommand> {
    if (this.perCall(req)) return this.o.perCall.start(this.withoutSession(req));
    const output = new RollingOutput(req.maxOutputChars);
    const call = this.call(req, output);
    if (!(await Promise.race([call.running, call.done.then(() => false)]))) {
      const r = await call.done;
      if (r === undefined) return this.o.perCall.start(this.withoutSession(req));
    }
    return {
      output: () => ({ text: output.text(), truncated: output.truncated }),
      done: call.done.then((r) => r ?? { exitCode: -1, output: '', truncated: false, status: 'degraded', reason: 'agent-sandbox vanished', durationMs: 0 }),
      kill: () => call.abort.abort(),
    };
  }

  async close(): Promise<void> {
    const calls = [...this.calls];
    for (const c of calls) c.abort.abort();
    await Promise.all(calls.map((c) => c.done));
  }

  private call(req: ExecRequest, output: Output): Call {
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    if (req.signal.aborted) abort.abort();
    else req.signal.addEventListener('abort', onAbort, { once: true });
    let setRunning!: (v: boolean) => void;
    const running = new Promise<boolean>((resolve) => { setRunning = resolve; });
    const t0 = Date.now();
    const finish = (o: PodOutcome): ExecResult => ({
      exitCode: o.exitCode, output: output.text(), truncated: output.truncated, status: o.status,
      ...(o.reason ? { reason: o.reason } : {}), durationMs: Date.now() - t0,
    });
    const call: Call = { running, abort, done: Promise.resolve(undefined) };
    call.done = this.run(req, output, abort.signal, () => setRunning(true))
      .then((o) => (o === 'missing' ? undefined : finish(o)),
        (err: unknown) => finish({ status: 'degraded', exitCode: -1, reason: apiFailure(err, 'preparing the session sandbox').reason }))
      .finally(() => { setRunning(false); req.signal.removeEventListener('abort', onAbort); this.calls.delete(call); });
    this.calls.add(call);
    return call;
  }

  /** The session's Ready sandbox (ServiceAccount and NetworkPolicy first), or `missing` when agent-sandbox is not installed. */
  private async acquire(req: ExecRequest, session: { profile: string; idleSeconds: number }, namespace: string, signal: AbortSignal): Promise<SessionSandboxRef | 'missing'> {
    await this.prerequisites.serviceAccount(namespace);
    // Deny-all comes with the template; this opens the allowlist (or stays empty) for the Profile's sandboxes.
    await this.prerequisites.networkPolicy(namespace, req.session.agent, req.network, { name: sessionPolicyName(session.profile), podLabels: sessionPodLabels(session.profile) });
    try {
      const ref = await this.claims.acquire({ session: req.session, namespace, idleSeconds: session.idleSeconds, ttlSeconds: req.workspace.ttlSeconds, pool: sessionPoolName(session.profile), signal });
      this.o.metrics?.claimSeconds(ref.launch, ref.waitedMs / 1_000);
      if (ref.launch === 'warm' || ref.launch === 'cold') this.o.metrics?.poolClaim(ref.launch === 'warm' ? 'hit' : 'miss');
      return ref;
    } catch (err) {
      if (!(err instanceof AgentSandboxMissing)) throw err;
      if (!this.missing.has(namespace)) this.o.onMissing?.(namespace);
      this.missing.set(namespace, Date.now());
      return 'missing';
    }
  }

  private async run(req: ExecRequest, output: Output, signal: AbortSignal, onRunning: () => void): Promise<PodOutcome | 'missing'> {
    const problem = requestProblem(req);
    if (problem) return { status: 'degraded', exitCode: -1, reason: `${problem} The command did not run.` };
    const session = req.pod!.session!;
    const namespace = req.pod?.namespace ?? req.session.namespace;
    let ref: SessionSandboxRef | 'missing';
    try {
      ref = await this.acquire(req, session, namespace, signal);
    } catch (err) {
      if (signal.aborted) return { status: 'interrupted', exitCode: INTERRUPTED_EXIT_CODE, reason: 'Stopped before the session sandbox was ready.' };
      throw err;
    }
    if (ref === 'missing') return ref;
    // A long command keeps the sandbox from idling out under it.
    const claim = { session: req.session, namespace, idleSeconds: session.idleSeconds, ttlSeconds: req.workspace.ttlSeconds };
    const every = Math.max(1_000, Math.min(60_000, (session.idleSeconds * 1_000) / 3));
    const heartbeat = setInterval(() => { void this.claims.touch(claim).catch(() => undefined); }, every);
    try {
      return await podExec({
        kc: this.o.kubeConfig, namespace, pod: ref.pod, callId: randomBytes(8).toString('hex'), command: req.command,
        ...(req.cwd !== undefined ? { cwd: req.cwd } : {}), ...(req.env ? { env: req.env } : {}), ...(req.stdin !== undefined ? { stdin: req.stdin } : {}),
        timeoutMs: req.timeoutMs, apiTimeoutMs: this.settings.apiTimeoutMs, signal, onOutput: (text) => output.push(text), onRunning,
      });
    } finally {
      clearInterval(heartbeat);
    }
  }
}

/** The kubernetes backend with mode session: per-session agent-sandbox sandboxes, else `perCall`. */
export function sessionKubernetesSandbox(options: SessionSandboxOptions): Sandbox {
  return new SessionKubernetesSandbox(options);
}
