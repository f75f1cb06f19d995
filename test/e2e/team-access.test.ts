// Team mode and bound API keys through the real gateway, worker and fake model (issue 11 point 3):
// a person's permissions (spec.access) decide which tools the model is offered in their turns and
// which slash commands they may use; an API key bound to a user reads and writes only that user's
// admissions and may name no other user (403), a trusted backend may name users.
import { beforeAll, describe, expect, it } from 'vitest';
import { commandRefusal, COMMANDS, publishRevision, sha256, type CompiledAgent } from '../../services/core/index.js';
import { builtinRegistry } from '../../services/agent/index.js';
import type { ChatRequestBody } from '../support/fake-openai.js';
import { testAgent, testApiKey, useGatewaySystem } from '../support/system.js';
import { messageApi, type Posted } from '../support/message-api.js';

const toolNames = (b: ChatRequestBody) => (b.tools ?? []).map((t) => t.function.name).sort();
const sys = useGatewaySystem((body) => ({ text: `tools: ${toolNames(body).join(',')}` }));
const json = { 'content-type': 'application/json' };
const asBackend = { authorization: `Bearer ${testApiKey}`, ...json };
const backend = messageApi(() => sys.gateway.url, asBackend);

const KEYS = { alice: 'key-alice-0123456789', alice2: 'key-alice-second-0123', bob: 'key-bob-0123456789', own: 'key-own-0123456789', backend: 'key-backend-0123456789' } as const;
const keyed = (key: string) => ({ authorization: `Bearer ${key}`, ...json });

const access: CompiledAgent['access'] = {
  default: { toolsets: ['clock'], commands: ['new', 'help', 'whoami'], approve: false },
  groups: [{ name: 'ops', members: ['api:carol'], chats: [], commands: ['*'] }],
  users: [{ match: 'api:alice', toolsets: ['memory'], approve: true }, { match: 'api:dave', admin: true }],
};

beforeAll(async () => {
  await publishRevision(sys.rt.db, testAgent(sys.model.baseURL, { agent: { namespace: 'default', name: 'team' }, toolsets: ['clock', 'memory', 'todo'], access }));
  const hashes = Object.values(KEYS).map(sha256);
  await publishRevision(sys.rt.db, testAgent(sys.model.baseURL, {
    agent: { namespace: 'default', name: 'keys' },
    api: {
      enabled: true, keySha256: hashes,
      keys: [
        { sha256: sha256(KEYS.alice), user: 'alice' }, { sha256: sha256(KEYS.alice2), user: 'alice' }, { sha256: sha256(KEYS.bob), user: 'bob' },
        { sha256: sha256(KEYS.own) }, { sha256: sha256(KEYS.backend), trustedBackend: true },
      ],
    },
  }));
});

const toolsOf = (...toolsets: string[]) => builtinRegistry().select(toolsets).map((t) => t.name).sort();

describe('per-user permissions (spec.access)', () => {
  it('offers the model only the toolsets of the person whose turn it is', async () => {
    const bob = await backend.replyOf(await backend.post('team', 'what can you do for bob?', 'bob'));
    const alice = await backend.replyOf(await backend.post('team', 'what can you do for alice?', 'alice'));
    expect(toolsOf('clock').length).toBeGreaterThan(0);
    expect(toolsOf('memory').length).toBeGreaterThan(0);
    // read_tool_result (stored results) is the loop's own, offered in every turn.
    expect(bob).toBe(`tools: ${[...toolsOf('clock'), 'read_tool_result'].sort().join(',')}`);
    expect(alice).toBe(`tools: ${[...toolsOf('clock', 'memory'), 'read_tool_result'].sort().join(',')}`);
    // What the model actually received, request by request: the memory and todo tools never reached bob's turns.
    const bobsRequest = sys.model.requests.find((r) => r.body.messages.some((m) => m.content === 'what can you do for bob?'))!;
    const offered = toolNames(bobsRequest.body);
    for (const t of toolsOf('clock')) expect(offered).toContain(t);
    for (const t of [...toolsOf('memory'), ...toolsOf('todo')]) expect(offered).not.toContain(t);
  });

  it('refuses a slash command the person may not use, without the model; a group that grants it lets it through', async () => {
    const calls = sys.model.requests.length;
    expect(await backend.replyOf(await backend.post('team', '/usage', 'bob'))).toBe(commandRefusal('usage'));
    expect(await backend.replyOf(await backend.post('team', '/approve', 'bob'))).toBe(commandRefusal('approve'));
    expect(sys.model.requests.length).toBe(calls);
    const carol = await backend.replyOf(await backend.post('team', '/usage', 'carol'));
    expect(carol).not.toBe(commandRefusal('usage'));
    // alice may approve (approve: true): her /approve is not refused (nothing is pending).
    expect(await backend.replyOf(await backend.post('team', '/approve', 'alice'))).not.toBe(commandRefusal('approve'));
  });

  it('admin: true in spec.access makes an admin for the admin commands too, as spec.admins does', async () => {
    expect(await backend.replyOf(await backend.post('team', '/curator', 'dave'))).toBe('This agent has learned no skills yet.');
    expect(await backend.replyOf(await backend.post('team', '/memory pending', 'dave'))).not.toMatch(/admins/);
    expect(await backend.replyOf(await backend.post('team', '/curator', 'carol'))).toBe('Only this agent\'s admins may run the curator.');
  });

  it('/whoami says what the person may use, as the access rules decide it', async () => {
    const bob = await backend.replyOf(await backend.post('team', '/whoami', 'bob'));
    expect(bob).toBe('You are api:bob.\nYou are a user of this agent (not an admin).\nYou may use /new, /help, /whoami.\nYour turns may use the toolsets clock.');
    const alice = await backend.replyOf(await backend.post('team', '/whoami', 'alice'));
    expect(alice).toContain('You may use /new, /help, /whoami, /approve, /deny.\nYour turns may use the toolsets clock, memory.');
    const carol = await backend.replyOf(await backend.post('team', '/whoami', 'carol'));
    expect(carol).toContain('You may use every command (/help lists them), except /approve and /deny.');
    const dave = await backend.replyOf(await backend.post('team', '/whoami', 'dave'));
    expect(dave).toBe('You are api:dave.\nYou are an admin of this agent.\nYou may use every command (/help lists them) and every tool of this agent.');
  });

  it('/help lists the commands the person may use, nothing more (as /whoami says them)', async () => {
    const words = (reply: string) => reply.split('\n').slice(1).map((l) => l.split(' ')[0]);
    const bob = await backend.replyOf(await backend.post('team', '/help', 'bob'));
    expect(bob.split('\n')[0]).toBe('Commands you may use here:');
    expect(words(bob)).toEqual(['/new', '/whoami', '/help']);
    const alice = await backend.replyOf(await backend.post('team', '/help', 'alice'));
    expect(words(alice)).toEqual(['/new', '/approve', '/deny', '/whoami', '/help']);
    const carol = words(await backend.replyOf(await backend.post('team', '/help', 'carol')));
    expect(carol).toContain('/stop');
    expect(carol).not.toContain('/approve');
    expect(carol).not.toContain('/deny');
    const dave = await backend.replyOf(await backend.post('team', '/help', 'dave'));
    expect(dave.split('\n')[0]).toBe('Commands:');
    expect(words(dave)).toEqual(COMMANDS.map((c) => `/${c.name}`));
  });
});

