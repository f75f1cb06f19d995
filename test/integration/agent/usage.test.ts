// Usage and spend: per-call rows with tokens and estimated cost, `/usage`, Prometheus counters by
// agent and model, and spend caps checked before each call (over the cap, nothing is sent) —
// summary calls included (loop compression, `/compress`, hygiene pre-compression), and a model
// with no known price refused under a cap unless the Profile allows it.
import { describe, expect, it } from 'vitest';
import { appendMessage, type CompiledAgent } from '../../../services/core/index.js';
import { estimateCost, emptyUsage, SUMMARY_INSTRUCTION } from '../../../services/agent/index.js';
import { lastUser, withoutSessionFacts, type ChatRequestBody } from '../../support/fake-openai.js';
import { createTestAgent, runTurn, useAgentSystem } from '../../support/system.js';

// Messages starting "routed" come back with a provider-reported charge, as OpenRouter's usage.cost;
// "garbage" with counts that are not counts, "silent" with no usage at all.
const usageFor = (text: string): Record<string, unknown> | null => {
  if (text.startsWith('garbage')) return { prompt_tokens: -1_000_000, completion_tokens: 'many' };
  if (text.startsWith('negative')) return { prompt_tokens: -1_000_000, completion_tokens: 10 };
  if (text.startsWith('silent')) return null;
  return { prompt_tokens: 1_000_000, completion_tokens: 100_000, ...(text.startsWith('routed') ? { cost: 0.4321 } : {}) };
};
const sys = useAgentSystem((b) => ({ text: `echo: ${lastUser(b)}`, usage: usageFor(lastUser(b)) }));

/** The test model at $2 / $10 per million input / output tokens: a call of the fake's usage costs $3. */
const priced = () => ({ provider: 'openai' as const, model: 'gpt-test', baseURL: sys.model.baseURL, apiKeyRef: { name: 'openai', key: 'OPENAI_API_KEY' }, pricing: { inputPerMTok: 2, outputPerMTok: 10 } });
const say = (agentId: string, key: string, content: string) => runTurn(sys.rt, { agentId, sessionKey: key, content, userId: key });

type CallRow = { input_tokens: number; output_tokens: number; cost_usd: string; cost_status: string };
const callRows = async (agentId: string) =>
  (await sys.rt.db.pool.query<CallRow>(`SELECT input_tokens, output_tokens, cost_usd, cost_status FROM model_call_usage WHERE agent_id = $1 ORDER BY id`, [agentId])).rows;
/** A call priced on counts estimated from its text: the reply at 4 characters a token, a request (system prompt and message) of some hundreds, a cost above 0. */
function expectEstimated(row: CallRow | undefined, reply: string): void {
  expect(row).toMatchObject({ output_tokens: Math.ceil(reply.length / 4), cost_status: 'estimated' });
  expect(row!.input_tokens).toBeGreaterThan(10);
  expect(row!.input_tokens).toBeLessThan(100_000);
  expect(Number(row!.cost_usd)).toBeGreaterThan(0);
}

