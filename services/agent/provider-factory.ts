// Builds providers for compiled model configs, resolving API key references in the Agent's
// namespace, and the per-turn route list (primary + fallback chain), each with its process-wide
// credential pool. A key from the environment (`env:`) never goes to a base URL the Profile chose.
import type { CompiledEndpoint, SecretRef } from '../core/index.js';
import { CredentialPool } from './credentials.js';
import type { ChatProvider } from './messages.js';
import type { ModelRoute } from './model-call.js';
import { AnthropicProvider } from './providers/anthropic.js';
import { OpenAIChatProvider } from './providers/openai.js';
import { isEnvRef, type SecretResolver } from './secrets.js';

export class ProviderConfigError extends Error {
  override name = 'ProviderConfigError';
}

export interface ProviderDefaults {
  /** Base URL for provider "openai" when the model sets none (OPENAI_BASE_URL). */
  openaiBaseURL?: string;
  timeoutMs: number;
  /** Override of the stale-stream timeout (default 180 s, 900 s for local servers). */
  staleMs?: number;
}

type ModelEndpoint = Pick<CompiledEndpoint, 'provider' | 'model' | 'baseURL' | 'apiKeyRef' | 'extraApiKeyRefs' | 'pricing'>;

function build(model: ModelEndpoint, apiKey: string | undefined, defaults: ProviderDefaults): ChatProvider {
  const stale = defaults.staleMs !== undefined ? { staleMs: defaults.staleMs } : {};
  switch (model.provider) {
    case 'openai':
    case 'openai-compatible': {
      const baseURL = model.baseURL ?? (model.provider === 'openai' ? defaults.openaiBaseURL : undefined);
      if (model.provider === 'openai-compatible' && !baseURL) throw new ProviderConfigError('provider "openai-compatible" needs model.baseURL.');
      // Local OpenAI-compatible servers (Ollama, vLLM) accept any key; the SDK insists on one.
      return new OpenAIChatProvider({ apiKey: apiKey ?? 'unused', name: model.provider, ...(baseURL ? { baseURL } : {}), timeoutMs: defaults.timeoutMs, ...stale });
    }
    case 'anthropic':
      if (!apiKey) throw new ProviderConfigError('provider "anthropic" needs model.apiKey.');
      return new AnthropicProvider({ apiKey, ...(model.baseURL ? { baseURL: model.baseURL } : {}), timeoutMs: defaults.timeoutMs, ...stale });
  }
}

interface ResolvedKey {
  /** Absent for endpoints without a key reference (local servers). */
  ref?: SecretRef;
  value: string | undefined;
}

const describeRef = (namespace: string, ref: SecretRef) =>
  isEnvRef(ref) ? `environment variable "${ref.key}" (env:)` : `Secret "${ref.name}" key "${ref.key}" in namespace ${namespace}`;

/**
 * A value from the worker's environment belongs to the install, so it only goes where the install
 * points (the provider's default endpoint, or OPENAI_BASE_URL) — never to a baseURL a Profile
 * author typed. A Secret the author may name is theirs to send anywhere.
 */
function refuseEnvKeyToProfileURL(model: ModelEndpoint, ref: SecretRef): void {
  if (!isEnvRef(ref) || !model.baseURL) return;
  throw new ProviderConfigError(`The model's API key comes from the environment variable "${ref.key}" (env:), and keys from the environment are only sent to the provider's default endpoint or the install's OPENAI_BASE_URL, not to the Profile's baseURL ${model.baseURL}. Put the key in a Secret in the Agent's namespace and use apiKey.secretKeyRef.`);
}

async function resolveKey(namespace: string, ref: SecretRef, secrets: SecretResolver, fresh = false): Promise<string | undefined> {
  try {
    return await secrets.resolve(namespace, ref, { fresh });
  } catch (err) {
    throw new ProviderConfigError(`The model's API key (${describeRef(namespace, ref)}) could not be read: ${(err as Error).message}`);
  }
}

