// The compile step: Agent + Profile (+ resolved references) → an immutable CompiledAgent. The
// operator runs it on reconcile; `hermes dev` runs the very same code on manifest files, so a
// manifest that works locally works in a cluster.
import { sha256, type CompiledAgent, type CompiledEndpoint } from '../services/core/index.js';
import type { Agent } from './api/agent.js';
import type { Profile } from './api/profile.js';
import { secretRefOf } from './api/common.js';
import { resolveProfileTexts, type ConfigMapLookup } from './texts.js';
import { compileSandbox } from './compile-sandbox.js';
import { mcpFields } from './compile-mcp.js';
import { CompileError } from './compile-error.js';

/**
 * Looks up secret values during compile: a Secret of the object's namespace (in dev: Secret
 * manifests, then allow-listed variables); an empty name is an allow-listed `env:` variable.
 */
export interface SecretLookup {
  value(namespace: string, ref: { name: string; key: string }): Promise<string | undefined>;
}

/** Where compile reads what the manifests reference. */
export interface CompileSources {
  secrets: SecretLookup;
  /** ConfigMaps for `personaFrom` / `contextFiles[].contentFrom` (the watched cache; in dev, ConfigMap manifests). */
  configMaps: ConfigMapLookup;
}

export { CompileError } from './compile-error.js';

/** A published Skill version an agent offers (resolved by the operator from Postgres). */
export type CompiledSkillRef = NonNullable<CompiledAgent['skills']>[number];

export async function compileAgent(agent: Agent, profile: Profile, sources: CompileSources, skills: CompiledSkillRef[] = []): Promise<CompiledAgent> {
  const ns = agent.metadata.namespace;
  if (profile.metadata.name !== agent.spec.profileRef.name || profile.metadata.namespace !== ns) {
    throw new CompileError('ProfileMismatch', `Agent ${ns}/${agent.metadata.name} references Profile "${agent.spec.profileRef.name}", got ${profile.metadata.namespace}/${profile.metadata.name}.`);
  }
  const resolved = resolveProfileTexts(profile, sources.configMaps);
  if ('problem' in resolved) throw new CompileError(resolved.problem.reason, resolved.problem.message);
  const { persona, contextFiles } = resolved.texts;
  const keys = await hashApiKeys(agent, sources.secrets);
  await checkPlatformCredentials(agent, sources.secrets);
  return {
    apiVersion: 'hermes.dev/v1alpha1',
    agent: { namespace: ns, name: agent.metadata.name, ...(agent.metadata.generation !== undefined ? { generation: agent.metadata.generation } : {}) },
    profile: { namespace: profile.metadata.namespace, name: profile.metadata.name },
    ...modelFields(profile),
    persona,
    api: compileApi(agent.spec.api.enabled, keys),
    busyPolicy: agent.spec.busyPolicy,
    ...runFields(agent),
    ...(agent.spec.platforms?.length ? { platforms: agent.spec.platforms.map(compilePlatform) } : {}),
    ...(agent.spec.admins?.length ? { admins: agent.spec.admins } : {}),
    ...(agent.spec.access ? { access: compileAccess(agent.spec.access) } : {}),
    ...messagingFields(agent),
    ...(skills.length ? { skills } : {}),
    ...(contextFiles.length ? { contextFiles } : {}),
    ...loopFields(profile),
  };
}

/** The Agent's emergency stop and its cap on concurrent sessions (absent when unset). */
function runFields(agent: Agent): Partial<CompiledAgent> {
  return {
    ...(agent.spec.stopped ? { stopped: true } : {}),
    ...(agent.spec.maxConcurrentSessions !== undefined ? { maxConcurrentSessions: agent.spec.maxConcurrentSessions } : {}),
  };
}

