// The worker's sandbox backends and the session sandbox a turn's tools get. A backend is built
// on first use (a worker whose agents never run commands needs neither bwrap nor cluster
// credentials); one that cannot be built answers every call `degraded` with the reason, so the
// model and the user learn why nothing ran.
import type { KubeConfig } from '@kubernetes/client-node';
import { Counter, Histogram } from 'prom-client';
import type { Admission, CompiledAgent, Config, Logger, Metrics } from '../core/index.js';
import {
  bindSession, bubblewrapSandboxFromConfig, DEFAULT_IDLE_SECONDS, kubernetesSandbox, kubernetesSandboxSettings, sessionKubernetesSandbox,
  type ChannelRequest, type ExecRequest, type ExecResult, type RunningCommand, type Sandbox, type SandboxBackendName, type SandboxChannel, type SessionSandbox, type SessionSandboxMetrics,
} from '../sandbox/index.js';

export interface SandboxBackends {
  /** The backend a Profile's sandbox block names, or the install's (HERMES_SANDBOX_BACKEND). */
  for(agent: CompiledAgent): Sandbox | undefined;
  close(): Promise<void>;
}

export interface SandboxBackendOptions {
  /** Cluster credentials of the worker (kubernetes backend); called once, on first use. */
  kubeConfig?: () => KubeConfig;
  /** Backends given outright (tests). */
  backends?: Partial<Record<SandboxBackendName, Sandbox>>;
  /** Where the session sandboxes' claim metrics go. */
  metrics?: Metrics;
}

const sessionMetrics = new WeakMap<Metrics, SessionSandboxMetrics>();

/** hermes_sandbox_claim_seconds{launch} and hermes_sandbox_pool_claims_total{result} (mode session), once per registry. */
export function sessionSandboxMetrics(metrics: Metrics): SessionSandboxMetrics {
  let m = sessionMetrics.get(metrics);
  if (!m) {
    const r = [metrics.registry];
    const seconds = new Histogram({ name: 'hermes_sandbox_claim_seconds', help: 'Mode session: wait until the session\'s sandbox was Ready, by launch (warm: claimed from the warm pool; cold: started from the template; resumed: after idling; running: already up).', labelNames: ['launch'], buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: r });
    const claims = new Counter({ name: 'hermes_sandbox_pool_claims_total', help: 'Mode session: new session sandboxes by warm-pool result (hit: a warm sandbox was adopted; miss: the pool was empty, one was cold-started).', labelNames: ['result'], registers: r });
    m = { claimSeconds: (launch, s) => seconds.observe({ launch }, s), poolClaim: (result) => claims.inc({ result }) };
    sessionMetrics.set(metrics, m);
  }
  return m;
}

const callCounters = new WeakMap<Metrics, Counter<'backend' | 'status'>>();

/**
 * hermes_sandbox_calls_total{backend,status}: sandbox calls by result — `degraded` is a call the
 * backend could not run (its Pod or process did not start, the cluster refused or was lost), the
 * sandbox start failures the HermesSandboxStartFailures alert watches. Once per registry.
 */
export function sandboxCallCounter(metrics: Metrics): Counter<'backend' | 'status'> {
  let c = callCounters.get(metrics);
  if (!c) {
    c = new Counter({ name: 'hermes_sandbox_calls_total', help: 'Sandbox calls (terminal and file tools) by backend and result status (ok | timeout | interrupted | degraded: the backend could not run the command).', labelNames: ['backend', 'status'], registers: [metrics.registry] });
    callCounters.set(metrics, c);
  }
  return c;
}

/** `sandbox` counting each call's result status (foreground, background and channel calls alike). */
function counted(sandbox: Sandbox, counter: Counter<'backend' | 'status'>): Sandbox {
  const count = (r: ExecResult): ExecResult => { counter.inc({ backend: sandbox.backend, status: r.status }); return r; };
  const open = sandbox.open?.bind(sandbox);
  return {
    // The line channel (execute_code, stdio MCP servers) stays offered through the count.
    ...(open ? {
      open: async (req: ChannelRequest) => {
        const channel = await open(req);
        void channel.done.then(count, () => undefined);
        return channel;
      },
    } : {}),
    backend: sandbox.backend,
    exec: async (req) => count(await sandbox.exec(req)),
    start: async (req) => {
      const running = await sandbox.start(req);
      void running.done.then(count, () => undefined);
      return running;
    },
    close: () => sandbox.close(),
  };
}

