// Mode session, over time: every session's SandboxClaim carries when it was last used and the
// Profile's idle and TTL seconds (stamped by the workers on every command). Past the idle time
// the claim's Sandbox is suspended (agent-sandbox deletes its Pod and keeps its workspace
// volume; the next command resumes it on the same volume) — unless a worker's lease on it has
// not run out, and only if no lease was written since the sweep read it (suspendIdle); past the workspace TTL the claim is
// deleted (and with it the Sandbox and its volume). The sweep also counts session sandboxes by
// state for hermes_session_sandboxes, and deletes the templates and pools of Profiles deleted while
// no operator led (session-pool-cleanup.ts). Runs on the leader, as one work-queue key requeued every
// resync; a failure is retried with the queue's backoff.
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import {
  idleSecondsAnnotation, inUseUntilAnnotation, lastUsedAtAnnotation, sessionClaimSelector, ttlSecondsAnnotation, type Logger,
} from '../../services/core/index.js';
import { AGENT_SANDBOX_VERSION, agentSandboxPlural, DEFAULT_IDLE_SECONDS, EXTENSIONS_GROUP, SANDBOX_GROUP } from '../../services/sandbox/index.js';
import type { ReconcileResult } from '../runtime/controller.js';
import type { OperatorContext } from './context.js';
import { deleteOrphanPools } from './session-pool-cleanup.js';

export const SESSION_SWEEP_KEY = 'session-sandboxes';

export type SessionSandboxState = 'active' | 'suspended' | 'starting';

export interface Claim {
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string>; creationTimestamp?: string; deletionTimestamp?: string; uid?: string };
  status?: { sandbox?: { name?: string } };
}
export interface Sandbox {
  metadata?: { name?: string; resourceVersion?: string; annotations?: Record<string, string> };
  spec?: { operatingMode?: string };
  status?: { conditions?: { type?: string; status?: string }[] };
}

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const code = (err: unknown): number | undefined => (err as { code?: number }).code;
const notServed = (err: unknown): boolean => code(err) === 404;

/** What to do with one claim now: nothing, suspend its Sandbox, or delete it. */
export function claimVerdict(claim: Claim, now: number): 'keep' | 'suspend' | 'delete' {
  const a = claim.metadata?.annotations ?? {};
  const last = Date.parse(a[lastUsedAtAnnotation] ?? claim.metadata?.creationTimestamp ?? '');
  if (!Number.isFinite(last)) return 'keep';
  const idle = Number(a[idleSecondsAnnotation] ?? DEFAULT_IDLE_SECONDS);
  const ttl = Number(a[ttlSecondsAnnotation]);
  const unused = (now - last) / 1_000;
  if (Number.isFinite(ttl) && ttl > 0 && unused > ttl) return 'delete';
  if (Number.isFinite(idle) && idle > 0 && unused > idle) return 'suspend';
  return 'keep';
}

/** The claim read again right before a suspend: a command may have stamped it since the list. */
async function stillIdle(api: CustomObjectsApi, namespace: string, name: string, now: number): Promise<boolean> {
  try {
    const fresh = await api.getNamespacedCustomObject({ group: EXTENSIONS_GROUP, version: AGENT_SANDBOX_VERSION, namespace, plural: agentSandboxPlural.claims, name }) as Claim;
    return claimVerdict(fresh, now) === 'suspend';
  } catch (err) {
    if (code(err) === 404) return false;
    throw err;
  }
}

export interface SessionSweepOptions {
  resyncMs: number;
  /** Sets hermes_session_sandboxes{state}. */
  report?: (counts: Record<SessionSandboxState, number>) => void;
  now?: () => number;
}

const sandboxes = { group: SANDBOX_GROUP, version: AGENT_SANDBOX_VERSION, plural: agentSandboxPlural.sandboxes };

async function deleteClaim(ctx: OperatorContext, api: CustomObjectsApi, claim: Claim, namespace: string, name: string): Promise<undefined> {
  try {
    await api.deleteNamespacedCustomObject({ group: EXTENSIONS_GROUP, version: AGENT_SANDBOX_VERSION, namespace, plural: agentSandboxPlural.claims, name, body: { preconditions: { uid: claim.metadata?.uid } } });
    ctx.log.info({ claim: `${namespace}/${name}` }, 'Deleted a session sandbox claim past its workspace TTL (its Sandbox and workspace go with it)');
  } catch (err) {
    if (code(err) !== 404 && code(err) !== 409) throw err;
  }
  return undefined;
}

