// Mode session: the operator owns one SandboxTemplate and one SandboxWarmPool per Profile
// (kubernetes-sigs/agent-sandbox; services/sandbox/agent-sandbox/resources.ts builds them), in
// the Profile's sandbox namespace, owned by the Profile when that is its own namespace. Those it
// wrote in any other namespace (the sandbox namespace changed), and all of them once the Profile
// leaves mode session, are deleted (session-pool-cleanup.ts). What it finds is the Profile's SandboxPool
// condition: Ready with the pool's ready count, AgentSandboxMissing when the cluster does not
// serve agent-sandbox's API (the workers then run a Pod per call), or the write's failure.
import { CoreV1Api, CustomObjectsApi, type V1OwnerReference } from '@kubernetes/client-node';
import type { CompiledSandbox } from '../../services/core/index.js';
import {
  AGENT_SANDBOX_VERSION, agentSandboxPlural, defaultKubernetesSandboxSettings, EXTENSIONS_GROUP, sessionPoolName, sessionTemplate, sessionWarmPool,
  type SessionPoolInput,
} from '../../services/sandbox/index.js';
import { profileNamespaceKey } from '../../services/core/index.js';
import type { ConditionInput } from '../runtime/conditions.js';
import type { OperatorContext, RawObject } from './context.js';
import { sameJson } from './context.js';
import { deleteStalePools } from './session-pool-cleanup.js';

export const SANDBOX_POOL_CONDITION = 'SandboxPool';

/** What the pool looks like, for the Profile's and its Agents' conditions. */
export type PoolState =
  | { kind: 'notUsed' }
  | { kind: 'missing' }
  | { kind: 'ready' | 'warming'; namespace: string; name: string; ready: number; desired: number }
  | { kind: 'failed'; message: string };

interface Obj { metadata?: { resourceVersion?: string; labels?: Record<string, string> }; spec?: unknown; status?: { readyReplicas?: number } }

const code = (err: unknown): number | undefined => (err as { code?: number }).code;
const notServed = (err: unknown): boolean => code(err) === 404 && /could not find the requested resource|404 page not found/i.test(String((err as { body?: unknown }).body ?? (err as Error).message));

/** Whether a compiled sandbox runs in mode session on kubernetes (the install's default backend counts). */
export function usesSessionPool(ctx: OperatorContext, s: CompiledSandbox | undefined): boolean {
  return !!s && s.mode === 'session' && (s.backend ?? ctx.sandbox?.backend ?? 'kubernetes') === 'kubernetes';
}

function ownerOf(profile: RawObject): V1OwnerReference {
  return { apiVersion: profile.apiVersion, kind: profile.kind, name: profile.metadata.name, uid: profile.metadata.uid ?? '', controller: true, blockOwnerDeletion: false };
}

/** Throws when the stored object is not this Profile's to change (someone else's, or a same-named Profile's of another namespace). */
function checkOwnership(body: ReturnType<typeof sessionTemplate>, labels: Record<string, string>): void {
  const where = `${body.kind} ${body.metadata.namespace}/${body.metadata.name}`;
  if (labels['app.kubernetes.io/managed-by'] !== 'hermes') throw new Error(`${where} exists and is not managed by hermes; rename or delete it`);
  const owner = labels[profileNamespaceKey];
  if (owner && owner !== body.metadata.labels?.[profileNamespaceKey]) {
    throw new Error(`${where} belongs to the Profile of the same name in namespace ${owner}; give one of the two Profiles another spec.sandbox.namespace or name`);
  }
}

async function apply(api: CustomObjectsApi, plural: string, body: ReturnType<typeof sessionTemplate>): Promise<Obj> {
  const where = { group: EXTENSIONS_GROUP, version: AGENT_SANDBOX_VERSION, namespace: body.metadata.namespace, plural };
  let current: Obj | undefined;
  try {
    current = await api.getNamespacedCustomObject({ ...where, name: body.metadata.name }) as Obj;
  } catch (err) {
    if (code(err) !== 404 || notServed(err)) throw err;
  }
  if (!current) {
    try {
      return await api.createNamespacedCustomObject({ ...where, body }) as Obj;
    } catch (err) {
      if (code(err) !== 409) throw err;
      current = await api.getNamespacedCustomObject({ ...where, name: body.metadata.name }) as Obj;
    }
  }
  const labels = current.metadata?.labels ?? {};
  checkOwnership(body, labels);
  const wanted = { ...body.spec };
  const stored = Object.fromEntries(Object.keys(wanted).map((k) => [k, (current.spec as Record<string, unknown> | undefined)?.[k]]));
  // Labels too: the cleanup finds the objects by them (one written before they were there gets them).
  const labelled = Object.entries(body.metadata.labels ?? {}).every(([k, v]) => labels[k] === v);
  if (labelled && sameJson(stored, wanted)) return current;
  return await api.replaceNamespacedCustomObject({ ...where, name: body.metadata.name, body: { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata?.resourceVersion } } }) as Obj;
}

