// Tool call ids the loop hands on must be unique in the conversation: a tool result answers its
// call by id, and side effects are keyed to it (send_message's delivery obligation is
// 'send:<call id>' per turn, so a repeated id reads as the same call and is not sent again).
// Providers issue the ids, and not all make them unique: an OpenAI-compatible server that sends
// none gets `call_<index>` for every response, and some servers number their calls per response.
import { randomUUID } from 'node:crypto';
import type { ChatMessage, ToolCall } from './messages.js';

/**
 * `calls` with every id that is empty or already used — by a call in `history` or earlier in
 * `calls` — replaced by a fresh one (the original id with a random suffix). Calls whose id is new
 * are returned as they are. Run before the calls are persisted, so a replay reads the same ids.
 */
export function uniqueCallIds(calls: readonly ToolCall[], history: readonly ChatMessage[]): ToolCall[] {
  const seen = new Set<string>();
  for (const m of history) for (const c of m.toolCalls ?? []) seen.add(c.id);
  return calls.map((c) => {
    const id = c.id && !seen.has(c.id) ? c.id : `${c.id || 'call'}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    seen.add(id);
    return id === c.id ? c : { ...c, id };
  });
}
