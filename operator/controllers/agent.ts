// Agent controller: resolves the Profile (and the ConfigMaps its texts come from) and every credential, compiles with operator/compile.ts
// (the code `hermes dev` runs) and publishes the revision to Postgres (NOTIFY → gateways and
// workers switch). Conditions: ProfileResolved, CredentialsResolved, Ready, SandboxReady. A finalizer deletes
// the agent's rows when the Agent is deleted.
import { canonicalJson, compiledAgentSchema, deleteAgent, findAgent, publishRevision, sha256, type CompiledAgent } from '../../services/core/index.js';
import { agentSchema, type Agent } from '../api/agent.js';
import { profileSchema, type Profile } from '../api/profile.js';
import { compileAgent, CompileError } from '../compile.js';
import { keyOf, parseKey } from '../runtime/kube.js';
import type { ReconcileResult } from '../runtime/controller.js';
import type { ConditionInput } from '../runtime/conditions.js';
import { cachedSources, type OperatorContext, type RawObject } from './context.js';
import { missingProfileSecret } from './profile.js';
import { childName, reconcileRuntime } from './dedicated.js';
import { selectedSkills } from './agent-skills.js';
import { SANDBOX_CONDITION, sandboxCondition } from './agent-sandbox.js';
import { prepare, releaseFinalizer, writeStatus, zodMessage, type StatusDraft } from './status.js';
import { kubeErrorLine } from '../../services/sandbox/index.js';
import { SANDBOX_NAMESPACE_NOT_ALLOWED, SANDBOX_NAMESPACE_RECHECK_MS, sandboxNamespaceRefusal } from './sandbox-namespace.js';

export const agentConditions = ['ProfileResolved', 'CredentialsResolved', 'Ready', SANDBOX_CONDITION] as const;

/** Platforms whose events the gateway receives on a hook URL: Slack, Teams, signed webhooks, and Telegram unless it long-polls. */
const HOOK_PLATFORMS: ReadonlySet<string> = new Set(['slack', 'discord', 'teams', 'webhook']);
export const receivesWebhooks = (p: Agent['spec']['platforms'][number]) => HOOK_PLATFORMS.has(p.type) || (p.type === 'telegram' && p.mode !== 'polling');

const cond = (type: string, status: ConditionInput['status'], reason: string, message: string): ConditionInput => ({ type, status, reason, message });

/** Where commands run is known only from a compiled revision: until then SandboxReady says so (not "first reconcile"). */
const sandboxNotChecked = cond(SANDBOX_CONDITION, 'Unknown', 'AgentNotReady', 'Checked once the Agent compiles: see the Ready condition.');

function notReady(profile: ConditionInput, credentials: ConditionInput, ready: ConditionInput, fields: Record<string, unknown> = {}): StatusDraft {
  return { applied: false, conditions: [profile, credentials, ready, sandboxNotChecked], fields };
}

type Resolved = { agent: Agent; profile: Profile } | { draft: StatusDraft };

function resolve(ctx: OperatorContext, obj: RawObject): Resolved {
  const parsedAgent = agentSchema.safeParse(obj);
  if (!parsedAgent.success) {
    const msg = `Fix the spec: ${zodMessage(parsedAgent.error.issues)}`;
    return { draft: notReady(cond('ProfileResolved', 'Unknown', 'InvalidSpec', msg), cond('CredentialsResolved', 'Unknown', 'InvalidSpec', msg), cond('Ready', 'False', 'InvalidSpec', msg)) };
  }
  const agent = parsedAgent.data;
  const platforms = { platforms: agent.spec.platforms.map((p) => p.type).join(',') || undefined };
  const ref = agent.spec.profileRef.name;
  const rawProfile = ctx.caches.profiles.get(ref, agent.metadata.namespace);
  const parsedProfile = rawProfile ? profileSchema.safeParse(rawProfile) : undefined;
  if (!parsedProfile?.success) {
    const msg = rawProfile
      ? `Profile "${ref}" is invalid: ${zodMessage(parsedProfile!.error!.issues)}`
      : `Profile "${ref}" not found in namespace ${agent.metadata.namespace}: create it or fix spec.profileRef.name.`;
    const reason = rawProfile ? 'ProfileInvalid' : 'ProfileNotFound';
    return { draft: notReady(cond('ProfileResolved', 'False', reason, msg), cond('CredentialsResolved', 'Unknown', 'ProfileNotResolved', 'Waiting for the Profile.'), cond('Ready', 'False', reason, msg), platforms) };
  }
  return { agent, profile: parsedProfile.data };
}