describe('usage and spend', () => {
  it('records each call with its estimated cost, answers /usage without the model, and counts by agent and model', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'metered' },
      model: priced(),
    });
    const key = 'agent:default/metered:api:dm:u1';
    await say(agentId, key, 'one');
    await say(agentId, key, 'two');
    const { rows } = await sys.rt.db.pool.query<{ input_tokens: number; output_tokens: number; cost_usd: string; cost_status: string; model: string }>(
      `SELECT input_tokens, output_tokens, cost_usd, cost_status, model FROM model_call_usage WHERE agent_id = $1 ORDER BY id`, [agentId],
    );
    // 1M input × $2 + 100k output × $10/M = $3 per call
    expect(rows).toEqual([1, 2].map(() => ({ input_tokens: 1_000_000, output_tokens: 100_000, cost_usd: '3.000000', cost_status: 'estimated', model: 'gpt-test' })));

    const before = sys.model.requests.length;
    const { reply } = await say(agentId, key, '/usage');
    expect(sys.model.requests.length).toBe(before);
    expect(reply).toBe('Usage in this conversation: 2 model call(s).\nTokens — input 2000000, output 200000, cache read 0, cache write 0, reasoning 0.\nCost: $6.00 estimated.');

    const metrics = await sys.rt.metrics.registry.metrics();
    expect(metrics).toMatch(/hermes_model_tokens_total\{agent="default\/metered",model="gpt-test",kind="input"[^}]*\} 2000000/);
    expect(metrics).toMatch(/hermes_model_cost_usd_total\{agent="default\/metered",model="gpt-test",status="estimated"[^}]*\} 6/);

    // The next real message does not see the /usage exchange.
    await say(agentId, key, 'three');
    const last = withoutSessionFacts(sys.model.requests.at(-1)!.body.messages).map((m) => m.content);
    expect(last).toEqual(['You are the test agent.', 'one', 'echo: one', 'two', 'echo: two', 'three']);
  });

  it('takes the charge the provider reports over the price table, and says which part of /usage is reported', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'routed' },
      model: priced(),
      spendCaps: { agent: { dailyUsd: 3.5 } },
    });
    const key = 'agent:default/routed:api:dm:u1';
    await say(agentId, key, 'routed one');
    expect((await say(agentId, key, '/usage')).reply).toMatch(/\nCost: \$0\.43 as reported by the provider\.$/);
    await say(agentId, key, 'priced by the table'); // $3 estimated
    const { rows } = await sys.rt.db.pool.query<{ cost_usd: string; cost_status: string }>(`SELECT cost_usd, cost_status FROM model_call_usage WHERE agent_id = $1 ORDER BY id`, [agentId]);
    expect(rows).toEqual([{ cost_usd: '0.432100', cost_status: 'actual' }, { cost_usd: '3.000000', cost_status: 'estimated' }]);
    expect((await say(agentId, key, '/usage')).reply).toMatch(/\nCost: \$3\.43 \(\$0\.43 reported by the provider, \$3\.00 estimated\)\.$/);
    // The cap counts the reported charge: $3.43 spent of $3.50, so one more call may go out…
    expect((await say(agentId, key, 'routed two')).a.outcome).toBe('completed');
    // …and now $3.86 is over it.
    expect((await say(agentId, key, 'routed three')).reply).toMatch(/daily spend cap is reached \(\$3\.86 of \$3\.50 used\)/);
    const metrics = await sys.rt.metrics.registry.metrics();
    expect(metrics).toMatch(/hermes_model_cost_usd_total\{agent="default\/routed",model="gpt-test",status="actual"[^}]*\} 0\.8642/);
  });

  it('answers a model whose token counts are garbage or missing, prices the call on counts estimated from its text, and the cap counts them', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'garbled' },
      model: priced(),
      spendCaps: { agent: { dailyUsd: 0.000_001 } },
    });
    const key = 'agent:default/garbled:api:dm:u1';
    // Text where a count belongs: the answer still comes (it used to fail the turn in Prometheus' counter).
    const first = await say(agentId, key, 'garbage one');
    expect([first.a.outcome, first.reply]).toEqual(['completed', 'echo: garbage one']);
    const rows = await callRows(agentId);
    expect(rows).toHaveLength(1);
    expectEstimated(rows[0], 'echo: garbage one');
    // The cap counted the estimate: the next call is refused, where a negative count would have
    // lowered the spend and a missing one cost nothing.
    expect((await say(agentId, key, 'negative two')).reply).toMatch(/daily spend cap is reached/);
    const metrics = await sys.rt.metrics.registry.metrics();
    expect(metrics).toMatch(/hermes_model_usage_estimated_total\{agent="default\/garbled",model="gpt-test"[^}]*\} 1/);
  });

  it('never lowers the spend on negative counts or charges nothing on missing ones', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'unreported' }, model: priced() });
    const key = 'agent:default/unreported:api:dm:u1';
    const said = ['negative one', 'silent two'];
    for (const m of said) expect((await say(agentId, key, m)).a.outcome).toBe('completed');
    const rows = await callRows(agentId);
    expect(rows).toHaveLength(2);
    for (const [i, r] of rows.entries()) expectEstimated(r, `echo: ${said[i]}`);
  });

  it('refuses before calling the model once the daily cap is reached, with a clear message', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'capped' },
      model: priced(),
      spendCaps: { agent: { dailyUsd: 5 } },
    });
    const key = 'agent:default/capped:api:dm:u1';
    expect((await say(agentId, key, 'first')).a.outcome).toBe('completed'); // $3
    expect((await say(agentId, key, 'second')).a.outcome).toBe('completed'); // $6 — over after this call
    const before = sys.model.requests.length;
    const { a, reply } = await say(agentId, key, 'third');
    expect(a.outcome).toBe('failed');
    expect(reply).toBe("Sorry — this agent's daily spend cap is reached ($6.00 of $5.00 used), so I did not call the model. It resets at 00:00 UTC; an operator can raise the cap.");
    expect(sys.model.requests.length).toBe(before);
    // What HermesSpendApproachingCap and HermesSpendCapReached watch: the share of the cap used, and the refusal.
    const metrics = await sys.rt.metrics.registry.metrics();
    expect(metrics).toMatch(/hermes_spend_cap_used_ratio\{agent="default\/capped",scope="agent",period="daily"[^}]*\} 1\.2\n/);
    expect(metrics).toMatch(/hermes_spend_cap_refusals_total\{agent="default\/capped",scope="agent",period="daily"[^}]*\} 1\n/);
  });
});

