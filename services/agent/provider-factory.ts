// Builds the provider for a compiled model config, resolving its API key reference.
import type { CompiledModel } from '../core/index.js';
import type { ChatProvider } from './messages.js';
import { OpenAIChatProvider } from './providers/openai.js';
import type { SecretResolver } from './secrets.js';

export class ProviderConfigError extends Error {
  override name = 'ProviderConfigError';
}

export interface ProviderDefaults {
  /** Base URL for provider "openai" when the model sets none (OPENAI_BASE_URL). */
  openaiBaseURL?: string;
  timeoutMs: number;
}

export async function createProvider(model: CompiledModel, secrets: SecretResolver, defaults: ProviderDefaults): Promise<ChatProvider> {
  const apiKey = model.apiKeyRef ? await secrets.resolve(model.apiKeyRef) : undefined;
  if (model.apiKeyRef && !apiKey) {
    throw new ProviderConfigError(`The model's API key is not available: secret "${model.apiKeyRef.name}" key "${model.apiKeyRef.key}" did not resolve.`);
  }
  switch (model.provider) {
    case 'openai':
    case 'openai-compatible': {
      const baseURL = model.baseURL ?? (model.provider === 'openai' ? defaults.openaiBaseURL : undefined);
      if (model.provider === 'openai-compatible' && !baseURL) throw new ProviderConfigError('provider "openai-compatible" needs model.baseURL.');
      // Local OpenAI-compatible servers (Ollama, vLLM) accept any key; the SDK insists on one.
      return new OpenAIChatProvider({ apiKey: apiKey ?? 'unused', ...(baseURL ? { baseURL } : {}), timeoutMs: defaults.timeoutMs });
    }
    case 'anthropic':
      throw new ProviderConfigError('provider "anthropic" arrives with the agent loop; use "openai" or "openai-compatible" for now.');
  }
}
