// The cost of a model call: what the provider reported ("actual", e.g. OpenRouter's usage.cost),
// else an estimate from a price table (USD per million tokens). The built-in table covers common
// hosted models; a Profile's `model.pricing` overrides it. Local endpoints without a configured
// price cost nothing ("included"); an unknown model is "unknown", never guessed.
import type { Usage } from './messages.js';

export interface Price {
  inputPerMTok: number;
  outputPerMTok: number;
  cacheReadPerMTok?: number;
  cacheWritePerMTok?: number;
}

/** `actual`: the provider reported the charge; `estimated`: from the price table; `included`: a local endpoint; `unknown`: no price. */
export type CostStatus = 'actual' | 'estimated' | 'unknown' | 'included';

export interface CostEstimate {
  costUsd: number | null;
  status: CostStatus;
}

/** Longest matching prefix wins (so "gpt-4o-mini" is not priced as "gpt-4o"). */
export const BUILTIN_PRICES: Readonly<Record<string, Price>> = {
  'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10, cacheReadPerMTok: 1.25 },
  'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6, cacheReadPerMTok: 0.075 },
  'gpt-4.1': { inputPerMTok: 2, outputPerMTok: 8, cacheReadPerMTok: 0.5 },
  'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6, cacheReadPerMTok: 0.1 },
  'o3': { inputPerMTok: 2, outputPerMTok: 8, cacheReadPerMTok: 0.5 },
  'claude-opus-4': { inputPerMTok: 15, outputPerMTok: 75, cacheReadPerMTok: 1.5, cacheWritePerMTok: 18.75 },
  'claude-sonnet-4': { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3, cacheWritePerMTok: 3.75 },
  'claude-3-5-haiku': { inputPerMTok: 0.8, outputPerMTok: 4, cacheReadPerMTok: 0.08, cacheWritePerMTok: 1 },
};

export function priceFor(model: string, override?: Price): Price | undefined {
  if (override) return override;
  const key = Object.keys(BUILTIN_PRICES).filter((k) => model === k || model.startsWith(`${k}-`)).sort((a, b) => b.length - a.length)[0];
  return key ? BUILTIN_PRICES[key] : undefined;
}

/**
 * OpenAI-style usage counts cached tokens inside `inputTokens`; Anthropic reports them apart.
 * Either way each token is billed once, at its own rate.
 */
export function estimateCost(opts: { provider: string; model: string; local?: boolean; usage: Usage; price?: Price }): CostEstimate {
  // What the provider charged beats any table (OpenRouter reports it per call).
  if (opts.usage.costUsd !== undefined) return { costUsd: Math.round(opts.usage.costUsd * 1e6) / 1e6, status: 'actual' };
  // A configured price wins even for local endpoints (an internal charge-back rate).
  if (opts.local && !opts.price) return { costUsd: 0, status: 'included' };
  const price = priceFor(opts.model, opts.price);
  if (!price) return { costUsd: null, status: 'unknown' };
  const u = opts.usage;
  const uncachedInput = opts.provider === 'anthropic' ? u.inputTokens : Math.max(0, u.inputTokens - u.cacheReadTokens - u.cacheWriteTokens);
  const usd = (uncachedInput * price.inputPerMTok
    + u.outputTokens * price.outputPerMTok
    + u.cacheReadTokens * (price.cacheReadPerMTok ?? price.inputPerMTok)
    + u.cacheWriteTokens * (price.cacheWritePerMTok ?? price.inputPerMTok)) / 1_000_000;
  return { costUsd: Math.round(usd * 1e6) / 1e6, status: 'estimated' };
}