async function readSandbox(api: CustomObjectsApi, namespace: string, name: string): Promise<Sandbox | undefined> {
  try {
    return await api.getNamespacedCustomObject({ ...sandboxes, namespace, name }) as Sandbox;
  } catch (err) {
    if (code(err) === 404) return undefined;
    throw err;
  }
}

/** Deletes, suspends or keeps one claim; answers the state its sandbox is left in (none when deleted). */
async function sweepClaim(ctx: OperatorContext, api: CustomObjectsApi, claim: Claim, now: number): Promise<SessionSandboxState | undefined> {
  const { namespace: ns = 'default', name = '' } = claim.metadata ?? {};
  const verdict = claimVerdict(claim, now);
  if (verdict === 'delete') return deleteClaim(ctx, api, claim, ns, name);
  const sandboxName = claim.status?.sandbox?.name;
  const sandbox = sandboxName ? await readSandbox(api, ns, sandboxName) : undefined;
  if (!sandbox || !sandboxName) return 'starting';
  if (sandbox.spec?.operatingMode === 'Suspended') return 'suspended';
  if (verdict === 'suspend' && await suspendIdle({ api, log: ctx.log }, claim, sandbox, now)) return 'suspended';
  return isReady(sandbox) ? 'active' : 'starting';
}

const isReady = (s: Sandbox): boolean => s.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

/** Whether a worker's lease on the Sandbox has not run out at `now`. */
export function leased(sandbox: Sandbox, now: number): boolean {
  const until = Date.parse(sandbox.metadata?.annotations?.[inUseUntilAnnotation] ?? '');
  return Number.isFinite(until) && until > now;
}

export interface SuspendDeps {
  api: CustomObjectsApi;
  log: Logger;
  /** Test seam: awaited between the decision and the write (a test starts a command there). */
  beforeSuspend?: () => Promise<void>;
}

/**
 * Suspends the idle claim's Sandbox as the sweep read it: not while leased, not when the claim
 * was used since the list, and with the resourceVersion the decision read, so a worker's lease
 * written in between wins (409) and the command it guards runs on. True when it suspended.
 */
export async function suspendIdle(d: SuspendDeps, claim: Claim, sandbox: Sandbox, now: number): Promise<boolean> {
  const { namespace = 'default', name = '' } = claim.metadata ?? {};
  const sandboxName = sandbox.metadata?.name ?? '';
  if (leased(sandbox, now) || !(await stillIdle(d.api, namespace, name, now))) return false;
  await d.beforeSuspend?.();
  try {
    await d.api.patchNamespacedCustomObject({ ...sandboxes, namespace, name: sandboxName,
      body: { metadata: { resourceVersion: sandbox.metadata?.resourceVersion }, spec: { operatingMode: 'Suspended' } } }, merge);
  } catch (err) {
    if (code(err) === 409 || code(err) === 404) return false; // leased (or changed, or gone) since: the next sweep decides again
    throw err;
  }
  d.log.info({ claim: `${namespace}/${name}`, sandbox: sandboxName }, 'Suspended an idle session sandbox (its workspace volume stays)');
  return true;
}

export async function sweepSessionSandboxes(ctx: OperatorContext, o: SessionSweepOptions, namespace?: string): Promise<ReconcileResult> {
  const api = ctx.kc.makeApiClient(CustomObjectsApi);
  const now = (o.now ?? Date.now)();
  let claims: Claim[];
  try {
    const where = { group: EXTENSIONS_GROUP, version: AGENT_SANDBOX_VERSION, plural: agentSandboxPlural.claims, labelSelector: sessionClaimSelector };
    const list = (namespace ? await api.listNamespacedCustomObject({ ...where, namespace }) : await api.listClusterCustomObject(where)) as { items?: Claim[] };
    claims = list.items ?? [];
  } catch (err) {
    if (notServed(err)) return { requeueAfterMs: o.resyncMs }; // agent-sandbox not installed: nothing to sweep
    throw err;
  }
  const counts: Record<SessionSandboxState, number> = { active: 0, suspended: 0, starting: 0 };
  for (const claim of claims) {
    if (claim.metadata?.deletionTimestamp) continue;
    const state = await sweepClaim(ctx, api, claim, now);
    if (state) counts[state]++;
  }
  o.report?.(counts);
  await deleteOrphanPools(ctx);
  return { requeueAfterMs: o.resyncMs };
}
