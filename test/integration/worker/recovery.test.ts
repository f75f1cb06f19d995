// What a user does with an interrupted turn, and what the ledger does with text it cannot store:
//  - `/retry` runs the latest `unknown` turn again as this turn (the old one ends discarded), or —
//    with none waiting — the last message; `/discard` drops every unknown turn of the session;
//  - a model reply, a tool result or tool-call arguments carrying NUL keep the turn (the character
//    becomes U+FFFD) instead of turning a good answer into `unknown`.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  acquireLease, admit, getAdmission, listTranscript, markStopped, registerInstance, startNextTurn, unknownNotice,
  getObligationForAdmission,
} from '../../../services/core/index.js';
import { builtinRegistry, defineTool } from '../../../services/agent/index.js';
import { eventually } from '../../support/services.js';
import { lastUser, type ChatRequestBody } from '../../support/fake-openai.js';
import { createTestAgent, runTurn, useAgentSystem } from '../../support/system.js';

const binary = defineTool({
  name: 'binary', description: 'Returns bytes with a NUL in them.', toolset: 'test', sideEffect: 'read-only',
  schema: z.object({ path: z.string() }).strict(),
  handler: ({ path }) => `read ${path}: \u0000\u0001ELF`,
});

const toolResults = (b: ChatRequestBody) => b.messages.filter((m) => m.role === 'tool');

const sys = useAgentSystem((b) => {
  const text = lastUser(b);
  if (text === 'binary please') return toolResults(b).length ? { text: 'saw the bytes' } : { toolCalls: [{ id: 'b1', name: 'binary', arguments: JSON.stringify({ path: 'a\u0000b' }) }] };
  if (text === 'answer with a NUL') return { text: 'bad\u0000byte' };
  return { text: `echo: ${text}` };
}, { loop: { tools: builtinRegistry().register(binary) } });

let agentId: string;
const agent = async () => (agentId ??= await createTestAgent(sys.rt, sys.model.baseURL, { toolsets: ['core', 'test'] }));

/** A turn whose owner died after it started (the user's line is in the transcript): recovery settles it unknown. */
async function unknownTurn(sessionKey: string, content: string): Promise<string> {
  const { db } = sys.rt;
  const a = await admit(db, { agentId: await agent(), platform: 'api', sessionKey, user: { platformUserId: 'u1' }, content, replyTarget: { kind: 'api' } });
  const ghost = await registerInstance(db.pool, 'worker');
  const lease = (await acquireLease(db.pool, a.sessionId, ghost.id, 300, { instanceTtlSeconds: 3, steady: true }))!;
  expect((await startNextTurn(db, lease))?.id).toBe(a.admissionId);
  await markStopped(db.pool, ghost.id); // died: the worker's sweeper frees its lease and settles the turn
  await eventually(async () => (await getAdmission(db.pool, a.admissionId))?.state === 'unknown', 'the dead turn unknown');
  return a.admissionId;
}

