// Builds providers for compiled model configs, resolving API key references, and the per-turn
// route list (primary + fallback chain), each with its process-wide credential pool.
import type { CompiledModel, SecretRef } from '../core/index.js';
import { CredentialPool } from './credentials.js';
import type { ChatProvider } from './messages.js';
import type { ModelRoute } from './model-call.js';
import { AnthropicProvider } from './providers/anthropic.js';
import { OpenAIChatProvider } from './providers/openai.js';
import type { SecretResolver } from './secrets.js';

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

type ModelEndpoint = Pick<CompiledModel, 'provider' | 'model' | 'baseURL' | 'apiKeyRef' | 'extraApiKeyRefs'>;

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

async function keysOf(model: ModelEndpoint, secrets: SecretResolver): Promise<ResolvedKey[]> {
  const refs = [...(model.apiKeyRef ? [model.apiKeyRef] : []), ...(model.extraApiKeyRefs ?? [])];
  if (!refs.length) return [{ value: undefined }];
  const keys: ResolvedKey[] = [];
  for (const ref of refs) {
    const value = await secrets.resolve(ref);
    if (value) keys.push({ ref, value });
  }
  if (!keys.length) {
    const ref = refs[0]!;
    throw new ProviderConfigError(`The model's API key is not available: secret "${ref.name}" key "${ref.key}" did not resolve.`);
  }
  return keys;
}

export async function createProvider(model: ModelEndpoint, secrets: SecretResolver, defaults: ProviderDefaults): Promise<ChatProvider> {
  const [key] = await keysOf(model, secrets);
  return build(model, key!.value, defaults);
}

const fingerprintOf = (keys: readonly ResolvedKey[]) => JSON.stringify(keys.map((k) => k.value?.slice(-6)));

const routeKey = (m: ModelEndpoint, defaults: ProviderDefaults) => `${m.provider}|${m.baseURL ?? defaults.openaiBaseURL ?? ''}|${m.model}`;

/** Routes (primary, then fallbacks) with credential pools kept for the life of the worker. */
export class ModelRouter {
  private readonly pools = new Map<string, { fingerprint: string; pool: CredentialPool }>();
  constructor(private readonly secrets: SecretResolver, private readonly defaults: ProviderDefaults) {}

  async route(model: ModelEndpoint): Promise<ModelRoute> {
    const key = routeKey(model, this.defaults);
    const keys = await keysOf(model, this.secrets);
    const fingerprint = fingerprintOf(keys);
    let entry = this.pools.get(key);
    if (!entry || entry.fingerprint !== fingerprint) {
      // Auth errors re-resolve the failing key's reference (refresh before rotation).
      const refresh = async (i: number): Promise<ChatProvider | undefined> => {
        const k = keys[i];
        if (!k?.ref) return undefined;
        const value = await this.secrets.resolve(k.ref);
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
    return { key, model: model.model, pool: entry.pool };
  }

  async routes(primary: ModelEndpoint, fallbacks: readonly ModelEndpoint[] = []): Promise<ModelRoute[]> {
    const out = [await this.route(primary)];
    for (const f of fallbacks) {
      // A fallback that cannot be built (missing key) is skipped, not fatal: the primary may work.
      const r = await this.route(f).catch(() => undefined);
      if (r) out.push(r);
    }
    return out;
  }
}