/** A backend that could not be built: every call says why, nothing runs. */
function unavailable(backend: SandboxBackendName, reason: string): Sandbox {
  const result = (): ExecResult => ({ exitCode: -1, output: '', truncated: false, status: 'degraded', reason: `the ${backend} sandbox is unavailable: ${reason}; the command did not run`, durationMs: 0 });
  return {
    backend,
    exec: () => Promise.resolve(result()),
    start: (): Promise<RunningCommand> => Promise.resolve({ output: () => ({ text: '', truncated: false }), done: Promise.resolve(result()), kill: () => undefined }),
    open: (): Promise<SandboxChannel> => Promise.resolve({ send: () => undefined, end: () => undefined, output: () => ({ text: '', truncated: false }), done: Promise.resolve(result()), kill: () => undefined }),
    close: () => Promise.resolve(),
  };
}

export function openSandboxBackends(config: Config, log: Logger, opts: SandboxBackendOptions = {}): SandboxBackends {
  const built = new Map<SandboxBackendName, Sandbox>();
  const build = (name: SandboxBackendName): Sandbox => {
    if (name === 'bubblewrap') return bubblewrapSandboxFromConfig(config);
    if (!opts.kubeConfig) return unavailable(name, 'this worker has no cluster credentials (run it in the cluster, or set the Profile\'s spec.sandbox.backend to bubblewrap)');
    try {
      const kubeConfig = opts.kubeConfig();
      const settings = kubernetesSandboxSettings(config);
      const perCall = kubernetesSandbox({ kubeConfig, settings });
      return sessionKubernetesSandbox({
        kubeConfig, settings, perCall, ...(opts.metrics ? { metrics: sessionSandboxMetrics(opts.metrics) } : {}),
        onMissing: (namespace) => log.warn({ namespace }, 'agent-sandbox is not installed (no SandboxClaim API): mode session runs a Pod per call until it is'),
      });
    } catch (err) {
      log.error({ err }, 'Could not load cluster credentials for the kubernetes sandbox');
      return unavailable(name, `the cluster credentials could not be loaded (${(err as Error).message})`);
    }
  };
  return {
    for(agent) {
      if (!agent.sandbox) return undefined;
      const name = agent.sandbox.backend ?? config.HERMES_SANDBOX_BACKEND;
      let sandbox = built.get(name);
      if (!sandbox) {
        sandbox = opts.backends?.[name] ?? build(name);
        if (opts.metrics) sandbox = counted(sandbox, sandboxCallCounter(opts.metrics));
        built.set(name, sandbox);
      }
      return sandbox;
    },
    async close() {
      await Promise.allSettled([...built.values()].map((s) => s.close()));
    },
  };
}

/** The session's sandbox as the turn's tools see it, or undefined when the agent has none. */
export function sessionSandboxOf(backends: SandboxBackends, agent: CompiledAgent, adm: Admission, maxOutputChars: number): SessionSandbox | undefined {
  const settings = agent.sandbox;
  const sandbox = backends.for(agent);
  if (!settings || !sandbox) return undefined;
  const pod: NonNullable<ExecRequest['pod']> = {
    ...(settings.image ? { image: settings.image } : {}),
    ...(settings.namespace ? { namespace: settings.namespace } : {}),
    ...(settings.resources ? { resources: settings.resources } : {}),
    ...(settings.runtimeClassName ? { runtimeClassName: settings.runtimeClassName } : {}),
    ...(settings.mode === 'session' ? { session: { profile: agent.profile.name, idleSeconds: settings.idleTimeoutSeconds ?? DEFAULT_IDLE_SECONDS } } : {}),
  };
  return bindSession(sandbox, {
    session: { namespace: agent.agent.namespace, agent: agent.agent.name, sessionId: adm.sessionId, admissionId: adm.id },
    workspace: settings.workspace,
    network: settings.network,
    timeoutSeconds: settings.timeoutSeconds,
    maxOutputChars,
    ...(Object.keys(pod).length ? { pod } : {}),
  });
}
