// The background review (the learning loop) through real turns: after the reply, a review job
// looks back over the conversation with the session's own prompt and saves what it learned
// (here: the person's preference, into their USER store) — its calls recorded as task
// background_review, nothing of it in the transcript, once per admission; cron turns and agents
// without `learning.backgroundReview` get none; a failing review never touches the reply.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAdmission } from '../../../services/core/index.js';
import { pgMemoryStore, staticSecrets } from '../../../services/agent/index.js';
import { REVIEW_PROMPT, runReview } from '../../../services/worker/review.js';
import type { ChatRequestBody } from '../../support/fake-openai.js';
import { eventually } from '../../support/services.js';
import { createTestAgent, runTurn, testModelSecret, useAgentSystem } from '../../support/system.js';

const isReview = (b: ChatRequestBody) => b.messages.some((m) => m.role === 'user' && m.content === REVIEW_PROMPT);

/** Turns answer "Sure."; a review saves "Prefers answers in German" when the person said so, else nothing; "break reviews" makes reviews fail. */
function script(b: ChatRequestBody) {
  if (!isReview(b)) return { text: 'Sure.' };
  if (b.messages.some((m) => m.role === 'user' && m.content.includes('break reviews'))) return { status: 400, errorMessage: 'the review request was refused' };
  if (b.messages.some((m) => m.role === 'tool')) return { text: 'Saved.' };
  if (!b.messages.some((m) => m.role === 'user' && m.content.includes('in German'))) return { text: 'Nothing to save.' };
  return { toolCalls: [{ id: 'r1', name: 'memory', arguments: JSON.stringify({ action: 'add', target: 'user', content: 'Prefers answers in German' }) }] };
}

const sys = useAgentSystem(script);
let learner: string;
let plain: string;

const reviewState = async (admissionId: string) => (await sys.rt.db.pool.query<{ state: string; error: string | null }>('SELECT state, error FROM background_reviews WHERE admission_id = $1', [admissionId])).rows[0];
const reviewDeps = () => ({ ...sys.rt, secrets: staticSecrets([testModelSecret]) });

beforeAll(async () => {
  learner = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'learner' }, toolsets: ['memory', 'skills'], learning: { backgroundReview: true } });
  plain = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'plain' }, toolsets: ['memory'] });
});
afterAll(() => undefined);

