// session_search on real Postgres over conversations stored by real turns: full-text hits ranked
// with snippets, Chinese and Japanese text found by substring (pg_trgm), tool-call arguments
// found, a window around a hit, a bounded read, recent conversations — and the fence: a person
// finds only their own conversations (another's session id answers "not found", as a missing
// one), only an Agent admin may search every user's, and the current conversation is left out.
import { beforeAll, describe, expect, it } from 'vitest';
import { sessionSearchTool, type RecallAccess } from '../../../services/agent/index.js';
import type { ChatRequestBody } from '../../support/fake-openai.js';
import { createTestAgent, runTurn, useAgentSystem } from '../../support/system.js';
import { call, callJson, toolContext } from './helpers.js';

/** "search <json>": one session_search call; the reply repeats its result. "call tool <x>": a memory-less tool call to store arguments. Otherwise "noted". */
function script(b: ChatRequestBody) {
  const turn = b.messages.slice(b.messages.map((m) => m.role).lastIndexOf('user'));
  const result = turn.find((m) => m.role === 'tool')?.content;
  const text = turn[0]?.content ?? '';
  if (result !== undefined) return { text: `search said: ${result}` };
  if (text.startsWith('search ')) return { toolCalls: [{ id: 's1', name: 'session_search', arguments: text.slice('search '.length) }] };
  if (text.startsWith('call tool ')) return { toolCalls: [{ id: 'c1', name: 'get_time', arguments: JSON.stringify({ timezone: text.slice('call tool '.length) }) }] };
  return { text: 'noted' };
}

const sys = useAgentSystem(script);
let agentId: string;
const sessionOf: Record<string, string> = {};
const userOf: Record<string, string> = {};

async function say(user: string, conversation: string, content: string) {
  const { a } = await runTurn(sys.rt, { agentId, sessionKey: `${conversation}`, content, userId: user, platform: 'slack' });
  sessionOf[conversation] = a.sessionId;
  userOf[user] = a.userId!;
  return a;
}

const access = (user: string, current = '00000000-0000-4000-8000-000000000000'): RecallAccess =>
  ({ db: sys.rt.db, agentId, userId: userOf[user]!, admin: user === 'carol', sessionId: current });
const search = (user: string, args: unknown, current?: string) => callJson(sessionSearchTool, args, toolContext({ recall: access(user, current) }));

beforeAll(async () => {
  agentId = await createTestAgent(sys.rt, sys.model.baseURL, { toolsets: ['session_search', 'clock'], admins: ['slack:carol'] });
  await say('alice', 'a-deploy', 'The staging deploy failed because the database migration timed out');
  await say('alice', 'a-deploy', 'We fixed it by raising the lock timeout to 30 seconds');
  await say('alice', 'a-cjk', '我们明天讨论数据库迁移的问题');
  await say('alice', 'a-cjk', '東京のサーバーは再起動が必要です');
  await say('alice', 'a-tool', 'call tool Asia/Kathmandu');
  await say('bob', 'b-deploy', 'Bob private note: the migration password is hunter2');
  await say('carol', 'c-admin', 'carol is an admin');
});