/** send_message targets; each one's platform must be one of the Agent's (its credentials send it). */
function messagingFields(agent: Agent): Partial<CompiledAgent> {
  const m = agent.spec.messaging;
  if (!m || (m.homeChannels.length === 0 && m.allowedTargets.length === 0)) return {};
  const names = m.homeChannels.map((h) => h.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw new CompileError('InvalidMessaging', `spec.messaging.homeChannels names "${twice}" twice: home channel names must be unique.`);
  const platforms = new Set<string>((agent.spec.platforms ?? []).map((p) => p.type));
  for (const t of [...m.homeChannels.map((h) => h.target), ...m.allowedTargets]) {
    const platform = t.split(':')[0]!;
    if (!platforms.has(platform)) throw new CompileError('InvalidMessaging', `spec.messaging names ${t}, but this Agent has no ${platform} platform (spec.platforms): send_message sends with the Agent's own platform credentials.`);
  }
  return { messaging: { homeChannels: m.homeChannels.map((h) => ({ name: h.name, target: h.target })), allowedTargets: m.allowedTargets } };
}

/** Agent-loop settings of the Profile (absent stays absent: the agent applies its defaults). */
function loopFields(profile: Profile): Partial<CompiledAgent> {
  const p = profile.spec;
  return {
    ...(p.toolsets ? { toolsets: p.toolsets } : {}),
    ...(p.maxIterations ? { maxIterations: p.maxIterations } : {}),
    ...(p.spendCaps ? { spendCaps: p.spendCaps } : {}),
    ...(p.delegation && Object.keys(p.delegation).length ? { delegation: p.delegation } : {}),
    ...memoryFields(p),
    ...learningFields(p),
    ...webFields(p),
    ...mcpFields(p),
    ...(p.codeExecution && Object.keys(p.codeExecution).length ? { codeExecution: p.codeExecution } : {}),
    ...(p.clarify ? { clarify: { timeoutSeconds: p.clarify.timeoutSeconds } } : {}),
    ...compileSandbox(p),
  };
}

function memoryFields(p: Profile['spec']): Partial<CompiledAgent> {
  const { memoryCharLimit, userCharLimit } = p.memory ?? {};
  const limits = { ...(memoryCharLimit ? { memoryCharLimit } : {}), ...(userCharLimit ? { userCharLimit } : {}) };
  return Object.keys(limits).length ? { memory: limits } : {};
}

/** The web toolset's provider (its key by reference) and page limits. */
function webFields(p: Profile['spec']): Partial<CompiledAgent> {
  if (!p.web) return {};
  const { search, extract } = p.web;
  return {
    web: {
      ...(search ? { search: { provider: search.provider, ...(search.url ? { url: search.url } : {}), ...(search.apiKey ? { apiKeyRef: secretRefOf(search.apiKey) } : {}) } } : {}),
      ...(extract?.maxChars ? { maxChars: extract.maxChars } : {}),
      ...(extract?.summariseAboveChars ? { summariseAboveChars: extract.summariseAboveChars } : {}),
    },
  };
}

/** The learning loop's switches; absent ones stay absent (the agent applies its defaults). */
function learningFields(p: Profile['spec']): Partial<CompiledAgent> {
  const learning = {
    ...(p.learning?.backgroundReview ? { backgroundReview: true } : {}),
    ...(p.memory?.writeApproval !== undefined ? { memoryWriteApproval: p.memory.writeApproval } : {}),
    ...(p.skills?.writeApproval !== undefined ? { skillWriteApproval: p.skills.writeApproval } : {}),
  };
  return Object.keys(learning).length ? { learning } : {};
}

type ModelSpec = Profile['spec']['fallbackModels'][number];

/** The model (an endpoint, or a Mixture-of-Agents preset), its fallbacks and the presets. */
function modelFields(profile: Profile): Pick<CompiledAgent, 'model' | 'fallbackModels' | 'moa'> {
  const m = profile.spec.model;
  return {
    model: m.provider === 'moa' ? { provider: 'moa', model: m.model } : compileModel({ ...m, provider: m.provider }),
    ...(profile.spec.fallbackModels?.length ? { fallbackModels: profile.spec.fallbackModels.map(compileModel) } : {}),
    ...(profile.spec.moa ? { moa: compileMoa(profile.spec.moa) } : {}),
  };
}

/** Mixture-of-Agents presets; the default preset is the first unless named. */
function compileMoa(m: NonNullable<Profile['spec']['moa']>): NonNullable<CompiledAgent['moa']> {
  return {
    defaultPreset: m.defaultPreset ?? m.presets[0]!.name,
    presets: m.presets.map((p) => ({
      name: p.name, referenceModels: p.referenceModels.map(compileModel), aggregator: compileModel(p.aggregator),
      referenceTemperature: p.referenceTemperature, aggregatorTemperature: p.aggregatorTemperature, maxTokens: p.maxTokens, fanout: p.fanout,
    })),
  };
}

function compileModel(m: ModelSpec): CompiledEndpoint {
  if (!m.provider || !m.model) throw new CompileError('InvalidProfile', 'each fallback model needs provider and model');
  return {
    provider: m.provider, model: m.model,
    ...(m.baseURL ? { baseURL: m.baseURL } : {}),
    ...(m.apiKey ? { apiKeyRef: secretRefOf(m.apiKey) } : {}),
    ...(m.contextWindow ? { contextWindow: m.contextWindow } : {}),
    ...(m.maxOutputTokens ? { maxOutputTokens: m.maxOutputTokens } : {}),
    ...(m.temperature !== undefined ? { temperature: m.temperature } : {}),
    ...(m.extraApiKeys?.length ? { extraApiKeyRefs: m.extraApiKeys.map(secretRefOf) } : {}),
    ...(m.pricing ? { pricing: m.pricing } : {}),
  };
}

type Grant = Partial<Record<'toolsets' | 'commands', string[]> & Record<'approve' | 'admin', boolean>>;
const grantOf = (g: Grant): Grant => ({
  ...(g.toolsets ? { toolsets: g.toolsets } : {}), ...(g.commands ? { commands: g.commands } : {}),
  ...(g.approve !== undefined ? { approve: g.approve } : {}), ...(g.admin !== undefined ? { admin: g.admin } : {}),
});

function compileAccess(a: NonNullable<Agent['spec']['access']>): NonNullable<CompiledAgent['access']> {
  return {
    default: grantOf(a.default),
    groups: a.groups.map((g) => ({ name: g.name, members: g.members, chats: g.chats, ...grantOf(g) })),
    users: a.users.map((u) => ({ match: u.match, ...grantOf(u) })),
  };
}

function compilePlatform(p: Agent['spec']['platforms'][number]): NonNullable<CompiledAgent['platforms']>[number] {
  return {
    type: p.type, credentialsSecret: p.credentials.secretRef.name, allowlist: p.allowlist, allowAll: p.allowAll, dmPairing: p.dmPairing, groupPolicy: p.groupPolicy,
    ...(p.apiUrl ? { apiUrl: p.apiUrl } : {}),
    ...(p.toolsets ? { toolsets: p.toolsets } : {}),
    ...(p.callbackUrl ? { callbackUrl: p.callbackUrl } : {}),
    ...(p.mode ? { mode: p.mode } : {}),
  };
}

type CompiledKey = NonNullable<CompiledAgent['api']['keys']>[number];

/** The key index, and each key's binding when any key has one (without: every key speaks only for itself). */
function compileApi(enabled: boolean, keys: CompiledKey[]): CompiledAgent['api'] {
  const bound = keys.some((k) => k.user !== undefined || k.trustedBackend);
  return { enabled, keySha256: keys.map((k) => k.sha256), ...(bound ? { keys } : {}) };
}

async function hashApiKeys(agent: Agent, secrets: SecretLookup): Promise<CompiledKey[]> {
  const ns = agent.metadata.namespace;
  const out: CompiledKey[] = [];
  for (const k of agent.spec.api.keys) {
    const ref = secretRefOf(k);
    const v = await secrets.value(ns, ref);
    // One message whether an env variable is set or merely not allowed: no oracle on the environment.
    if (!v) throw new CompileError('CredentialsMissing', ref.name ? `API key secret "${ref.name}" key "${ref.key}" was not found in namespace ${ns}.` : `API key environment variable "${ref.key}" (env:) is not available: only the variables in HERMES_SECRETS_ENV_ALLOW resolve, and only when set. Prefer a secretKeyRef.`);
    out.push({ sha256: sha256(v), ...(k.user !== undefined ? { user: k.user } : {}), ...(k.trustedBackend ? { trustedBackend: true } : {}) });
  }
  return out;
}

async function checkPlatformCredentials(agent: Agent, secrets: SecretLookup): Promise<void> {
  const ns = agent.metadata.namespace;
  for (const p of agent.spec.platforms ?? []) {
    const name = p.credentials.secretRef.name;
    for (const key of p.credentials.keys) {
      if (await secrets.value(ns, { name, key })) continue;
      throw new CompileError('CredentialsMissing', `${p.type} credentials: Secret "${name}" has no key "${key}" in namespace ${ns} (create it with kubectl -n ${ns} create secret generic ${name} --from-literal=${key}=…).`);
    }
  }
}