/** The sandbox ServiceAccount (no token) must exist before agent-sandbox creates the warm Pods: create it, an existing one is fine. */
async function ensureServiceAccount(ctx: OperatorContext, namespace: string, name: string): Promise<void> {
  try {
    await ctx.kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace, body: {
      metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'hermes' } }, automountServiceAccountToken: false,
    } });
  } catch (err) {
    if (code(err) !== 409) throw err;
  }
}

/** A Profile out of mode session: the pools it had, in any namespace, are deleted. */
async function leavePool(ctx: OperatorContext, profile: RawObject, hadPool: boolean): Promise<PoolState> {
  if (hadPool) await deleteStalePools(ctx, profile.metadata);
  return { kind: 'notUsed' };
}

/** Writes (or deletes) the Profile's template and warm pool; answers the pool's state. */
export async function reconcileSessionPool(ctx: OperatorContext, profile: RawObject, sandbox: CompiledSandbox | undefined, hadPool: boolean): Promise<PoolState> {
  const api = ctx.kc.makeApiClient(CustomObjectsApi);
  const name = sessionPoolName(profile.metadata.name);
  if (!sandbox || !usesSessionPool(ctx, sandbox)) return leavePool(ctx, profile, hadPool);
  const namespace = sandbox.namespace ?? profile.metadata.namespace;
  const input: SessionPoolInput = {
    profile: profile.metadata.name, profileNamespace: profile.metadata.namespace, namespace, sandbox, settings: ctx.sandboxPod ?? defaultKubernetesSandboxSettings,
    ...(namespace === profile.metadata.namespace && profile.metadata.uid ? { owner: ownerOf(profile) } : {}),
  };
  try {
    await ensureServiceAccount(ctx, namespace, input.settings.serviceAccountName);
    await apply(api, agentSandboxPlural.templates, sessionTemplate(input));
    const pool = await apply(api, agentSandboxPlural.warmPools, sessionWarmPool(input));
    await deleteStalePools(ctx, profile.metadata, namespace);
    const desired = sandbox.warmPool?.size ?? 1;
    const ready = pool.status?.readyReplicas ?? 0;
    return { kind: ready >= desired ? 'ready' : 'warming', namespace, name, ready, desired };
  } catch (err) {
    if (notServed(err)) return { kind: 'missing' };
    const message = (err as { body?: unknown }).body ? String((err as { body?: unknown }).body).slice(0, 300) : (err as Error).message;
    return { kind: 'failed', message: `Writing the SandboxTemplate and SandboxWarmPool ${namespace}/${name} failed: ${message}` };
  }
}

export const AGENT_SANDBOX_MISSING = 'agent-sandbox (kubernetes-sigs/agent-sandbox, its SandboxTemplate/SandboxWarmPool/SandboxClaim API) is not installed in this cluster: spec.sandbox.mode session runs one Pod per call instead. Install agent-sandbox with its extensions to get a sandbox per session from a warm pool.';

/** The Profile's SandboxPool condition for a pool state. */
export function poolCondition(state: PoolState): ConditionInput {
  const c = (status: ConditionInput['status'], reason: string, message: string): ConditionInput => ({ type: SANDBOX_POOL_CONDITION, status, reason, message });
  switch (state.kind) {
    case 'notUsed': return c('True', 'NotUsed', 'spec.sandbox.mode is not session: no warm pool.');
    case 'missing': return c('False', 'AgentSandboxMissing', AGENT_SANDBOX_MISSING);
    case 'failed': return c('False', 'WriteFailed', state.message);
    case 'warming': return c('False', 'Warming', `SandboxWarmPool ${state.namespace}/${state.name}: ${state.ready}/${state.desired} warm sandboxes ready; new sessions cold-start until it fills.`);
    case 'ready': return c('True', 'Ready', `SandboxWarmPool ${state.namespace}/${state.name}: ${state.ready}/${state.desired} warm sandboxes ready.`);
  }
}
