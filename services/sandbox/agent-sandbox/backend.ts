// The kubernetes Sandbox in mode session (Profile `spec.sandbox.mode: session`): one sandbox per
// active session, claimed from the Profile's agent-sandbox warm pool (claims.ts), commands run in
// its Pod by `pods/exec` (pod-exec.ts) with the working directory kept across calls. Requests
// without `pod.session` — and every request while agent-sandbox is not installed — go to the
// per-call backend given as `perCall`. Every failure of the cluster is a `degraded` result.
import { randomBytes } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import { CappedOutput, RollingOutput } from '../output.js';
import { Calls, type Call, type Output } from '../kubernetes/calls.js';
import type { ChannelRequest, ExecRequest, ExecResult, RunningCommand, Sandbox, SandboxChannel } from '../types.js';
import type { ExecChannel } from '../kubernetes/exec-channel.js';
import { sessionChannel } from './session-channel.js';
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
  /** Test seam: awaited between finding a session's Sandbox Ready and leasing it for the command. */
  beforeLease?: (sandbox: string) => Promise<void>;
  /**
   * How long a wait for a claim goes without re-reading it when its watch reports nothing (a watch
   * that broke or was refused). A test sets it past its own timeout to prove the watch wakes the wait.
   * @defaultValue min(settings.pollMs, 250)
   */
  claimRereadMs?: number;
}

/** How long calls go per call after agent-sandbox was found missing, before it is looked for again. */
const MISSING_RECHECK_MS = 60_000;

/** How often a running command stamps its claim and renews its lease: a third of the idle time, 1–60 s. */
const heartbeatMs = (idleSeconds: number): number => Math.max(1_000, Math.min(60_000, (idleSeconds * 1_000) / 3));
/** The lease on a session's Sandbox: three heartbeats, so one or two lost renewals do not let it be suspended. */
const leaseMs = (idleSeconds: number): number => 3 * heartbeatMs(idleSeconds);


class SessionKubernetesSandbox implements Sandbox {
  readonly backend = 'kubernetes' as const;
  private readonly settings: KubernetesSandboxSettings;
  private readonly claims: Claims;
  private readonly prerequisites: Prerequisites;
  private readonly calls = new Calls();
  /** Namespaces where agent-sandbox was missing, and when we learnt it (looked at again after MISSING_RECHECK_MS). */
  private readonly missing = new Map<string, number>();

  constructor(private readonly o: SessionSandboxOptions) {
    this.settings = { ...defaultKubernetesSandboxSettings, ...o.settings };
    this.claims = new Claims(o.kubeConfig, {
      apiTimeoutMs: this.settings.apiTimeoutMs, startTimeoutMs: this.settings.startTimeoutMs, pollMs: o.claimRereadMs ?? Math.min(this.settings.pollMs, 250),
      ...(o.beforeLease ? { beforeLease: o.beforeLease } : {}),
    });
    this.prerequisites = new Prerequisites(o.kubeConfig, this.settings, o.resolver);
  }

  private perCall(req: ExecRequest): boolean {
    const namespace = req.pod?.namespace ?? req.session.namespace;
    const since = this.missing.get(namespace);
    if (since !== undefined && Date.now() - since > MISSING_RECHECK_MS) this.missing.delete(namespace);
    return !req.pod?.session || this.missing.has(namespace);
  }

  private withoutSession<R extends Omit<ExecRequest, 'stdin'>>(req: R): R {
    const { session: _session, ...pod } = req.pod ?? {};
    return { ...req, pod };
  }

  exec(req: ExecRequest): Promise<ExecResult> {
    if (this.perCall(req)) return this.o.perCall.exec(this.withoutSession(req));
    return this.call(req, new CappedOutput(req.maxOutputChars)).done.then((r) => (r === 'missing' ? this.o.perCall.exec(this.withoutSession(req)) : r));
  }

  async start(req: ExecRequest): Promise<RunningCommand> {
    if (this.perCall(req)) return this.o.perCall.start(this.withoutSession(req));
    const output = new RollingOutput(req.maxOutputChars);
    const call = this.call(req, output);
    // Once it runs, or once it has settled (then it never ran; agent-sandbox missing: per call).
    if (!(await Promise.race([call.running, call.done.then(() => false)])) && (await call.done) === 'missing') {
      return this.o.perCall.start(this.withoutSession(req));
    }
    return {
      output: () => ({ text: output.text(), truncated: output.truncated }),
      // A call that ran has an ExecResult: 'missing' is only answered before anything runs.
      done: call.done as Promise<ExecResult>,
      kill: () => call.abort.abort(),
    };
  }