describe('API keys bound to a user vs trusted backends (spec.api.keys)', () => {
  const post = (key: string, body: Record<string, unknown>) =>
    fetch(`${sys.gateway.url}/v1/agents/default/keys/messages`, { method: 'POST', headers: keyed(key), body: JSON.stringify(body) });
  const read = (key: string, p: Posted) => fetch(`${sys.gateway.url}${p.links.self}`, { headers: keyed(key) });
  const admissions = async () => Number((await sys.rt.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM admissions')).rows[0]!.n);

  it('a bound key acts as its user, refuses another user id (403, nothing admitted) and reads only its user\'s admissions', async () => {
    const res = await post(KEYS.alice, { content: 'hello from alice' });
    expect(res.status).toBe(202);
    const mine = (await res.json()) as Posted;
    const { rows } = await sys.rt.db.pool.query<{ key: string }>('SELECT session_key AS key FROM sessions WHERE id = $1', [mine.sessionId]);
    expect(rows[0]!.key).toBe('agent:default/keys:api:dm:alice');
    expect((await post(KEYS.alice, { content: 'as alice, named', user: { id: 'alice' } })).status).toBe(202);

    const before = await admissions();
    const forged = await post(KEYS.alice, { content: 'pretending to be bob', user: { id: 'bob' } });
    expect(forged.status).toBe(403);
    expect(((await forged.json()) as { error: { code: string } }).error.code).toBe('HERMES_USER_NOT_ALLOWED');
    const chat = await fetch(`${sys.gateway.url}/v1/chat/completions`, { method: 'POST', headers: keyed(KEYS.alice), body: JSON.stringify({ model: 'default/keys', user: 'bob', messages: [{ role: 'user', content: 'hi' }] }) });
    expect(chat.status).toBe(403);
    const ownKey = await post(KEYS.own, { content: 'naming someone', user: { id: 'alice' } });
    expect(ownKey.status).toBe(403);
    expect(await admissions()).toBe(before);

    expect((await read(KEYS.alice, mine)).status).toBe(200);
    expect((await read(KEYS.alice2, mine)).status).toBe(200); // another key bound to alice: the same person
    expect((await read(KEYS.bob, mine)).status).toBe(404);
    expect((await read(KEYS.own, mine)).status).toBe(404);
    const events = await fetch(`${sys.gateway.url}${mine.links.events}`, { headers: keyed(KEYS.bob) });
    expect(events.status).toBe(404);
  });

  it('a trusted backend may name users, reaches their sessions, and reads every API user\'s admissions', async () => {
    const res = await post(KEYS.backend, { content: 'for bob, from the backend', user: { id: 'bob' } });
    expect(res.status).toBe(202);
    const forBob = (await res.json()) as Posted;
    const { rows } = await sys.rt.db.pool.query<{ key: string }>('SELECT session_key AS key FROM sessions WHERE id = $1', [forBob.sessionId]);
    expect(rows[0]!.key).toBe('agent:default/keys:api:dm:bob');
    expect((await read(KEYS.bob, forBob)).status).toBe(200);
    expect((await read(KEYS.alice, forBob)).status).toBe(404);
    const alices = (await (await post(KEYS.alice, { content: 'alice again' })).json()) as Posted;
    expect((await read(KEYS.backend, alices)).status).toBe(200);
  });
});
