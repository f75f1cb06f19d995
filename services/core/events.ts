// Turn events over Redis pub/sub: streamed text deltas and "something changed" pings that let
// gateways answer waiting callers at once. Only a latency aid: Postgres stays the source of truth
// and waiters poll it too, so a lost message only costs latency. A finished turn's "changed" is
// published after its transaction committed and carries what that wrote, so waiters need not read
// it back (gateway waiter.ts).
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { admissionChannel } from './queues.js';

export const turnEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('delta'), text: z.string() }),
  /**
   * The admission changed. `end`, sent only after the transaction that ended the turn committed,
   * carries what it wrote (outcome, reply obligation, final usage), so a waiter can answer without
   * reading it back; without `end` a waiter reads Postgres.
   */
  z.object({ type: z.literal('changed'), end: z.object({
    outcome: z.enum(['completed', 'failed', 'interrupted']),
    reply: z.object({
      id: z.string(), agentId: z.string(), sessionId: z.string(), platform: z.string(), target: z.unknown(), content: z.string(),
      state: z.enum(['pending', 'delivered']),
    }),
    usage: z.object({ inputTokens: z.number(), outputTokens: z.number() }),
  }).optional() }),
  /** A command waits for `/approve` or `/deny` (status pending), or its approval ended. */
  z.object({ type: z.literal('approval'), approval: z.object({
    id: z.string(), status: z.string(), command: z.string(), reason: z.string(), expiresAt: z.string(),
    /** What to tell the user, in words. */
    message: z.string(),
  }) }),
  /** A clarify question waits for the user's next message (status pending), or its wait ended. */
  z.object({ type: z.literal('clarify'), clarify: z.object({
    id: z.string(), status: z.string(), question: z.string(), choices: z.array(z.string()).nullable(), expiresAt: z.string(),
    /** The question as the chat shows it (numbered choices, how to answer). */
    message: z.string(),
  }) }),
]);
export type TurnEvent = z.infer<typeof turnEventSchema>;

export async function publishTurnEvent(redis: Redis, prefix: string, admissionId: string, event: TurnEvent): Promise<void> {
  await redis.publish(admissionChannel(prefix, admissionId), JSON.stringify(event));
}

export function parseTurnEvent(raw: string): TurnEvent | undefined {
  try {
    const r = turnEventSchema.safeParse(JSON.parse(raw));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}
