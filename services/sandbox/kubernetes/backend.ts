// The kubernetes Sandbox: one Pod per call (ARCHITECTURE §6). Before the Pod: the namespace's
// sandbox ServiceAccount and the Agent's NetworkPolicy (prerequisites.ts), the session's workspace
// PVC (workspace-pvc.ts) and the Node to pin to (node-pin.ts); then the Pod's life (pod-run.ts).
// Every failure of the cluster is a `degraded` result; nothing here throws to the tool.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { CappedOutput, RollingOutput } from '../output.js';
import { Calls, type Call, type Output } from './calls.js';
import type { ChannelRequest, ExecRequest, ExecResult, RunningCommand, Sandbox, SandboxChannel } from '../types.js';
import { channelInPod, holderCommand, type Attach } from './pod-channel.js';
import { bounded } from './failures.js';
import { sandboxPodName, stdinConfigMapName } from './names.js';
import { pinnedNode } from './node-pin.js';
import { INTERRUPTED_EXIT_CODE, PodRun, type PodOutcome } from './pod-run.js';
import { sandboxPod } from './pod-spec.js';
import { Prerequisites, type Resolver } from './prerequisites.js';
import { requestProblem } from './request-check.js';
import { defaultKubernetesSandboxSettings, type KubernetesSandboxSettings } from './settings.js';
import { createStdin, deleteStdin, ownStdin } from './stdin-configmap.js';
import { recordNode, touchWorkspace, useWorkspace, type Workspace } from './workspace-pvc.js';

export interface KubernetesSandboxOptions {
  /** Credentials of the worker (in cluster: its ServiceAccount; see docs/sandbox.md for the RBAC it needs). */
  kubeConfig: KubeConfig;
  /** @defaultValue defaultKubernetesSandboxSettings (use kubernetesSandboxSettings(config) in processes) */
  settings?: Partial<KubernetesSandboxSettings>;
  /** Resolves host:port egress entries. @defaultValue the worker's DNS */
  resolver?: Resolver;
}

/** A call longer than this stamps the workspace's last-used-at again when it ends. */
const TOUCH_AGAIN_AFTER_MS = 60_000;


class KubernetesSandbox implements Sandbox {
  readonly backend = 'kubernetes' as const;
  private readonly settings: KubernetesSandboxSettings;
  private readonly core: CoreV1Api;
  private readonly prerequisites: Prerequisites;
  private readonly calls = new Calls();

  constructor(private readonly o: KubernetesSandboxOptions) {
    this.settings = { ...defaultKubernetesSandboxSettings, ...o.settings };
    this.core = o.kubeConfig.makeApiClient(CoreV1Api);
    this.prerequisites = new Prerequisites(o.kubeConfig, this.settings, o.resolver);
  }

  exec(req: ExecRequest): Promise<ExecResult> {
    return this.call(req, new CappedOutput(req.maxOutputChars)).done;
  }

  async start(req: ExecRequest): Promise<RunningCommand> {
    const output = new RollingOutput(req.maxOutputChars);
    const call = this.call(req, output);
    // Once it runs, or once it has settled (the contract: a command that never started is already done).
    if (!(await Promise.race([call.running, call.done.then(() => false)]))) await call.done;
    return {
      output: () => ({ text: output.text(), truncated: output.truncated }),
      done: call.done,
      kill: () => call.abort.abort(),
    };
  }

  /**
   * A channel process: a Pod that only waits (holderCommand) is started as for `exec`, then the
   * process runs in it through `pods/exec` with its stdin and stdout as the line channel. The Pod
   * is deleted when the process ends, at the timeout, on abort or `kill`.
   */
  async open(req: ChannelRequest): Promise<SandboxChannel> {
    const output = new CappedOutput(req.maxOutputChars);
    const attach = channelInPod({ kc: this.o.kubeConfig, req, apiTimeoutMs: this.settings.apiTimeoutMs, output });
    const call = this.calls.start<never>(req, output, 'preparing the sandbox', (signal, onRunning) =>
      this.run({ ...req, command: holderCommand(req.timeoutMs, this.settings.startTimeoutMs) }, output, signal, onRunning, attach));
    await Promise.race([call.running, call.done]);
    return {
      send: (line) => attach.channel?.send(line),
      end: () => attach.channel?.end(),
      output: () => ({ text: output.text(), truncated: output.truncated }),
      done: call.done,
      kill: () => call.abort.abort(),
    };
  }

  close(): Promise<void> {
    return this.calls.close();
  }

  private call(req: ExecRequest, output: Output): Call<ExecResult> {
    return this.calls.start<never>(req, output, 'preparing the sandbox', (signal, onRunning) => this.run(req, output, signal, onRunning));
  }

  private limit<T>(p: Promise<T>, what: string): Promise<T> {
    return bounded(p, this.settings.apiTimeoutMs, what);
  }

