// Mode session: the SandboxTemplates and SandboxWarmPools a Profile no longer wants. Each carries
// the Profile's name and namespace as labels (services/sandbox/agent-sandbox/resources.ts), so
// what a Profile left behind — its spec.sandbox.namespace changed, it left mode session, it was
// deleted — is found by those labels in every namespace, not looked for where the Profile says its
// pool is now (that is the one place it is not stale). A pool in the Profile's own namespace would
// also go with the Profile by owner reference; one in another namespace has no owner (owner
// references cannot cross namespaces), so only this deletes it.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { profileKey, profileNamespaceKey } from '../../services/core/index.js';
import {
  AGENT_SANDBOX_VERSION, agentSandboxPlural, allSessionPoolsSelector, apiNotServed, EXTENSIONS_GROUP, sessionPoolSelector,
} from '../../services/sandbox/index.js';
import { group, version } from '../api/common.js';
import type { OperatorContext } from './context.js';

export interface ProfileRef { namespace: string; name: string }

interface PoolObject { kind?: string; metadata?: { name?: string; namespace?: string; uid?: string; labels?: Record<string, string>; annotations?: Record<string, string> } }

const code = (err: unknown): number | undefined => (err as { code?: number }).code;
const plurals = [agentSandboxPlural.warmPools, agentSandboxPlural.templates];

/** The operator's templates and pools matching `selector`: in every namespace, or the one it watches. */
async function listPools(ctx: OperatorContext, api: CustomObjectsApi, plural: string, selector: string): Promise<PoolObject[]> {
  const where = { group: EXTENSIONS_GROUP, version: AGENT_SANDBOX_VERSION, plural, labelSelector: selector };
  const list = (ctx.watchNamespace
    ? await api.listNamespacedCustomObject({ ...where, namespace: ctx.watchNamespace })
    : await api.listClusterCustomObject(where)) as { items?: PoolObject[] };
  return list.items ?? [];
}

async function deletePool(ctx: OperatorContext, api: CustomObjectsApi, plural: string, o: PoolObject, why: string): Promise<void> {
  const { namespace = '', name = '', uid } = o.metadata ?? {};
  try {
    // The uid precondition: never a same-named object written since the list.
    await api.deleteNamespacedCustomObject({ group: EXTENSIONS_GROUP, version: AGENT_SANDBOX_VERSION, namespace, plural, name, body: { preconditions: { uid } } });
    ctx.log.info({ [plural]: `${namespace}/${name}`, profile: `${o.metadata?.labels?.[profileNamespaceKey] ?? ''}/${o.metadata?.annotations?.[profileKey] ?? ''}` }, `Deleted ${o.kind ?? plural} ${why}`);
  } catch (err) {
    if (code(err) !== 404 && code(err) !== 409) throw err;
  }
}

/**
 * Deletes the Profile's templates and pools in every namespace but `keep` (all of them when
 * `keep` is undefined). Nothing to do when agent-sandbox is not installed.
 */
export async function deleteStalePools(ctx: OperatorContext, profile: ProfileRef, keep?: string): Promise<void> {
  const api = ctx.kc.makeApiClient(CustomObjectsApi);
  for (const plural of plurals) {
    let items: PoolObject[];
    try {
      items = await listPools(ctx, api, plural, sessionPoolSelector(profile.namespace, profile.name));
    } catch (err) {
      if (apiNotServed(err)) return;
      throw err;
    }
    // The name label may be a hash of a long name: the annotation has it whole.
    for (const o of items) {
      if (o.metadata?.namespace === keep || o.metadata?.annotations?.[profileKey] !== profile.name) continue;
      await deletePool(ctx, api, plural, o, keep ? `that Profile ${profile.namespace}/${profile.name} no longer uses (its sandboxes run in ${keep})` : `of Profile ${profile.namespace}/${profile.name}, which has no session pool any more`);
    }
  }
}

/** Whether the Profile exists and is not being deleted, asked of the apiserver (a cache may lag). */
async function profileLives(ctx: OperatorContext, profile: ProfileRef): Promise<boolean> {
  try {
    const o = await ctx.kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({ group, version, namespace: profile.namespace, plural: 'profiles', name: profile.name }) as { metadata?: { deletionTimestamp?: string } };
    return !o.metadata?.deletionTimestamp;
  } catch (err) {
    if (code(err) === 404) return false;
    throw err;
  }
}

/** A Profile that is gone (or going): its templates and pools in every namespace are deleted. */
export async function deletePoolsOfGoneProfile(ctx: OperatorContext, profile: ProfileRef): Promise<void> {
  if (await profileLives(ctx, profile)) return; // re-created since: its own reconcile places its pool
  await deleteStalePools(ctx, profile);
}

/**
 * Templates and pools whose Profile no longer exists — deleted while no operator was leading, so
 * no reconcile saw it go. Run by the session sweep.
 */
export async function deleteOrphanPools(ctx: OperatorContext): Promise<void> {
  const api = ctx.kc.makeApiClient(CustomObjectsApi);
  for (const plural of plurals) {
    let items: PoolObject[];
    try {
      items = await listPools(ctx, api, plural, allSessionPoolsSelector);
    } catch (err) {
      if (apiNotServed(err)) return;
      throw err;
    }
    for (const o of items) {
      const profile = { namespace: o.metadata?.labels?.[profileNamespaceKey] ?? '', name: o.metadata?.annotations?.[profileKey] ?? '' };
      if (!profile.namespace || !profile.name || ctx.caches.profiles.get(profile.name, profile.namespace)) continue;
      if (await profileLives(ctx, profile)) continue;
      await deletePool(ctx, api, plural, o, `of Profile ${profile.namespace}/${profile.name}, which no longer exists`);
    }
  }
}
