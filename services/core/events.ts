// Turn events over Redis pub/sub: streamed text deltas and "something changed" pings that let
// gateways answer waiting callers at once. Only a latency aid: waiters always re-read Postgres,
// which stays the source of truth, and poll it too, so a lost message only costs latency.
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { admissionChannel } from './queues.js';

export const turnEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('delta'), text: z.string() }),
  z.object({ type: z.literal('changed') }),
  /** A command waits for `/approve` or `/deny` (status pending), or its approval ended. */
  z.object({ type: z.literal('approval'), approval: z.object({
    id: z.string(), status: z.string(), command: z.string(), reason: z.string(), expiresAt: z.string(),
    /** What to tell the user, in words. */
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
