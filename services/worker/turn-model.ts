// The agent's model settings for a loop: the routes (primary, then fallbacks) and the options the
// loop takes from the Profile. Shared by turns and background reviews.
import type { CompiledAgent, TurnResult } from '../core/index.js';
import { ProviderConfigError, type Clock, type CooldownBook, type ModelRoute, type ModelRouter, type RetryPolicy } from '../agent/index.js';

/** What of a worker's loop state the model settings use (turn-runner's LoopDeps has it). */
export interface ModelLoopDeps {
  router: ModelRouter;
  cooldowns: CooldownBook;
  clock?: Clock;
  policy?: RetryPolicy;
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

export async function routesOf(loop: ModelLoopDeps, agent: CompiledAgent): Promise<ModelRoute[] | TurnResult> {
  try {
    return await loop.router.routes(agent.agent.namespace, agent.model, agent.fallbackModels ?? []);
  } catch (err) {
    if (err instanceof ProviderConfigError) return { outcome: 'failed', reply: 'This agent is misconfigured: an operator needs to fix its model settings.', error: err.message };
    throw err;
  }
}
