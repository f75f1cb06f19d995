// Which finished turns get a background review (the learning loop): one rule, used where a turn
// ends (to queue the job) and where the job runs (in case the agent changed meanwhile).
import type { CompiledAgent } from '../core/index.js';

/** Why a turn with this outcome on this platform gets no review from `agent`, or undefined when it does. */
export function reviewSkipReason(turn: { outcome: string | null; platform: string }, agent: Pick<CompiledAgent, 'learning'> | undefined): string | undefined {
  if (turn.outcome !== 'completed') return `the turn ended ${turn.outcome ?? 'without an outcome'}`;
  if (turn.platform === 'cron') return 'cron turns are not reviewed';
  if (turn.platform === 'subagent') return 'delegated children are not reviewed';
  if (!agent?.learning?.backgroundReview) return 'background review is off for this agent';
  return undefined;
}