  /** A channel process in the session's sandbox (per call, like exec, without a session pool). */
  async open(req: ChannelRequest): Promise<SandboxChannel> {
    const perCall = (): Promise<SandboxChannel> => this.o.perCall.open
      ? this.o.perCall.open(this.withoutSession(req))
      : Promise.reject(new Error('the per-call sandbox backend has no channel'));
    if (this.perCall(req)) return perCall();
    const output = new CappedOutput(req.maxOutputChars);
    const holder: { channel?: ExecChannel } = {};
    const call = this.calls.start<'missing'>(req, output, 'preparing the session sandbox', (signal, onRunning) => this.run(req, output, signal, onRunning, holder));
    if (!(await Promise.race([call.running, call.done.then(() => false)])) && (await call.done) === 'missing') return perCall();
    return {
      send: (line) => holder.channel?.send(line),
      end: () => holder.channel?.end(),
      output: () => ({ text: output.text(), truncated: output.truncated }),
      done: call.done as Promise<ExecResult>,
      kill: () => call.abort.abort(),
    };
  }

  close(): Promise<void> {
    return this.calls.close();
  }

  /** `done` is `missing` when agent-sandbox turned out not to be installed (the caller then runs it per call). */
  private call(req: ExecRequest, output: Output): Call<ExecResult | 'missing'> {
    return this.calls.start<'missing'>(req, output, 'preparing the session sandbox', (signal, onRunning) => this.run(req, output, signal, onRunning));
  }

  /** The session's Ready sandbox (ServiceAccount and NetworkPolicy first), or `missing` when agent-sandbox is not installed. */
  private async acquire(req: ExecRequest, session: { profile: string; idleSeconds: number }, namespace: string, signal: AbortSignal): Promise<SessionSandboxRef | 'missing'> {
    await this.prerequisites.serviceAccount(namespace);
    // Deny-all comes with the template; this opens the allowlist (or stays empty) for the Profile's sandboxes.
    await this.prerequisites.networkPolicy(namespace, req.session.agent, req.network, { name: sessionPolicyName(session.profile), podLabels: sessionPodLabels(session.profile) });
    try {
      const ref = await this.claims.acquire({
        session: req.session, namespace, idleSeconds: session.idleSeconds, ttlSeconds: req.workspace.ttlSeconds, pool: sessionPoolName(session.profile),
        leaseMs: leaseMs(session.idleSeconds), signal,
      });
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

  private async run(req: ExecRequest | ChannelRequest, output: Output, signal: AbortSignal, onRunning: () => void, holder?: { channel?: ExecChannel }): Promise<PodOutcome | 'missing'> {
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
    // A long command keeps the sandbox from idling out under it: the claim's last use, and the Sandbox's lease.
    const claim = { session: req.session, namespace, idleSeconds: session.idleSeconds, ttlSeconds: req.workspace.ttlSeconds };
    const heartbeat = setInterval(() => {
      void this.claims.touch(claim).catch(() => undefined);
      void this.claims.renew(namespace, ref.sandbox, leaseMs(session.idleSeconds)).catch(() => undefined);
    }, heartbeatMs(session.idleSeconds));
    try {
      if (holder && 'onLine' in req) {
        return await sessionChannel({
          kc: this.o.kubeConfig, namespace, pod: ref.pod, callId: randomBytes(8).toString('hex'), req,
          apiTimeoutMs: this.settings.apiTimeoutMs, signal, output: output as CappedOutput, onRunning, holder,
        });
      }
      return await podExec({
        kc: this.o.kubeConfig, namespace, pod: ref.pod, callId: randomBytes(8).toString('hex'), command: req.command,
        ...(req.cwd !== undefined ? { cwd: req.cwd } : {}), ...(req.env ? { env: req.env } : {}), ...('stdin' in req && req.stdin !== undefined ? { stdin: req.stdin } : {}),
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