describe('per-user monthly cap', () => {
  it('stops one user at their monthly cap while another user of the same agent goes on', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'monthly' },
      model: priced(),
      spendCaps: { user: { monthlyUsd: 2 } },
    });
    const alice = 'agent:default/monthly:api:dm:alice';
    expect((await say(agentId, alice, 'first')).a.outcome).toBe('completed'); // $3: over after this call
    const before = sys.model.requests.length;
    const refused = await say(agentId, alice, 'second');
    expect(refused.a.outcome).toBe('failed');
    expect(refused.reply).toMatch(/monthly spend cap/);
    expect(sys.model.requests.length).toBe(before);
    const bob = await say(agentId, 'agent:default/monthly:api:dm:bob', 'hello');
    expect(bob.a.outcome).toBe('completed');
  });
});

describe('price table', () => {
  const usage = { ...emptyUsage(), inputTokens: 1_000_000, cacheReadTokens: 400_000, outputTokens: 1_000_000 };
  it('bills cached input at the cache rate, prices by the longest model prefix, and never guesses', () => {
    expect(estimateCost({ provider: 'openai', model: 'gpt-4o-mini-2024-07-18', usage })).toEqual({ costUsd: 0.6 * 0.15 + 0.4 * 0.075 + 0.6, status: 'estimated' });
    expect(estimateCost({ provider: 'anthropic', model: 'claude-sonnet-4-20250514', usage: { ...usage, cacheWriteTokens: 1_000_000 } }))
      .toEqual({ costUsd: 3 + 0.4 * 0.3 + 15 + 3.75, status: 'estimated' });
    expect(estimateCost({ provider: 'openai', model: 'mystery-1', usage })).toEqual({ costUsd: null, status: 'unknown' });
    expect(estimateCost({ provider: 'openai-compatible', model: 'llama3.2', local: true, usage })).toEqual({ costUsd: 0, status: 'included' });
    // A charge the provider reported wins over every table, even for unknown or local models.
    expect(estimateCost({ provider: 'openai-compatible', model: 'mystery-1', local: true, usage: { ...usage, costUsd: 0.0000123 } })).toEqual({ costUsd: 0.000012, status: 'actual' });
  });
});

const isSummary = (b: ChatRequestBody) => b.messages[0]?.content === SUMMARY_INSTRUCTION;
const capMessage = (spent: string, cap: string) => `Sorry — this agent's daily spend cap is reached (${spent} of ${cap} used), so I did not call the model. It resets at 00:00 UTC; an operator can raise the cap.`;

/**
 * A capped agent (window 2000 tokens: the loop compresses over 1500, hygiene over 1700) whose
 * session had one real turn ("start", $3) and then `seed` stored messages of ~64 tokens each.
 */
async function cappedConversation(name: string, seed: number, overrides: Partial<CompiledAgent> = {}) {
  const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
    agent: { namespace: 'default', name }, model: { ...priced(), contextWindow: 2_000 }, spendCaps: { agent: { dailyUsd: 5 } }, ...overrides,
  });
  const key = `agent:default/${name}:api:dm:u1`;
  const { a } = await say(agentId, key, 'start');
  for (let i = 0; i < seed; i++) await appendMessage(sys.rt.db.pool, a.sessionId, { role: i % 2 ? 'assistant' : 'user', content: `old ${i} ${'lorem ipsum '.repeat(20)}` });
  const rows = async () => (await sys.rt.db.pool.query<{ task: string; cost_usd: string }>(`SELECT task, cost_usd FROM model_call_usage WHERE agent_id = $1 ORDER BY id`, [agentId])).rows;
  return { agentId, key, rows, send: (content: string) => say(agentId, key, content) };
}

