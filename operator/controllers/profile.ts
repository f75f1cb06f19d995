// Profile controller: validates the spec and checks that every referenced Secret and key exists
// (values are never read into status) and that every ConfigMap text (personaFrom,
// contextFiles[].contentFrom) is there and within its size limit. Conditions: Valid, Ready.
import { forbiddenSecretEnv } from '../../services/core/index.js';
import { profileSchema, type Profile } from '../api/profile.js';
import type { SecretValue } from '../api/common.js';
import { parseKey } from '../runtime/kube.js';
import type { ReconcileResult } from '../runtime/controller.js';
import { cachedConfigMaps, secretKeyState, type OperatorContext, type RawObject } from './context.js';
import { profileTextProblem } from '../texts.js';
import { prepare, writeStatus, zodMessage, type StatusDraft } from './status.js';
import { compileSandbox } from '../compile-sandbox.js';
import { poolCondition, reconcileSessionPool, SANDBOX_POOL_CONDITION, usesSessionPool } from './session-pool.js';
import { deletePoolsOfGoneProfile } from './session-pool-cleanup.js';
import { SANDBOX_NAMESPACE_NOT_ALLOWED, SANDBOX_NAMESPACE_RECHECK_MS, sandboxNamespaceRefusal } from './sandbox-namespace.js';

/** How soon a Profile whose warm pool is still filling is looked at again (its condition counts ready sandboxes). */
const WARMING_RECHECK_MS = 5_000;

export const profileConditions = ['Valid', 'Ready'] as const;