describe('background review', () => {
  it('after the reply, saves what the person said into their own USER store; recorded as background_review, nothing in the transcript', async () => {
    const { a, reply } = await runTurn(sys.rt, { agentId: learner, sessionKey: 'alice-1', content: 'I prefer answers in German, please.', userId: 'alice' });
    expect(reply).toBe('Sure.');
    await eventually(async () => ((await reviewState(a.id))?.state === 'done' ? true : undefined), 'the review to finish', 30_000);
    const alice = await pgMemoryStore(sys.rt.db).read({ agentId: learner, target: 'user', userId: a.userId! });
    expect(alice.entries).toEqual(['Prefers answers in German']);
    // The review saw the conversation under the session's own prompt (a byte-identical prefix).
    const turnReq = sys.model.requests.find((r) => !isReview(r.body) && r.body.messages.some((m) => m.content === 'I prefer answers in German, please.'))!;
    const reviewReqs = sys.model.requests.filter((r) => isReview(r.body) && r.body.messages.some((m) => m.content === 'I prefer answers in German, please.'));
    expect(reviewReqs.length).toBe(2); // the memory call, then "Saved."
    const systemOf = (msgs: ChatRequestBody['messages']) => msgs.filter((m) => m.role === 'system').map((m) => m.content);
    expect(systemOf(reviewReqs[0]!.body.messages)).toEqual(systemOf(turnReq.body.messages));
    expect(reviewReqs[0]!.body.tools?.map((t) => t.function.name).sort()).toEqual(['memory', 'skill_manage', 'skill_view', 'skills_list']);
    const { rows: usage } = await sys.rt.db.pool.query<{ task: string }>('SELECT task FROM model_call_usage WHERE admission_id = $1 ORDER BY task', [a.id]);
    expect(usage.map((u) => u.task)).toEqual(['background_review', 'background_review', 'turn']);
    const { rows: transcript } = await sys.rt.db.pool.query<{ content: string }>('SELECT content FROM messages WHERE session_id = $1 ORDER BY seq', [a.sessionId]);
    expect(transcript.map((m) => m.content)).toEqual(['I prefer answers in German, please.', 'Sure.']);
    // Bob's USER store is untouched by a review of Alice's conversation.
    const bob = await runTurn(sys.rt, { agentId: learner, sessionKey: 'bob-1', content: 'hello', userId: 'bob' });
    await eventually(async () => ((await reviewState(bob.a.id))?.state === 'done' ? true : undefined), 'Bob\'s review to finish', 30_000);
    expect((await pgMemoryStore(sys.rt.db).read({ agentId: learner, target: 'user', userId: bob.a.userId! })).entries).toEqual([]);
  });

  it('reviews someone else\'s turn in a shared thread under a prompt with their own profile, never the opener\'s', async () => {
    const own = await runTurn(sys.rt, { agentId: learner, sessionKey: 'carol-own', content: 'hi', userId: 'carol' });
    await pgMemoryStore(sys.rt.db).write({ agentId: learner, target: 'user', userId: own.a.userId! }, [{ action: 'add', content: 'Carol is on parental leave' }], 1_375, null);
    await runTurn(sys.rt, { agentId: learner, sessionKey: 'thread-9', content: 'carol opens the thread', userId: 'carol' });
    const dan = await runTurn(sys.rt, { agentId: learner, sessionKey: 'thread-9', content: 'dan answers in the thread', userId: 'dan' });
    await eventually(async () => ((await reviewState(dan.a.id))?.state === 'done' ? true : undefined), 'Dan\'s review to finish', 30_000);
    const systemOf = (msgs: ChatRequestBody['messages']) => msgs.filter((m) => m.role === 'system').map((m) => m.content);
    const carrying = (r: { body: ChatRequestBody }) => r.body.messages.some((m) => m.content === 'dan answers in the thread');
    const turnReq = sys.model.requests.find((r) => !isReview(r.body) && carrying(r))!;
    const reviewReq = sys.model.requests.find((r) => isReview(r.body) && carrying(r))!;
    expect(systemOf(reviewReq.body.messages).join('\n')).not.toContain('parental leave');
    expect(systemOf(reviewReq.body.messages)).toEqual(systemOf(turnReq.body.messages));
  });

  it('follows the person\'s grants: a review of a turn of someone spec.access keeps from memory has no memory tool', async () => {
    const access = { default: { toolsets: ['skills'] }, groups: [], users: [{ match: 'api:alice', toolsets: ['memory'] }] };
    const team = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'team-learner' }, toolsets: ['memory', 'skills'], learning: { backgroundReview: true }, access });
    const reviewed = async (user: string, content: string) => {
      const { a } = await runTurn(sys.rt, { agentId: team, sessionKey: `team-${user}`, content, userId: user });
      await eventually(async () => ((await reviewState(a.id))?.state === 'done' ? true : undefined), `${user}'s review to finish`, 30_000);
      const review = sys.model.requests.find((r) => isReview(r.body) && r.body.messages.some((m) => m.content === content))!;
      return { tools: review.body.tools?.map((t) => t.function.name).sort(), entries: (await pgMemoryStore(sys.rt.db).read({ agentId: team, target: 'user', userId: a.userId! })).entries };
    };
    expect(await reviewed('bob', 'Bob here: answers in German, please.')).toEqual({ tools: ['skill_manage', 'skill_view', 'skills_list'], entries: [] });
    expect(await reviewed('alice', 'Alice here: answers in German, please.')).toEqual({ tools: ['memory', 'skill_manage', 'skill_view', 'skills_list'], entries: ['Prefers answers in German'] });
  });

  it('runs once per admission; none for cron turns or agents without it', async () => {
    const { a } = await runTurn(sys.rt, { agentId: learner, sessionKey: 'alice-2', content: 'Reply in German again.', userId: 'alice' });
    await eventually(async () => ((await reviewState(a.id))?.state === 'done' ? true : undefined), 'the review to finish', 30_000);
    const calls = sys.model.requests.length;
    expect(await runReview(reviewDeps(), a.id, new AbortController().signal)).toBe('already');
    const cron = await runTurn(sys.rt, { agentId: learner, sessionKey: 'cron-1', content: 'daily digest, in German', platform: 'cron' });
    expect(await runReview(reviewDeps(), cron.a.id, new AbortController().signal)).toBe('skipped');
    const off = await runTurn(sys.rt, { agentId: plain, sessionKey: 'plain-1', content: 'answers in German please', userId: 'alice' });
    expect(await runReview(reviewDeps(), off.a.id, new AbortController().signal)).toBe('skipped');
    expect(await reviewState(cron.a.id)).toBeUndefined();
    expect(await reviewState(off.a.id)).toBeUndefined();
    expect(sys.model.requests.length).toBe(calls + 2); // the two turns, no review call
    expect(sys.model.requests.slice(calls).some((r) => isReview(r.body))).toBe(false);
  });

  it('none for a turn answered without the model (a command), even in a conversation that has a prompt', async () => {
    const hello = await runTurn(sys.rt, { agentId: learner, sessionKey: 'alice-4', content: 'hello', userId: 'alice' });
    // That turn's own review first: run later, it would read the command below as part of the conversation.
    await eventually(async () => ((await reviewState(hello.a.id))?.state === 'done' ? true : undefined), 'the first review to finish', 30_000);
    const calls = sys.model.requests.length;
    const { a, reply } = await runTurn(sys.rt, { agentId: learner, sessionKey: 'alice-4', content: '/memory pending', userId: 'alice' });
    expect(reply).not.toBe('Sure.');
    expect(await runReview(reviewDeps(), a.id, new AbortController().signal)).toBe('skipped');
    expect(await reviewState(a.id)).toBeUndefined();
    expect(sys.model.requests.slice(calls).filter((r) => isReview(r.body) && r.body.messages.some((m) => m.content === '/memory pending'))).toEqual([]);
  });

  it('reviews the conversation up to its own turn, not the turns that came after it', async () => {
    const first = await runTurn(sys.rt, { agentId: learner, sessionKey: 'alice-5', content: 'first words', userId: 'alice' });
    await eventually(async () => ((await reviewState(first.a.id))?.state === 'done' ? true : undefined), 'the first review to finish', 30_000);
    const second = await runTurn(sys.rt, { agentId: learner, sessionKey: 'alice-5', content: 'later words', userId: 'alice' });
    await eventually(async () => ((await reviewState(second.a.id))?.state === 'done' ? true : undefined), 'the second review to finish', 30_000);
    // The first turn's review, run again now that the second turn is in the transcript (as when its job runs late).
    await sys.rt.db.pool.query('DELETE FROM background_reviews WHERE admission_id = $1', [first.a.id]);
    const calls = sys.model.requests.length;
    expect(await runReview(reviewDeps(), first.a.id, new AbortController().signal)).toBe('done');
    const seen = sys.model.requests.slice(calls).filter((r) => isReview(r.body)).flatMap((r) => r.body.messages.map((m) => m.content));
    expect(seen).toContain('first words');
    expect(seen).not.toContain('later words');
  });

  it('a failing review is recorded and leaves the delivered reply as it was', async () => {
    const { a, reply } = await runTurn(sys.rt, { agentId: learner, sessionKey: 'alice-3', content: 'break reviews', userId: 'alice' });
    expect(reply).toBe('Sure.');
    await eventually(async () => ((await reviewState(a.id))?.state === 'failed' ? true : undefined), 'the review to fail', 30_000);
    expect((await getAdmission(sys.rt.db.pool, a.id))?.outcome).toBe('completed');
  });
});
