// The real kubernetes-sigs/agent-sandbox controller (built by hack/kube/agent-sandbox.sh) against
// a test control plane: its CRDs installed, and by default running as a ServiceAccount bound to
// exactly the ClusterRoles the release ships, so a missing permission shows up as a 403 in its log.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { agentSandboxBinaries } from './binaries.js';
import type { ControlPlane } from './controlPlane.js';
import { startLogged, waitReady } from './process.js';
import { freePort } from '../ports.js';
import { waitFor } from './wait.js';

/** Options for {@link startAgentSandboxController}. */
export interface AgentSandboxControllerOptions {
  /**
   * Who the controller runs as: `serviceAccount` = ServiceAccount
   * `agent-sandbox-system/agent-sandbox-controller` bound to the release's ClusterRoles
   * (`agent-sandbox-controller`, `agent-sandbox-controller-extensions`); `admin` = system:masters.
   * @defaultValue 'serviceAccount'
   */
  identity?: 'serviceAccount' | 'admin';
  /** Extra controller flags, appended last (e.g. `-sandbox-warm-pool-replenish-delay=1s`). @defaultValue [] */
  extraArgs?: string[];
  /** How long the CRDs and the controller get to become ready. @defaultValue 60_000 */
  startTimeoutMs?: number;
}

/** A running agent-sandbox controller. */
export interface AgentSandboxController {
  /** Its stdout+stderr (zap JSON lines), in the control plane's dir. */
  logFile: string;
  /** The kubeconfig it runs with. */
  kubeconfig: string;
  /** The last `lines` lines of its log. */
  tail(lines?: number): string;
  /** Log lines reporting that the apiserver refused it something (RBAC). */
  forbidden(): string[];
  /** SIGTERM (it shuts its workers down), SIGKILL after 5 s. */
  stop(): Promise<void>;
}

/** The four controllers `-extensions` runs; ready when each has logged "Starting workers". */
const CONTROLLERS = ['sandbox', 'sandboxclaim', 'sandboxtemplate', 'sandboxwarmpool'];
const NAMESPACE = 'agent-sandbox-system';
const SERVICE_ACCOUNT = 'agent-sandbox-controller';

/** What the controller needs of a control plane. */
export type AgentSandboxPlane = Pick<ControlPlane, 'dir' | 'adminKubeconfig' | 'kubectl' | 'mintServiceAccountKubeconfig'>;

async function kubectlOk(cp: AgentSandboxPlane, args: string[], what: string, input?: string): Promise<string> {
  const result = await cp.kubectl(args, { input });
  if (result.code !== 0) throw new Error(`${what} failed (kubectl ${args.join(' ')}): ${result.stderr.trim()}`);
  return result.stdout;
}

