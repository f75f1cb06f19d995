// Mode session, over time: every session's SandboxClaim carries when it was last used and the
// Profile's idle and TTL seconds (stamped by the workers on every command). Past the idle time
// the claim's Sandbox is suspended (agent-sandbox deletes its Pod and keeps its workspace
// volume; the next command resumes it on the same volume); past the workspace TTL the claim is
// deleted (and with it the Sandbox and its volume). The sweep also counts session sandboxes by
// state for hermes_session_sandboxes, and deletes the templates and pools of Profiles deleted while
// no operator led (session-pool-cleanup.ts). Runs on the leader, as one work-queue key requeued every
// resync; a failure is retried with the queue's backoff.
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { idleSecondsAnnotation, lastUsedAtAnnotation, sessionClaimSelector, ttlSecondsAnnotation } from '../../services/core/index.js';
import { AGENT_SANDBOX_VERSION, agentSandboxPlural, DEFAULT_IDLE_SECONDS, EXTENSIONS_GROUP, SANDBOX_GROUP } from '../../services/sandbox/index.js';
import type { ReconcileResult } from '../runtime/controller.js';
import type { OperatorContext } from './context.js';
import { deleteOrphanPools } from './session-pool-cleanup.js';

export const SESSION_SWEEP_KEY = 'session-sandboxes';

export type SessionSandboxState = 'active' | 'suspended' | 'starting';

interface Claim {
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string>; creationTimestamp?: string; deletionTimestamp?: string; uid?: string };
  status?: { sandbox?: { name?: string } };
}
interface Sandbox { spec?: { operatingMode?: string }; status?: { conditions?: { type?: string; status?: string }[] } }

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
  if (verdict === 'suspend' && await stillIdle(api, ns, name, now)) return suspend(ctx, api, ns, name, sandboxName);
  return isReady(sandbox) ? 'active' : 'starting';
}

const isReady = (s: Sandbox): boolean => s.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';

async function suspend(ctx: OperatorContext, api: CustomObjectsApi, namespace: string, claim: string, sandbox: string): Promise<'suspended'> {
  await api.patchNamespacedCustomObject({ ...sandboxes, namespace, name: sandbox, body: { spec: { operatingMode: 'Suspended' } } }, merge);
  ctx.log.info({ claim: `${namespace}/${claim}`, sandbox }, 'Suspended an idle session sandbox (its workspace volume stays)');
  return 'suspended';
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