describe('summary calls count toward the spend caps', () => {
  it('the loop\'s compression summary is recorded as `compression`, and a cap it reaches refuses the answer\'s call', async () => {
    const c = await cappedConversation('loop-summary', 24); // over the loop's threshold, under the hygiene mark
    const before = sys.model.requests.length;
    const { a, reply } = await c.send('go on');
    const sent = sys.model.requests.slice(before).map((r) => r.body);
    expect(sent.map(isSummary)).toEqual([true]); // the summary went out ($3: $6 of $5), the answer's call did not
    expect(a.outcome).toBe('failed');
    expect(reply).toBe(capMessage('$6.00', '$5.00'));
    expect(await c.rows()).toEqual([{ task: 'turn', cost_usd: '3.000000' }, { task: 'compression', cost_usd: '3.000000' }]);
  });

  it('/compress is recorded as `compress_command` and counts: the next message is refused', async () => {
    const c = await cappedConversation('compress-command', 24);
    expect((await c.send('/compress')).reply).toMatch(/^Compressed \d+ earlier messages into a model-written summary\.$/);
    const before = sys.model.requests.length;
    const next = await c.send('and now?');
    expect(next.reply).toBe(capMessage('$6.00', '$5.00'));
    expect(sys.model.requests.length).toBe(before);
    expect(await c.rows()).toEqual([{ task: 'turn', cost_usd: '3.000000' }, { task: 'compress_command', cost_usd: '3.000000' }]);
    // /usage says what the summaries cost, inside the totals.
    expect((await c.send('/usage')).reply).toBe([
      'Usage in this conversation: 2 model call(s).',
      'Tokens — input 2000000, output 200000, cache read 0, cache write 0, reasoning 0.',
      'Cost: $6.00 estimated.',
      'By task: answers 1 ($3.00), /compress summaries 1 ($3.00).',
    ].join('\n'));
  });

  it('hygiene pre-compression is recorded as `hygiene_compression` and a cap it reaches refuses the turn\'s call', async () => {
    const c = await cappedConversation('hygiene-summary', 30); // ~1920 tokens stored: over the 85 % mark (1700)
    const before = sys.model.requests.length;
    const { reply } = await c.send('hello again');
    expect(sys.model.requests.slice(before).map((r) => isSummary(r.body))).toEqual([true]);
    expect(reply).toBe(capMessage('$6.00', '$5.00'));
    expect(await c.rows()).toEqual([{ task: 'turn', cost_usd: '3.000000' }, { task: 'hygiene_compression', cost_usd: '3.000000' }]);
  });

  it('a summary is not sent once the cap is reached: the digest stands in for it', async () => {
    const c = await cappedConversation('digest-only', 24, { spendCaps: { agent: { dailyUsd: 3 } } }); // "start" alone reaches it
    const before = sys.model.requests.length;
    expect((await c.send('/compress')).reply).toMatch(/into an automatic digest \(the summary call failed, was refused by a spend cap, or is cooling down\)\.$/);
    expect(sys.model.requests.length).toBe(before);
    expect(await c.rows()).toEqual([{ task: 'turn', cost_usd: '3.000000' }]);
  });
});

describe('models without a known price under a cap', () => {
  const unpriced = () => ({ provider: 'openai' as const, model: 'gpt-test', baseURL: sys.model.baseURL, apiKeyRef: { name: 'openai', key: 'OPENAI_API_KEY' } });

  it('are refused before the call with a message saying to set pricing — the primary or a fallback', async () => {
    const primary = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'unpriced' }, model: unpriced(), spendCaps: { user: { monthlyUsd: 10 } } });
    const before = sys.model.requests.length;
    const { a, reply } = await say(primary, 'agent:default/unpriced:api:dm:u1', 'hello');
    expect(a.outcome).toBe('failed');
    expect(reply).toBe('Sorry — I did not call the model: this agent has a spend cap, and the model "gpt-test" has no known price, so its spend could not be counted. An operator needs to set spec.model.pricing in the Profile (USD per million tokens), or allow unpriced models with spendCaps.allowUnpriced: true.');
    const fallback = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'unpriced-fallback' }, model: priced(), fallbackModels: [{ ...unpriced(), model: 'mystery-1' }], spendCaps: { agent: { dailyUsd: 10 } },
    });
    expect((await say(fallback, 'agent:default/unpriced-fallback:api:dm:u1', 'hello')).reply)
      .toMatch(/the model "mystery-1" has no known price.*set pricing on that fallback model \(spec\.fallbackModels\[\]\) in the Profile/);
    expect(sys.model.requests.length).toBe(before);
  });

  it('run when the Profile says so (spendCaps.allowUnpriced), and without a cap', async () => {
    const allowed = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'unpriced-ok' }, model: unpriced(), spendCaps: { agent: { dailyUsd: 1 }, allowUnpriced: true } });
    expect((await say(allowed, 'agent:default/unpriced-ok:api:dm:u1', 'hello')).a.outcome).toBe('completed');
    expect((await say(allowed, 'agent:default/unpriced-ok:api:dm:u1', 'routed: reported')).a.outcome).toBe('completed'); // $0.43 reported
    // The reported charge counts: $0.43 of $1; an unreported one cannot (a local endpoint: included, $0).
    const { rows } = await sys.rt.db.pool.query<{ cost_status: string; cost_usd: string }>(`SELECT cost_status, cost_usd FROM model_call_usage WHERE agent_id = $1 ORDER BY id`, [allowed]);
    expect(rows).toEqual([{ cost_status: 'included', cost_usd: '0.000000' }, { cost_status: 'actual', cost_usd: '0.432100' }]);
    const uncapped = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'unpriced-free' }, model: unpriced() });
    expect((await say(uncapped, 'agent:default/unpriced-free:api:dm:u1', 'hello')).a.outcome).toBe('completed');
  });
});

