// The model fields of a Profile: one endpoint (provider, model, key by reference, pricing), the
// fallback chain's entries, and the primary's `moa` provider (a Mixture-of-Agents preset).
import { z } from 'zod';
import { secretValueSchema, specLimits, withRules, type Rule } from './common.js';

const usdPerMTok = z.number().min(0).max(specLimits.usdPerMTok);

/** A model endpoint: every model field but the `moa` provider (fallbacks, Mixture-of-Agents members). */
export const endpointModelSchema = z.object({
  provider: z.enum(['openai', 'anthropic', 'openai-compatible']).describe('API flavour of the model endpoint.'),
  model: z.string().min(1).max(specLimits.modelId).describe('Model name as the provider knows it.'),
  baseURL: z.string().max(specLimits.url).url().optional().describe('Endpoint base URL (required for openai-compatible; for openai defaults to OPENAI_BASE_URL or api.openai.com).'),
  apiKey: secretValueSchema.optional().describe('API key of the model endpoint.'),
  contextWindow: z.number().int().positive().max(specLimits.contextWindowTokens).optional().describe(`Context window in tokens (default: detected per model; at most ${specLimits.contextWindowTokens}).`),
  maxOutputTokens: z.number().int().positive().max(specLimits.outputTokens).optional().describe(`Output tokens of one model call at most (at most ${specLimits.outputTokens}; the provider's own limit applies too).`),
  temperature: z.number().min(0).max(2).optional(),
  extraApiKeys: z.array(secretValueSchema).max(16).optional().describe('More API keys for the same endpoint: the credential pool rotates through them on rate limits, billing and auth errors.'),
  pricing: z.object({
    inputPerMTok: usdPerMTok,
    outputPerMTok: usdPerMTok,
    cacheReadPerMTok: usdPerMTok.optional(),
    cacheWritePerMTok: usdPerMTok.optional(),
  }).optional().describe(`USD per million tokens (at most ${specLimits.usdPerMTok} each), for cost estimates and spend caps (default: the built-in price table; local endpoints count as free).`),
});

/** The Profile's model: an endpoint, or `provider: moa` with a Mixture-of-Agents preset (spec.moa) as the model name. */
export const modelSpecSchema = endpointModelSchema.extend({
  provider: z.enum(['openai', 'anthropic', 'openai-compatible', 'moa']).describe('API flavour of the model endpoint; moa: a Mixture-of-Agents preset of spec.moa.presets, named by model.'),
  model: z.string().min(1).max(specLimits.modelId).describe('Model name as the provider knows it (provider moa: the preset\'s name).'),
});

type ModelKeys = { baseURL?: string | undefined; apiKey?: { env?: string | undefined } | undefined; extraApiKeys?: { env?: string | undefined }[] | undefined };

/**
 * A key from the Hermes processes' environment belongs to the install: it is only sent to the
 * provider's default endpoint or the install's OPENAI_BASE_URL, never to a baseURL the Profile
 * chose (docs/adr/0001-secrets-by-reference.md). The worker enforces it too.
 */
export const envKeyRule: Rule<ModelKeys> = {
  rule: '!has(self.baseURL) || ((!has(self.apiKey) || !has(self.apiKey.env)) && (!has(self.extraApiKeys) || self.extraApiKeys.all(k, !has(k.env))))',
  message: 'an API key from env is only sent to the provider\'s default endpoint or the install\'s OPENAI_BASE_URL; with baseURL set, put the key in a Secret and use secretKeyRef',
  check: (m) => !m.baseURL || (!m.apiKey?.env && !(m.extraApiKeys ?? []).some((k) => k.env !== undefined)),
};

/** A fallback model: the same fields; provider and model are checked by a rule so the message says which entry is incomplete. */
export const fallbackModelSchema = withRules(endpointModelSchema.partial({ provider: true, model: true }), [{
  rule: 'has(self.provider) && has(self.model) && size(self.model) > 0',
  message: 'each fallback model needs provider and model',
  check: (m) => m.provider !== undefined && !!m.model,
}, envKeyRule]);