describe('session_search', () => {
  it('finds full-text hits ranked, one per conversation, with a snippet, session and time', async () => {
    const found = await search('alice', { query: 'migration timed out' });
    expect(found).toMatchObject({ success: true, query: 'migration timed out' });
    const results = found.results as { session_id: string; message_id: string; snippet: string; when: string; session_started: string }[];
    expect(results.map((r) => r.session_id)).toEqual([sessionOf['a-deploy']]);
    expect(results[0]!.snippet).toContain('«migration»');
    expect(results[0]!.when).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it('finds Chinese and Japanese text by substring, and tool-call arguments', async () => {
    const zh = (await search('alice', { query: '数据库迁移' })).results as { session_id: string; snippet: string }[];
    expect(zh.map((r) => r.session_id)).toEqual([sessionOf['a-cjk']]);
    expect(zh[0]!.snippet).toContain('我们明天讨论数据库迁移的问题');
    const ja = (await search('alice', { query: '再起動' })).results as { session_id: string }[];
    expect(ja.map((r) => r.session_id)).toEqual([sessionOf['a-cjk']]);
    const tool = (await search('alice', { query: 'Kathmandu' })).results as { session_id: string }[];
    expect(tool.map((r) => r.session_id)).toContain(sessionOf['a-tool']);
  });

  it('never returns another person\'s conversations; their session id answers as a missing one', async () => {
    expect((await search('alice', { query: 'hunter2' })).results).toEqual([]);
    expect((await search('alice', { query: 'migration' })).results).not.toContainEqual(expect.objectContaining({ session_id: sessionOf['b-deploy'] }));
    const foreign = await search('alice', { session_id: sessionOf['b-deploy'] });
    const missing = await search('alice', { session_id: '11111111-1111-4111-8111-111111111111' });
    expect(foreign).toEqual({ success: false, error: `No conversation ${sessionOf['b-deploy']} that you can read.` });
    expect(missing.error).toBe('No conversation 11111111-1111-4111-8111-111111111111 that you can read.');
    expect(JSON.stringify(foreign)).not.toContain('hunter2');
    // Around a message of Bob's session, named by id: still not found.
    expect(await search('alice', { session_id: sessionOf['b-deploy'], around_message_id: '1' })).toMatchObject({ success: false });
    // Past Postgres' bigint: refused as an argument, not a query error ("out of range for type bigint").
    const huge = await call(sessionSearchTool, { session_id: sessionOf['a-deploy'], around_message_id: '9999999999999999999' }, toolContext({ recall: access('alice') }));
    expect(huge).toMatchObject({ kind: 'invalid', content: expect.stringContaining('around_message_id: a message_id as returned by session_search') });
    expect((await search('alice', {})).sessions).not.toContainEqual(expect.objectContaining({ session_id: sessionOf['b-deploy'] }));
  });

  it('all_users is refused to a non-admin and reaches every user\'s conversations for an admin', async () => {
    expect(await search('alice', { query: 'hunter2', all_users: true })).toEqual({ success: false, error: 'all_users is for the agent\'s admins; you can search the current user\'s conversations.' });
    const admin = (await search('carol', { query: 'hunter2', all_users: true })).results as { session_id: string }[];
    expect(admin.map((r) => r.session_id)).toEqual([sessionOf['b-deploy']]);
    expect((await search('carol', { query: 'hunter2' })).results).toEqual([]);
  });

  it('reads a window around a hit, a whole conversation, and recent conversations; leaves the current one out', async () => {
    const hit = ((await search('alice', { query: 'lock timeout' })).results as { session_id: string; message_id: string }[])[0]!;
    const around = await search('alice', { session_id: hit.session_id, around_message_id: hit.message_id, window: 1 });
    const contents = (around.messages as { content: string }[]).map((m) => m.content);
    expect(contents).toContain('We fixed it by raising the lock timeout to 30 seconds');
    expect(contents).toHaveLength(3); // the hit and one message on each side
    const read = await search('alice', { session_id: sessionOf['a-deploy'] });
    expect(read).toMatchObject({ success: true, total_messages: 4 });
    const recent = (await search('alice', {})).sessions as { session_id: string; preview: string }[];
    expect(recent.map((s) => s.session_id).sort()).toEqual([sessionOf['a-deploy'], sessionOf['a-cjk'], sessionOf['a-tool']].sort());
    // From inside a-deploy, its own content is already in context: not a search result.
    expect((await search('alice', { query: 'lock timeout' }, sessionOf['a-deploy'])).results).toEqual([]);
  });

  it('is offered to the model and fenced by the turn\'s own user', async () => {
    const { reply } = await runTurn(sys.rt, { agentId, sessionKey: 'b-asks', content: 'search {"query":"database"}', userId: 'bob', platform: 'slack' });
    const result = JSON.parse(reply.replace(/^search said: /, '').split('\n')[0]!) as { results: { session_id: string }[] };
    // Alice's conversations say "database" twice; Bob's never do: his search finds nothing.
    expect(result.results).toEqual([]);
    const mine = await runTurn(sys.rt, { agentId, sessionKey: 'b-asks', content: 'search {"query":"password"}', userId: 'bob', platform: 'slack' });
    expect(mine.reply).toContain(sessionOf['b-deploy']);
    expect(mine.reply).not.toContain(sessionOf['a-deploy']);
  });
});