async function keysOf(namespace: string, model: ModelEndpoint, secrets: SecretResolver): Promise<ResolvedKey[]> {
  const refs = [...(model.apiKeyRef ? [model.apiKeyRef] : []), ...(model.extraApiKeyRefs ?? [])];
  if (!refs.length) return [{ value: undefined }];
  for (const ref of refs) refuseEnvKeyToProfileURL(model, ref);
  const keys: ResolvedKey[] = [];
  for (const ref of refs) {
    const value = await resolveKey(namespace, ref, secrets);
    if (value) keys.push({ ref, value });
  }
  if (!keys.length) {
    const ref = refs[0]!;
    const why = isEnvRef(ref) ? 'only the variables in HERMES_SECRETS_ENV_ALLOW resolve, and only when set' : `read from ${secrets.source}`;
    throw new ProviderConfigError(`The model's API key did not resolve: ${describeRef(namespace, ref)} was not found (${why}).`);
  }
  return keys;
}

export async function createProvider(namespace: string, model: ModelEndpoint, secrets: SecretResolver, defaults: ProviderDefaults): Promise<ChatProvider> {
  const [key] = await keysOf(namespace, model, secrets);
  return build(model, key!.value, defaults);
}

const fingerprintOf = (keys: readonly ResolvedKey[]) => JSON.stringify(keys.map((k) => k.value?.slice(-6)));

/** One pool per namespace, endpoint, model and key references: tenants never share keys or cursors. */
const routeKey = (namespace: string, m: ModelEndpoint, defaults: ProviderDefaults) =>
  JSON.stringify([namespace, m.provider, m.baseURL ?? defaults.openaiBaseURL ?? '', m.model, m.apiKeyRef ?? null, m.extraApiKeyRefs ?? []]);

/** Routes (primary, then fallbacks) with credential pools kept for the life of the worker. */
export class ModelRouter {
  private readonly pools = new Map<string, { fingerprint: string; pool: CredentialPool }>();
  constructor(private readonly secrets: SecretResolver, private readonly defaults: ProviderDefaults) {}

  /** The route of `model` for an Agent of `namespace` (whose Secrets its keys are read from). */
  async route(namespace: string, model: ModelEndpoint): Promise<ModelRoute> {
    const key = routeKey(namespace, model, this.defaults);
    const keys = await keysOf(namespace, model, this.secrets);
    const fingerprint = fingerprintOf(keys);
    let entry = this.pools.get(key);
    if (!entry || entry.fingerprint !== fingerprint) {
      // Auth errors re-resolve the failing key's reference (refresh before rotation).
      const refresh = async (i: number): Promise<ChatProvider | undefined> => {
        const k = keys[i];
        if (!k?.ref) return undefined;
        const value = await resolveKey(namespace, k.ref, this.secrets, true);
        if (!value || value === k.value) return undefined;
        k.value = value;
        // The next turn's route() resolves the same new value: keep this pool (and its cursor).
        const current = this.pools.get(key);
        if (current?.pool === pool) current.fingerprint = fingerprintOf(keys);
        return build(model, value, this.defaults);
      };
      const pool = new CredentialPool(key, keys.map((k) => build(model, k.value, this.defaults)), refresh);
      entry = { fingerprint, pool };
      this.pools.set(key, entry);
    }
    return { key, model: model.model, pool: entry.pool, ...(model.pricing ? { price: model.pricing } : {}) };
  }

  async routes(namespace: string, primary: ModelEndpoint, fallbacks: readonly ModelEndpoint[] = []): Promise<ModelRoute[]> {
    const out = [await this.route(namespace, primary)];
    for (const f of fallbacks) {
      // A fallback that cannot be built (missing key) is skipped, not fatal: the primary may work.
      const r = await this.route(namespace, f).catch(() => undefined);
      if (r) out.push(r);
    }
    return out;
  }
}
