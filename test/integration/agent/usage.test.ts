// Usage and spend: per-call rows with tokens and estimated cost, `/usage`, Prometheus counters by
// agent and model, and spend caps checked before each call (over the cap, nothing is sent).
import { describe, expect, it } from 'vitest';
import { estimateCost, emptyUsage } from '../../../services/agent/index.js';
import { lastUser, withoutSessionFacts } from '../../support/fake-openai.js';
import { createTestAgent, runTurn, useAgentSystem } from '../../support/system.js';

// Messages starting "routed" come back with a provider-reported charge, as OpenRouter's usage.cost.
const sys = useAgentSystem((b) => ({ text: `echo: ${lastUser(b)}`, usage: { prompt_tokens: 1_000_000, completion_tokens: 100_000, ...(lastUser(b).startsWith('routed') ? { cost: 0.4321 } : {}) } }));

/** The test model at $2 / $10 per million input / output tokens: a call of the fake's usage costs $3. */
const priced = () => ({ provider: 'openai' as const, model: 'gpt-test', baseURL: sys.model.baseURL, apiKeyRef: { name: 'openai', key: 'OPENAI_API_KEY' }, pricing: { inputPerMTok: 2, outputPerMTok: 10 } });
const say = (agentId: string, key: string, content: string) => runTurn(sys.rt, { agentId, sessionKey: key, content, userId: key });

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
