// The worker's sandbox backends and the session sandbox a turn's tools get. A backend is built
// on first use (a worker whose agents never run commands needs neither bwrap nor cluster
// credentials); one that cannot be built answers every call `degraded` with the reason, so the
// model and the user learn why nothing ran.
import type { KubeConfig } from '@kubernetes/client-node';
import type { Admission, CompiledAgent, Config, Logger } from '../core/index.js';
import {
  bindSession, bubblewrapSandboxFromConfig, kubernetesSandbox, kubernetesSandboxSettings,
  type ExecRequest, type ExecResult, type RunningCommand, type Sandbox, type SandboxBackendName, type SessionSandbox,
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
}

/** A backend that could not be built: every call says why, nothing runs. */
function unavailable(backend: SandboxBackendName, reason: string): Sandbox {
  const result = (): ExecResult => ({ exitCode: -1, output: '', truncated: false, status: 'degraded', reason: `the ${backend} sandbox is unavailable: ${reason}; the command did not run`, durationMs: 0 });
  return {
    backend,
    exec: () => Promise.resolve(result()),
    start: (): Promise<RunningCommand> => Promise.resolve({ output: () => ({ text: '', truncated: false }), done: Promise.resolve(result()), kill: () => undefined }),
    close: () => Promise.resolve(),
  };
}

export function openSandboxBackends(config: Config, log: Logger, opts: SandboxBackendOptions = {}): SandboxBackends {
  const built = new Map<SandboxBackendName, Sandbox>(Object.entries(opts.backends ?? {}) as [SandboxBackendName, Sandbox][]);
  const build = (name: SandboxBackendName): Sandbox => {
    if (name === 'bubblewrap') return bubblewrapSandboxFromConfig(config);
    if (!opts.kubeConfig) return unavailable(name, 'this worker has no cluster credentials (run it in the cluster, or set the Profile\'s spec.sandbox.backend to bubblewrap)');
    try {
      return kubernetesSandbox({ kubeConfig: opts.kubeConfig(), settings: kubernetesSandboxSettings(config) });
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
      if (!sandbox) built.set(name, (sandbox = build(name)));
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