/**
 * The first chat platform whose credentials Secret does not exist. compile checks only the keys
 * listed in credentials.keys (none by default), so a misspelt secretRef was Ready=True with
 * "Every referenced Secret and key exists" while every event of that platform failed.
 */
function missingPlatformSecret(ctx: OperatorContext, agent: Agent): string | undefined {
  const ns = agent.metadata.namespace;
  for (const [i, p] of agent.spec.platforms.entries()) {
    const name = p.credentials.secretRef.name;
    if (!ctx.caches.secrets.get(name, ns)) return `spec.platforms[${i}] (${p.type}): credentials Secret "${name}" not found in namespace ${ns}; create it with the platform's keys (kubectl -n ${ns} create secret generic ${name} --from-literal=…) or fix credentials.secretRef.name.`;
  }
  return undefined;
}

/** What keeps a resolved Agent from compiling before compile looks (a platform's Secret, the Profile's sandbox namespace), or undefined. */
async function notCompilable(ctx: OperatorContext, agent: Agent, profile: Profile, profileOk: ConditionInput, platforms: string | undefined): Promise<StatusDraft | undefined> {
  const noPlatformSecret = missingPlatformSecret(ctx, agent);
  if (noPlatformSecret) return notReady(profileOk, cond('CredentialsResolved', 'False', 'SecretNotFound', noPlatformSecret), cond('Ready', 'False', 'SecretNotFound', noPlatformSecret), { platforms });
  const refused = await sandboxNamespaceRefusal(ctx, profile.metadata.namespace, profile.spec.sandbox?.namespace);
  if (!refused) return undefined;
  const msg = `Profile "${profile.metadata.name}": ${refused}`;
  return notReady(cond('ProfileResolved', 'False', SANDBOX_NAMESPACE_NOT_ALLOWED, msg), cond('CredentialsResolved', 'Unknown', 'ProfileNotResolved', 'Waiting for the Profile.'),
    cond('Ready', 'False', SANDBOX_NAMESPACE_NOT_ALLOWED, msg), { platforms });
}

/** Hash of a compiled revision, as publishRevision computes it. */
const revisionHash = (c: CompiledAgent): string => sha256(canonicalJson(compiledAgentSchema.parse(c)));

async function compileAndPublish(ctx: OperatorContext, raw: RawObject, agent: Agent, profile: Profile): Promise<StatusDraft> {
  const platforms = agent.spec.platforms.map((p) => p.type).join(',') || undefined;
  const profileOk = cond('ProfileResolved', 'True', 'Resolved', `Using Profile "${profile.metadata.name}".`);
  const missing = missingProfileSecret(ctx, profile);
  if (missing) return notReady(profileOk, cond('CredentialsResolved', 'False', missing.reason, missing.message), cond('Ready', 'False', missing.reason, missing.message), { platforms });
  const blocked = await notCompilable(ctx, agent, profile, profileOk, platforms);
  if (blocked) return blocked;
  let compiled: CompiledAgent;
  try {
    compiled = await compileAgent(agent, profile, cachedSources(ctx), selectedSkills(ctx, agent));
  } catch (err) {
    if (!(err instanceof CompileError)) throw err;
    // The Profile's texts (personaFrom, contextFiles[].contentFrom) did not resolve: the Profile is not usable yet.
    if (err.reason.startsWith('ConfigMap')) {
      return notReady(cond('ProfileResolved', 'False', err.reason, `Profile "${profile.metadata.name}": ${err.message}`),
        cond('CredentialsResolved', 'Unknown', 'ProfileNotResolved', 'Waiting for the Profile.'), cond('Ready', 'False', err.reason, `Profile "${profile.metadata.name}": ${err.message}`), { platforms });
    }
    return notReady(profileOk, cond('CredentialsResolved', err.reason === 'CredentialsMissing' ? 'False' : 'Unknown', err.reason, err.message), cond('Ready', 'False', err.reason, err.message), { platforms });
  }
  const hash = revisionHash(compiled);
  const { namespace, name } = agent.metadata;
  const current = await findAgent(ctx.db.pool, namespace, name);
  if (current?.hash !== hash) {
    const { changed } = await publishRevision(ctx.db, compiled);
    if (changed) ctx.log.info({ agent: `${namespace}/${name}`, revision: hash.slice(0, 12) }, 'Published Agent revision');
  }
  await reconcileRuntime(ctx, raw, agent, ctx.runtime);
  const dedicated = agent.spec.runtime.mode === 'dedicated';
  const base = dedicated ? `http://${childName(name)}.${namespace}.svc:8080` : ctx.gatewayUrl;
  const url = `${base}/v1/agents/${namespace}/${name}/messages`;
  // Platforms that receive webhooks (Slack's Events API, Discord's interactions endpoint, Teams, signed webhooks, Telegram unless it long-polls): the URL to paste into the app's settings.
  const hooks = agent.spec.platforms.filter(receivesWebhooks).map((p) => `${base}/hooks/${p.type}/${namespace}/${name}`);
  const sandbox = await sandboxCondition(ctx, compiled);
  return {
    applied: true,
    conditions: [profileOk, cond('CredentialsResolved', 'True', 'Resolved', 'Every referenced Secret and key exists.'), sandbox,
      cond('Ready', 'True', 'Published', `Revision ${hash.slice(0, 12)} is live${dedicated ? ` on dedicated Deployments ${childName(name, 'gateway')} and ${childName(name, 'worker')}` : ''}; send messages to ${url}.`)],
    fields: { profile: profile.metadata.name, platforms, revision: hash, url, openaiModel: `${namespace}/${name}`, ...(hooks.length ? { hooks } : {}) },
  };
}