describe('/retry and /discard', () => {
  it('/retry runs the interrupted request again as this turn and ends the unknown one', async () => {
    const key = 'agent:default/demo:api:dm:retry';
    const lost = await unknownTurn(key, 'book the meeting room');
    expect((await getObligationForAdmission(sys.rt.db.pool, lost))?.content).toBe(unknownNotice);
    const before = sys.model.requests.length;
    const { a, reply } = await runTurn(sys.rt, { agentId: await agent(), sessionKey: key, content: '/retry' });
    expect(reply).toBe('echo: book the meeting room');
    expect(a).toMatchObject({ outcome: 'completed', resumeOf: lost });
    expect(await getAdmission(sys.rt.db.pool, lost)).toMatchObject({ state: 'terminal', outcome: 'discarded', error: `retried by ${a.id}` });
    const sent = sys.model.requests.slice(before).map((r) => r.body.messages.filter((m) => m.role === 'user').map((m) => m.content));
    expect(sent).toEqual([['book the meeting room', 'book the meeting room']]); // never the "/retry" line itself
    // Later turns see the retried request and its answer as conversation.
    const next = await runTurn(sys.rt, { agentId: await agent(), sessionKey: key, content: 'thanks' });
    expect(next.reply).toBe('echo: thanks');
    const users = sys.model.requests.at(-1)!.body.messages.filter((m) => m.role !== 'system').map((m) => `${m.role}:${m.content}`);
    expect(users).toEqual(['user:book the meeting room', 'user:book the meeting room', 'assistant:echo: book the meeting room', 'user:thanks']);
  });

  it('/discard drops every unknown turn; /retry with none waiting re-runs the last message', async () => {
    const key = 'agent:default/demo:api:dm:discard';
    const first = await runTurn(sys.rt, { agentId: await agent(), sessionKey: key, content: 'hello there' });
    expect(first.reply).toBe('echo: hello there');
    const lost = [await unknownTurn(key, 'one'), await unknownTurn(key, 'two')];
    const calls = sys.model.requests.length;
    const discarded = await runTurn(sys.rt, { agentId: await agent(), sessionKey: key, content: '/discard' });
    expect(discarded.reply).toBe('Discarded 2 interrupted turns; they will not be run.');
    expect(sys.model.requests.length).toBe(calls); // answered without the model
    for (const id of lost) expect(await getAdmission(sys.rt.db.pool, id)).toMatchObject({ state: 'terminal', outcome: 'discarded' });
    expect((await runTurn(sys.rt, { agentId: await agent(), sessionKey: key, content: '/discard' })).reply).toBe('Nothing to discard: no interrupted turn is waiting.');
    expect((await runTurn(sys.rt, { agentId: await agent(), sessionKey: key, content: '/retry' })).reply).toBe('echo: two');
  });

  it('/retry of an answered message replaces that attempt, as Hermes truncates it: the model never sees its earlier answer, twice in a row neither', async () => {
    const key = 'agent:default/demo:api:dm:retry-fresh';
    const ask = async (content: string) => runTurn(sys.rt, { agentId: await agent(), sessionKey: key, content });
    expect((await ask('pick a colour')).reply).toBe('echo: pick a colour');
    const seen = () => sys.model.requests.at(-1)!.body.messages.filter((m) => m.role !== 'system').map((m) => `${m.role}:${m.content}`);
    for (let i = 0; i < 2; i++) {
      expect((await ask('/retry')).reply).toBe('echo: pick a colour');
      expect(seen()).toEqual(['user:pick a colour']);
    }
    expect((await ask('thanks')).reply).toBe('echo: thanks');
    expect(seen()).toEqual(['user:pick a colour', 'assistant:echo: pick a colour', 'user:thanks']);
  });

  it('/discard and /retry with words after them are still the commands (as the gateway reads them), never a message to the model', async () => {
    const key = 'agent:default/demo:api:dm:args';
    const lost = await unknownTurn(key, 'water the plants');
    const calls = sys.model.requests.length;
    const discarded = await runTurn(sys.rt, { agentId: await agent(), sessionKey: key, content: '/discard it please' });
    expect(discarded.reply).toBe('Discarded the interrupted turn; it will not be run.');
    expect(sys.model.requests.length).toBe(calls);
    expect(await getAdmission(sys.rt.db.pool, lost)).toMatchObject({ state: 'terminal', outcome: 'discarded' });
    expect((await runTurn(sys.rt, { agentId: await agent(), sessionKey: key, content: 'feed the cat' })).reply).toBe('echo: feed the cat');
    expect((await runTurn(sys.rt, { agentId: await agent(), sessionKey: key, content: '/RETRY  that again' })).reply).toBe('echo: feed the cat');
    expect(JSON.stringify(sys.model.requests.slice(calls).map((r) => r.body.messages))).not.toMatch(/discard it|that again/);
  });
});

describe('NUL in what the model and tools produce', () => {
  it('keeps a reply that contains NUL, with U+FFFD in its place', async () => {
    const { a, reply } = await runTurn(sys.rt, { agentId: await agent(), sessionKey: 'agent:default/demo:api:dm:nul', content: 'answer with a NUL' });
    expect(a).toMatchObject({ state: 'terminal', outcome: 'completed' });
    expect(reply).toBe('bad\uFFFDbyte');
  });

  it('keeps tool calls and results that contain NUL', async () => {
    const { a, reply } = await runTurn(sys.rt, { agentId: await agent(), sessionKey: 'agent:default/demo:api:dm:nul-tool', content: 'binary please' });
    expect(a.outcome).toBe('completed');
    expect(reply).toBe('saw the bytes');
    const stored = await listTranscript(sys.rt.db.pool, a.sessionId);
    // The arguments arrive JSON-escaped ("\\u0000") and are kept verbatim; the tool got the real NUL.
    expect(stored.find((m) => m.role === 'assistant' && m.toolCalls)?.toolCalls?.[0]?.arguments).toBe(JSON.stringify({ path: 'a\u0000b' }));
    expect(stored.find((m) => m.role === 'tool')?.content).toBe('read a\uFFFDb: \uFFFD\u0001ELF');
  });
});