  /** What the Pod needs: the ServiceAccount, the Agent's NetworkPolicy, the workspace, the Node to pin to. */
  private async prepare(req: ExecRequest, namespace: string): Promise<{ ws: Workspace; node?: string } | PodOutcome> {
    const { session } = req;
    await this.prerequisites.serviceAccount(namespace);
    await this.prerequisites.networkPolicy(namespace, session.agent, req.network);
    const ws = await this.limit(useWorkspace(this.core, session, namespace, req.workspace, this.settings.storageClassName), 'refreshing the session workspace PVC');
    if (ws.deleting) {
      return { status: 'degraded', exitCode: -1, reason: `The session's workspace ${namespace}/${ws.name} expired and is being deleted. Retry in a moment: a fresh, empty workspace will be created.` };
    }
    const node = await this.limit(pinnedNode(this.core, ws.node), `reading Node ${ws.node}`);
    return { ws, ...(node ? { node } : {}) };
  }

  private async run(req: ExecRequest, output: Output, signal: AbortSignal, onRunning: () => void, attach?: Attach): Promise<PodOutcome> {
    const problem = requestProblem(req);
    if (problem) return { status: 'degraded', exitCode: -1, reason: `${problem} The command did not run.` };
    const namespace = req.pod?.namespace ?? req.session.namespace;
    // An abort while preparing answers at once; what was prepared is idempotent and harmless.
    const preparing = this.prepare(req, namespace);
    preparing.catch(() => undefined); // an abort may leave it unawaited; otherwise its failure is the race's
    const prepared = await Promise.race([preparing, whenAborted(signal)]);
    if (prepared === 'aborted' || signal.aborted) return { status: 'interrupted', exitCode: INTERRUPTED_EXIT_CODE, reason: 'Stopped before the sandbox Pod was created.' };
    if ('status' in prepared) return prepared;
    return this.launch(req, namespace, prepared, { output, signal, onRunning, ...(attach ? { attach } : {}) });
  }

  private async launch(req: ExecRequest, namespace: string, { ws, node }: { ws: Workspace; node?: string },
    io: { output: Output; signal: AbortSignal; onRunning: () => void; attach?: Attach }): Promise<PodOutcome> {
    const name = sandboxPodName();
    const t0 = Date.now();
    const stdinName = req.stdin !== undefined ? stdinConfigMapName(name) : undefined;
    let recording: Promise<void> | undefined;
    try {
      if (stdinName) await this.limit(createStdin(this.core, namespace, stdinName, req.session, req.stdin ?? ''), 'creating the stdin ConfigMap');
      // A channel's Pod only waits: it ends when the process in it ends (stop), or as any call's Pod.
      const stop = new AbortController();
      const run = new PodRun({
        kc: this.o.kubeConfig,
        pod: sandboxPod({ name, namespace, req, pvcName: ws.name, settings: this.settings, ...(node ? { pinnedNode: node } : {}), ...(stdinName ? { stdinConfigMap: stdinName } : {}) }),
        timeoutMs: req.timeoutMs, startTimeoutMs: this.settings.startTimeoutMs, pollMs: this.settings.pollMs,
        lostContactMs: this.settings.lostContactMs, apiTimeoutMs: this.settings.apiTimeoutMs,
        signal: io.attach ? AbortSignal.any([io.signal, stop.signal]) : io.signal, onOutput: (text) => { if (!io.attach) io.output.push(text); },
        onBound: (bound) => { if (bound !== ws.node) recording = recordNode(this.core, namespace, ws.name, bound); },
        ...(stdinName ? { onCreated: (pod) => ownStdin(this.core, namespace, stdinName, pod) } : {}),
      });
      if (io.attach) return await io.attach.run(run, { namespace, pod: name, signal: io.signal, stop: () => stop.abort(), onOpen: io.onRunning });
      void run.running.then((runs) => { if (runs) io.onRunning(); });
      return await run.done;
    } finally {
      await this.limit(Promise.all([recording, stdinName ? deleteStdin(this.core, namespace, stdinName) : undefined]), 'cleaning up').catch(() => undefined);
      // The stamp of this call's start is recent enough unless the call was long.
      if (Date.now() - t0 > TOUCH_AGAIN_AFTER_MS) await this.limit(touchWorkspace(this.core, namespace, ws.name), 'stamping the workspace').catch(() => undefined);
    }
  }
}

const whenAborted = (signal: AbortSignal): Promise<'aborted'> => new Promise((resolve) => {
  if (signal.aborted) resolve('aborted');
  else signal.addEventListener('abort', () => resolve('aborted'), { once: true });
});

/** The kubernetes sandbox backend: one Pod per call. */
export function kubernetesSandbox(options: KubernetesSandboxOptions): Sandbox {
  return new KubernetesSandbox(options);
}
