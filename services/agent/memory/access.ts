// What one turn's `memory` calls may reach: the stores of this agent and of this conversation's
// person, bound by the worker from the admission — the model never names a store's owner.
import type { CompiledAgent } from '../../core/index.js';
import type { MemoryTarget } from './entries.js';
import { renderMemoryBlock } from './snapshot.js';
import type { MemoryStore } from './store.js';
import type { StagingStore } from '../learning/staging.js';

export interface MemoryAccess {
  store: MemoryStore;
  agentId: string;
  /** The person of this conversation (users.id); absent: no USER store (e.g. an anonymous API call). */
  userId?: string;
  sessionId: string;
  limits: Record<MemoryTarget, number>;
  /** Failed calls in a row this turn (reset by a success). */
  failures: number;
  /** Present when writes wait for an admin (write approval): they are staged here instead. */
  approval?: StagingStore;
}

/** Hermes' sizes: MEMORY 2 200 and USER 1 375 characters. */
export const DEFAULT_MEMORY_LIMITS: Readonly<Record<MemoryTarget, number>> = { memory: 2_200, user: 1_375 };

/** The store sizes of an agent (Profile `spec.memory`, else the defaults). */
export function memoryLimits(agent: Pick<CompiledAgent, 'memory'>): Record<MemoryTarget, number> {
  return {
    memory: agent.memory?.memoryCharLimit ?? DEFAULT_MEMORY_LIMITS.memory,
    user: agent.memory?.userCharLimit ?? DEFAULT_MEMORY_LIMITS.user,
  };
}

/**
 * The frozen snapshot for a prompt being built now: the agent's MEMORY and this person's USER,
 * rendered with their usage headers (empty stores render nothing).
 */
export async function memorySnapshot(access: Pick<MemoryAccess, 'store' | 'agentId' | 'userId' | 'limits'>): Promise<{ memory?: string; user?: string }> {
  const memory = await access.store.read({ agentId: access.agentId, target: 'memory' });
  const user = access.userId ? await access.store.read({ agentId: access.agentId, target: 'user', userId: access.userId }) : undefined;
  const memoryBlock = renderMemoryBlock('memory', memory.entries, access.limits.memory);
  const userBlock = user ? renderMemoryBlock('user', user.entries, access.limits.user) : '';
  return { ...(memoryBlock ? { memory: memoryBlock } : {}), ...(userBlock ? { user: userBlock } : {}) };
}