/** Installs the 4 CRDs (server-side apply: they are too large for the last-applied annotation) and waits until Established. */
async function installCrds(cp: AgentSandboxPlane, crdDir: string, timeoutMs: number): Promise<void> {
  await kubectlOk(cp, ['apply', '--server-side', '--force-conflicts', '-f', crdDir], 'Installing the agent-sandbox CRDs');
  // `kubectl wait` fails at once ("status.conditions accessor error") when it reads a CRD whose
  // status the apiserver has not written yet (just created, a loaded machine): ask again until the
  // deadline, then fail with its last answer.
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
    const args = ['wait', '--for=condition=Established', `--timeout=${left}s`, '-f', crdDir];
    const result = await cp.kubectl(args);
    if (result.code === 0) return;
    const early = /accessor error/.test(result.stderr) && Date.now() < deadline;
    if (!early) throw new Error(`Waiting for the agent-sandbox CRDs to be Established failed (kubectl ${args.join(' ')}): ${result.stderr.trim()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The release's ClusterRoles bound to a ServiceAccount; returns a kubeconfig once the authorizer lets it watch claims. */
async function serviceAccountKubeconfig(cp: AgentSandboxPlane, rbacDir: string, timeoutMs: number): Promise<string> {
  await kubectlOk(cp, ['apply', '-f', rbacDir], 'Applying the agent-sandbox ClusterRoles');
  await kubectlOk(cp, ['apply', '-f', '-'], 'Creating the agent-sandbox namespace', `apiVersion: v1\nkind: Namespace\nmetadata: { name: ${NAMESPACE} }\n`);
  const bindings = ['agent-sandbox-controller', 'agent-sandbox-controller-extensions'].map((role) => [
    'apiVersion: rbac.authorization.k8s.io/v1', 'kind: ClusterRoleBinding', `metadata: { name: ${role} }`,
    `roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${role} }`,
    `subjects: [{ kind: ServiceAccount, name: ${SERVICE_ACCOUNT}, namespace: ${NAMESPACE} }]`,
  ].join('\n')).join('\n---\n');
  await kubectlOk(cp, ['apply', '-f', '-'], 'Binding the agent-sandbox ClusterRoles', bindings);
  const minted = await cp.mintServiceAccountKubeconfig(NAMESPACE, SERVICE_ACCOUNT);
  // A new binding takes a moment to reach the RBAC authorizer's cache.
  await waitFor(async () => (await cp.kubectl(['auth', 'can-i', 'watch', 'sandboxclaims.extensions.agents.x-k8s.io', '-A'],
    { kubeconfig: minted.path })).stdout.trim() === 'yes', { what: 'the agent-sandbox ClusterRoleBindings to take effect', timeoutMs });
  return minted.path;
}

function startedControllers(logFile: string): Set<string> {
  const started = new Set<string>();
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('"Starting workers"')) continue;
    const name = /"controller":"([^"]+)"/.exec(line)?.[1];
    if (name) started.add(name);
  }
  return started;
}

/**
 * Installs agent-sandbox's CRDs into `cp` and starts its controller with `-extensions`
 * (Sandbox, SandboxClaim, SandboxTemplate, SandboxWarmPool), leader election and metrics off,
 * health probes on a free loopback port. Resolves once /readyz answers and all four controllers
 * have started their workers (their caches synced); throws with its log tail otherwise. The
 * process is marked for the reaper and dies with this one (process.ts `startLogged`).
 * Pods it creates need a test kubelet; deleting a claim or Sandbox relies on the garbage
 * collector (controllerManager.ts `startGarbageCollector`).
 */
export async function startAgentSandboxController(cp: AgentSandboxPlane, opts: AgentSandboxControllerOptions = {}): Promise<AgentSandboxController> {
  const bin = agentSandboxBinaries();
  const timeoutMs = opts.startTimeoutMs ?? 60_000;
  await installCrds(cp, bin.crdDir, timeoutMs);
  const kubeconfig = (opts.identity ?? 'serviceAccount') === 'admin'
    ? cp.adminKubeconfig : await serviceAccountKubeconfig(cp, bin.rbacDir, timeoutMs);
  const healthPort = await freePort();
  const logFile = join(cp.dir, `agent-sandbox-controller-${healthPort}.log`);
  const proc = startLogged('agent-sandbox-controller', bin.controller, [
    `-kubeconfig=${kubeconfig}`, '-extensions', '-leader-elect=false', '-metrics-bind-address=0',
    `-health-probe-bind-address=127.0.0.1:${healthPort}`, ...(opts.extraArgs ?? []),
  ], logFile);
  await waitReady(proc, async () => {
    const res = await fetch(`http://127.0.0.1:${healthPort}/readyz`).catch(() => undefined);
    return res?.ok === true && CONTROLLERS.every((c) => startedControllers(logFile).has(c));
  }, timeoutMs);
  return {
    logFile, kubeconfig,
    tail: (lines) => proc.tail(lines),
    forbidden: () => readFileSync(logFile, 'utf8').split('\n').filter((line) => /forbidden/i.test(line)),
    stop: () => proc.stop(),
  };
}
