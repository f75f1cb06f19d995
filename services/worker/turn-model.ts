// The agent's model settings for a loop: the routes (primary, then fallbacks) and the options the
// loop takes from the Profile. Shared by turns and background reviews.
import type { CompiledAgent, CompiledMoaPreset, TurnResult } from '../core/index.js';
import { moaRoute, ProviderConfigError, type Clock, type CooldownBook, type ModelRoute, type ModelRouter, type RetryPolicy } from '../agent/index.js';

/** What of a worker's loop state the model settings use (turn-runner's LoopDeps has it). */
export interface ModelLoopDeps {
  router: ModelRouter;
  cooldowns: CooldownBook;
  clock?: Clock;
  policy?: RetryPolicy;
  /** How long one Mixture-of-Agents reference may take (tests shorten it). @defaultValue MOA_REFERENCE_TIMEOUT_MS (120 s) */
  moaReferenceTimeoutMs?: number;
}

/** Model options of the agent, for the loop (absent fields stay absent). */
export function modelOptions(agent: CompiledAgent, loop: ModelLoopDeps) {
  return {
    ...(agent.maxIterations ? { maxIterations: agent.maxIterations } : {}),
    ...(agent.model.maxOutputTokens ? { maxOutputTokens: agent.model.maxOutputTokens } : {}),
    ...(agent.model.temperature !== undefined ? { temperature: agent.model.temperature } : {}),
    cooldowns: loop.cooldowns,
    ...(loop.clock ? { clock: loop.clock } : {}),
    ...(loop.policy ? { policy: loop.policy } : {}),
  };
}

/** The route of a Mixture-of-Agents preset: its members' routes, in a provider kept for this turn only (its advice cache). */
async function presetRoute(loop: ModelLoopDeps, agent: CompiledAgent, preset: CompiledMoaPreset): Promise<ModelRoute> {
  const ns = agent.agent.namespace;
  const references = await Promise.all(preset.referenceModels.map((m) => loop.router.route(ns, m)));
  const aggregator = await loop.router.route(ns, preset.aggregator);
  const key = `moa:${ns}/${agent.profile.name}:${preset.name}`;
  return moaRoute(key, {
    name: preset.name, references, aggregator, referenceTemperature: preset.referenceTemperature, aggregatorTemperature: preset.aggregatorTemperature,
    maxTokens: preset.maxTokens, fanout: preset.fanout,
  }, { ...(loop.clock ? { clock: loop.clock } : {}), cooldowns: loop.cooldowns, ...(loop.moaReferenceTimeoutMs !== undefined ? { referenceTimeoutMs: loop.moaReferenceTimeoutMs } : {}) });
}

/**
 * The turn's routes: the primary (a Mixture-of-Agents preset when its provider is `moa`, or when
 * `preset` names one for `/moa`), then the fallbacks.
 */
export async function routesOf(loop: ModelLoopDeps, agent: CompiledAgent, preset?: string): Promise<ModelRoute[] | TurnResult> {
  const ns = agent.agent.namespace;
  const { provider } = agent.model;
  try {
    if (preset === undefined && provider !== 'moa') return await loop.router.routes(ns, { ...agent.model, provider }, agent.fallbackModels ?? []);
    const name = preset ?? agent.model.model;
    const p = agent.moa?.presets.find((x) => x.name === name);
    if (!p) throw new ProviderConfigError(`Mixture-of-Agents preset "${name}" is not in the Profile's spec.moa.presets.`);
    // Fallbacks as for any model: one that cannot be built (missing key) is skipped.
    const fallbacks = await Promise.all((agent.fallbackModels ?? []).map((f) => loop.router.route(ns, f).catch(() => undefined)));
    return [await presetRoute(loop, agent, p), ...fallbacks.filter((r): r is ModelRoute => r !== undefined)];
  } catch (err) {
    if (err instanceof ProviderConfigError) return { outcome: 'failed', reply: 'This agent is misconfigured: an operator needs to fix its model settings.', error: err.message };
    throw err;
  }
}