/** Secret sources a Profile names (any `{ secretKeyRef }` or `{ env: NAME }` object in the spec), with the field path for messages. */
export function profileSecretSources(p: Profile): { field: string; source: SecretValue }[] {
  const out: { field: string; source: SecretValue }[] = [];
  const walk = (v: unknown, path: string): void => {
    if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${path}[${i}]`));
    if (!v || typeof v !== 'object') return;
    const o = v as Record<string, unknown>;
    if ((o.secretKeyRef && typeof o.secretKeyRef === 'object') || typeof o.env === 'string') out.push({ field: path, source: o as SecretValue });
    for (const [k, x] of Object.entries(o)) if (k !== 'secretKeyRef') walk(x, `${path}.${k}`);
  };
  walk(p.spec, 'spec');
  return out;
}

/** Semantic checks the schema cannot express. */
function semanticProblems(p: Profile): string[] {
  const models = [p.spec.model, ...p.spec.fallbackModels];
  return models.filter((m) => m.provider === 'openai-compatible' && !m.baseURL)
    .map((m) => `model "${m.model ?? '?'}": provider openai-compatible needs baseURL (e.g. http://ollama:11434/v1)`);
}

/** The first unresolved Secret of a valid Profile, as a Ready=False condition; undefined when all resolve. */
export function missingProfileSecret(ctx: OperatorContext, p: Profile): { reason: string; message: string } | undefined {
  const sources = profileSecretSources(p);
  // No install can allow-list these (DATABASE_URL, Hermes settings, PG*, cluster credentials): every turn would fail.
  for (const { field, source } of sources) {
    const why = source.env === undefined ? undefined : forbiddenSecretEnv(source.env);
    if (why) return { reason: 'SecretEnvForbidden', message: `${field}.env: ${source.env} can never be a secret source (${why}); put the key in a Secret and use secretKeyRef` };
  }
  for (const { field, source } of sources) {
    const ref = source.secretKeyRef;
    if (!ref) continue; // env: resolved by the worker's environment
    const state = secretKeyState(ctx, p.metadata.namespace, ref);
    if (state === 'SecretNotFound') return { reason: state, message: `${field}: Secret "${ref.name}" not found in namespace ${p.metadata.namespace}; create it: kubectl -n ${p.metadata.namespace} create secret generic ${ref.name} --from-literal=${ref.key}=…` };
    if (state === 'SecretKeyMissing') return { reason: state, message: `${field}: Secret "${ref.name}" has no key "${ref.key}"; add it or fix secretKeyRef.key` };
  }
  return undefined;
}

function draftFor(ctx: OperatorContext, obj: RawObject): StatusDraft {
  const parsed = profileSchema.safeParse(obj);
  const problems = parsed.success ? semanticProblems(parsed.data) : [zodMessage(parsed.error.issues)];
  if (!parsed.success || problems.length) {
    const message = problems.join('; ');
    return { applied: true, conditions: [
      { type: 'Valid', status: 'False', reason: 'InvalidSpec', message },
      { type: 'Ready', status: 'False', reason: 'InvalidSpec', message: `Fix the spec: ${message}` },
    ] };
  }
  const missing = missingProfileSecret(ctx, parsed.data) ?? profileTextProblem(parsed.data, cachedConfigMaps(ctx));
  return { applied: true, conditions: [
    { type: 'Valid', status: 'True', reason: 'Valid', message: 'The spec is valid.' },
    missing ? { type: 'Ready', status: 'False', ...missing } : { type: 'Ready', status: 'True', reason: 'Resolved', message: 'Every referenced Secret, ConfigMap and key exists.' },
  ] };
}

export async function reconcileProfile(ctx: OperatorContext, key: string): Promise<ReconcileResult | void> {
  const { namespace, name } = parseKey(key);
  const obj = ctx.caches.profiles.get(name, namespace);
  // Gone or going: the session pools it had in other namespaces have no owner reference to follow.
  if (!obj || obj.metadata.deletionTimestamp) return deletePoolsOfGoneProfile(ctx, { namespace, name });
  if (!(await prepare(ctx, 'profiles', obj, profileConditions, false))) return;
  const draft = draftFor(ctx, obj);
  const ready = draft.conditions.find((c) => c.type === 'Ready')!;
  const parsed = profileSchema.safeParse(obj);
  const refused = parsed.success ? await sandboxNamespaceRefusal(ctx, namespace, parsed.data.spec.sandbox?.namespace) : undefined;
  if (refused && ready.status === 'True') Object.assign(ready, { status: 'False', reason: SANDBOX_NAMESPACE_NOT_ALLOWED, message: refused });
  const warming = await sessionPool(ctx, obj, draft, refused);
  if (await writeStatus(ctx, 'profiles', obj, draft)) {
    ctx.log.info({ profile: key, ready: ready.status, reason: ready.reason }, 'Updated Profile status');
    if (ready.status === 'False') await ctx.events.emit(obj, 'Warning', ready.reason, ready.message);
  }
  if (warming) return { requeueAfterMs: WARMING_RECHECK_MS };
  if (refused) return { requeueAfterMs: SANDBOX_NAMESPACE_RECHECK_MS };
}

/** Mode session: the Profile's SandboxTemplate + SandboxWarmPool, and its SandboxPool condition in `draft`; true while the pool fills. */
async function sessionPool(ctx: OperatorContext, obj: RawObject, draft: StatusDraft, refused: string | undefined): Promise<boolean> {
  const parsed = profileSchema.safeParse(obj);
  let sandbox;
  try {
    sandbox = parsed.success ? compileSandbox(parsed.data.spec).sandbox : undefined;
  } catch {
    sandbox = undefined; // the Agents' compile reports it; no pool for a spec that does not compile
  }
  const hadPool = obj.status?.conditions?.some((c) => c.type === SANDBOX_POOL_CONDITION) ?? false;
  const wanted = usesSessionPool(ctx, sandbox);
  if (!wanted && !hadPool) return false;
  // Not in a namespace that does not take them: none is written there, and what the Profile had is deleted.
  const state = await reconcileSessionPool(ctx, obj, refused ? undefined : sandbox, hadPool);
  draft.conditions.push(refused && wanted ? { type: SANDBOX_POOL_CONDITION, status: 'False', reason: SANDBOX_NAMESPACE_NOT_ALLOWED, message: refused } : poolCondition(state));
  return state.kind === 'warming';
}
