// `session_search`: recall from the agent's past conversations, with Hermes' calling shapes
// inferred from the arguments — `query` (discovery: the best-ranked hit per conversation, with a
// snippet, its session and time), `session_id` + `around_message_id` (a window of messages around
// a hit), `session_id` alone (a bounded read: the first and last messages), nothing (recent
// conversations). A person searches only their own conversations; an Agent admin may pass
// `all_users: true` for all of the agent's. No model calls: every shape returns stored messages.
import { z } from 'zod';
import { defineTool, type ToolContext } from './registry.js';
import type { RecallAccess } from '../recall/access.js';
import { messagesAround, readSession, recentSessions, searchSessions, type RecallFence } from '../recall/session-recall.js';

const NO_RECALL = 'Session search is not available here (no session store is configured for this worker).';

/** Message ids are Postgres bigints: a larger number is no message (and would fail the query). */
const MAX_MESSAGE_ID = 9_223_372_036_854_775_807n;

const uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'a session id as returned by session_search');

const schema = z.object({
  query: z.string().min(1).max(500).optional().describe('Words or a phrase to find in past conversations ("quoted phrase", -excluded, or); any language'),
  session_id: uuid.optional().describe('A conversation to open (from an earlier session_search result)'),
  around_message_id: z.string().regex(/^\d{1,19}$/, 'a message_id as returned by session_search')
    .refine((id) => BigInt(id) <= MAX_MESSAGE_ID, 'a message_id as returned by session_search (it is past the largest message id)')
    .optional().describe('With session_id: show the messages around this message_id'),
  window: z.number().int().min(1).max(20).optional().describe('Messages before and after around_message_id (default 5)'),
  limit: z.number().int().min(1).max(20).optional().describe('How many conversations to return (default 5 for a query, 10 for recent)'),
  all_users: z.boolean().optional().describe('Admins only: search every user\'s conversations with this agent, not only the current user\'s'),
}).strict();

const json = (value: unknown): string => JSON.stringify(value);
const NOT_FOUND = (id: string) => json({ success: false, error: `No conversation ${id} that you can read.` });

function fenceOf(access: RecallAccess, allUsers: boolean): RecallFence | string {
  if (allUsers && !access.admin) return 'all_users is for the agent\'s admins; you can search the current user\'s conversations.';
  return { agentId: access.agentId, userId: access.userId, allUsers, currentSessionId: access.sessionId };
}

async function run(access: RecallAccess, args: z.infer<typeof schema>): Promise<string> {
  const fence = fenceOf(access, args.all_users === true);
  if (typeof fence === 'string') return json({ success: false, error: fence });
  if (args.session_id && args.around_message_id) {
    const messages = await messagesAround(access.db, fence, args.session_id, args.around_message_id, args.window ?? 5);
    return messages ? json({ success: true, session_id: args.session_id, messages }) : NOT_FOUND(args.session_id);
  }
  if (args.session_id) {
    const read = await readSession(access.db, fence, args.session_id, 10);
    if (!read) return NOT_FOUND(args.session_id);
    const note = read.total > read.messages.length ? `Showing the first and last 10 of ${read.total} messages; use around_message_id to see the middle.` : undefined;
    return json({ success: true, session_id: args.session_id, total_messages: read.total, messages: read.messages, ...(note ? { note } : {}) });
  }
  if (args.query) {
    const results = await searchSessions(access.db, fence, args.query, args.limit ?? 5);
    return json({ success: true, query: args.query, results, ...(results.length ? {} : { note: 'No past conversation matched. Try other words, or call session_search with no arguments to list recent conversations.' }) });
  }
  return json({ success: true, sessions: await recentSessions(access.db, fence, args.limit ?? 10) });
}

export const sessionSearchTool = defineTool({
  name: 'session_search',
  description: 'Search and read your past conversations with this user (their current conversation is already in your context). Pass query to find where something was discussed (ranked snippets with session_id and message_id); session_id with around_message_id to read the messages around a hit; session_id alone to read a conversation\'s start and end; no arguments to list recent conversations. Use it when the user refers to something from before, or you need a past decision, file or fact.',
  toolset: 'session_search',
  sideEffect: 'read-only',
  postgresArguments: true,
  schema,
  handler: (args, ctx: ToolContext) => (ctx.recall ? run(ctx.recall, args) : json({ success: false, error: NO_RECALL })),
});