async function finalize(ctx: OperatorContext, obj: RawObject): Promise<void> {
  // NOTIFY too: a gateway that had the agent cached would otherwise keep listing it and admit messages for it.
  const deleted = await deleteAgent(ctx.db, obj.metadata.namespace, obj.metadata.name);
  ctx.log.info({ agent: keyOf(obj), rows: deleted ? 1 : 0 }, 'Deleted Agent data from Postgres');
  await releaseFinalizer(ctx, 'agents', obj);
}

/**
 * A not-Ready Agent that was published before keeps serving its last revision (a transient problem
 * must not take a working agent down): its Ready message says so, and how to stop it. Deleting an
 * API key's Secret, for one, does not revoke the key; removing the key from spec.api.keys does.
 */
async function sayWhatStillServes(ctx: OperatorContext, namespace: string, name: string, draft: StatusDraft): Promise<StatusDraft> {
  const live = await findAgent(ctx.db.pool, namespace, name);
  if (!live) return draft;
  const serving = ` Revision ${live.hash.slice(0, 12)}, published before, keeps serving until this is fixed; to stop it, delete the Agent (to revoke an API key, remove it from spec.api.keys).`;
  return { ...draft, conditions: draft.conditions.map((c) => (c.type === 'Ready' && c.status === 'False' ? { ...c, message: `${c.message}${serving}` } : c)) };
}

export async function reconcileAgent(ctx: OperatorContext, key: string): Promise<ReconcileResult | void> {
  const { namespace, name } = parseKey(key);
  const obj = ctx.caches.agents.get(name, namespace);
  if (!obj) return;
  if (obj.metadata.deletionTimestamp) return finalize(ctx, obj);
  if (!(await prepare(ctx, 'agents', obj, agentConditions))) return;
  const r = resolve(ctx, obj);
  let draft: StatusDraft;
  try {
    draft = 'draft' in r ? r.draft : await compileAndPublish(ctx, obj, r.agent, r.profile);
  } catch (err) {
    // One line: client-node's own message is the whole HTTP answer, headers included.
    const msg = `Could not publish the revision to Postgres or apply the runtime: ${kubeErrorLine(err)}`;
    await writeStatus(ctx, 'agents', obj, notReady(cond('ProfileResolved', 'True', 'Resolved', 'Profile resolved.'), cond('CredentialsResolved', 'True', 'Resolved', 'Credentials resolved.'), cond('Ready', 'False', 'PublishFailed', msg)));
    await ctx.events.emit(obj, 'Warning', 'PublishFailed', msg);
    throw err;
  }
  if (!draft.applied) draft = await sayWhatStillServes(ctx, namespace, name, draft);
  const ready = draft.conditions.find((c) => c.type === 'Ready')!;
  if (await writeStatus(ctx, 'agents', obj, draft)) {
    ctx.log.info({ agent: key, ready: ready.status, reason: ready.reason }, 'Updated Agent status');
    await ctx.events.emit(obj, ready.status === 'True' ? 'Normal' : 'Warning', ready.reason, ready.message);
  }
  if (ready.reason === SANDBOX_NAMESPACE_NOT_ALLOWED) return { requeueAfterMs: SANDBOX_NAMESPACE_RECHECK_MS };
}
