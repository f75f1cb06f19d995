// Mixture of Agents in real worker turns (Postgres, Redis, the fake model answering per model name):
// a Profile whose model is a moa preset asks its reference models in parallel with the advisory
// view and no tools, the aggregator answers with their advice (tools and all), and each call is its
// own usage row priced by its own model; under `user_turn` fan-out the references are asked once
// per user turn, under `per_iteration` before every aggregator call; a failing reference is left
// out; `/moa <prompt>` answers one prompt with the default preset and the next message goes to the
// Profile's model again; under a spend cap every member needs a price.
import { describe, expect, it } from 'vitest';
import type { CompiledAgent } from '../../../services/core/index.js';
import { lastUser, toolsAsTold, type ChatRequestBody, type Script } from '../../support/fake-openai.js';
import { eventually } from '../../support/services.js';
import { createTestAgent, runTurn, useAgentSystem } from '../../support/system.js';

const adviceOf = (b: ChatRequestBody) => b.messages.find((m) => m.role === 'system' && m.content.startsWith('Advice from'))?.content;

function script(b: ChatRequestBody): Script {
  const usage = { prompt_tokens: 1_000, completion_tokens: 100 };
  switch (b.model) {
    case 'ref-a': return { text: `A thinks: ${lastUser(b).slice(0, 40)}`, usage };
    case 'ref-b': return { text: 'B thinks: four', usage };
    case 'ref-broken': return { status: 400, errorMessage: 'this reference model is broken' };
    case 'ref-hang': return { hold: new Promise<void>(() => undefined), text: 'never' };
    case 'agg': {
      const told = toolsAsTold(b);
      if (told.toolCalls) return { ...told, usage };
      const advice = adviceOf(b);
      const refs = advice ? (advice.match(/\[Reference \d+: [^\]]+\]/g) ?? []).join(' ') : 'none';
      return { text: `${told.text === 'ok' ? 'final' : told.text} | advice: ${refs}`, usage };
    }
    default: return { text: `plain ${b.model}` };
  }
}

// A reference may take 1 s here (120 s in production), so a hanging one is left out quickly.
const sys = useAgentSystem(script, { loop: { moaReferenceTimeoutMs: 1_000 } });

const member = (model: string, priced = false) => ({
  provider: 'openai' as const, model, baseURL: sys.model.baseURL, apiKeyRef: { name: 'openai', key: 'OPENAI_API_KEY' },
  ...(priced ? { pricing: { inputPerMTok: 1, outputPerMTok: 10 } } : {}),
});

function preset(name: string, refs: string[], over: Partial<NonNullable<CompiledAgent['moa']>['presets'][number]> = {}) {
  return { name, referenceModels: refs.map((r) => member(r)), aggregator: member('agg'), referenceTemperature: 0.6, aggregatorTemperature: 0.4, maxTokens: 512, fanout: 'user_turn' as const, ...over };
}

const forAdmission = (id: string) => sys.model.requests.filter((r) => r.body.messages.some((m) => m.role === 'user' && m.content.includes(id)));

async function usageRows(admissionId: string) {
  const { rows } = await sys.rt.db.pool.query<{ task: string; model: string; cost_usd: string | null }>(
    'SELECT task, model, cost_usd FROM model_call_usage WHERE admission_id = $1 ORDER BY task, model', [admissionId]);
  return rows;
}

describe('Mixture of Agents', () => {
  it('as the model: references in parallel without tools, the aggregator answers with their advice, one usage row per call', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'council' }, model: { provider: 'moa', model: 'council' },
      moa: { defaultPreset: 'council', presets: [preset('council', ['ref-a', 'ref-b'])] },
    });
    const { a, reply } = await runTurn(sys.rt, { agentId, sessionKey: `${agentId}:u`, content: 'q1: what is two and two?' });
    expect(a.outcome).toBe('completed');
    expect(reply).toBe('final | advice: [Reference 1: ref-a] [Reference 2: ref-b]');
    const seen = forAdmission('q1:');
    const refs = seen.filter((r) => r.body.model.startsWith('ref-'));
    expect(refs.map((r) => r.body.model).sort()).toEqual(['ref-a', 'ref-b']);
    for (const r of refs) {
      expect(r.body.tools).toBeUndefined();
      expect(r.body.messages.map((m) => m.role)).toEqual(['system', 'user']);
      expect(r.body.messages[1]!.content).toBe('q1: what is two and two?');
      expect(r.body.temperature).toBe(0.6);
    }
    const agg = seen.filter((r) => r.body.model === 'agg');
    expect(agg).toHaveLength(1);
    expect(agg[0]!.body.temperature).toBe(0.4);
    expect(adviceOf(agg[0]!.body)).toContain('B thinks: four');
    expect((await usageRows(a.id)).map((r) => [r.task, r.model])).toEqual([['moa_reference', 'ref-a'], ['moa_reference', 'ref-b'], ['turn', 'agg']]);
  });

  it('user_turn fan-out asks the references once per user turn; per_iteration before every aggregator call', async () => {
    const moa = { defaultPreset: 'once', presets: [preset('once', ['ref-a', 'ref-b']), preset('every', ['ref-a', 'ref-b'], { fanout: 'per_iteration' })] };
    const once = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'once' }, model: { provider: 'moa', model: 'once' }, moa, toolsets: ['clock'] });
    const every = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'every' }, model: { provider: 'moa', model: 'every' }, moa, toolsets: ['clock'] });
    const r1 = await runTurn(sys.rt, { agentId: once, sessionKey: `${once}:u`, content: 'tool get_time {"q":"q2-once"}' });
    const r2 = await runTurn(sys.rt, { agentId: every, sessionKey: `${every}:u`, content: 'tool get_time {"q":"q2-every"}' });
    for (const r of [r1, r2]) expect(r.reply).toMatch(/^tool said: .*\| advice: \[Reference 1: ref-a\] \[Reference 2: ref-b\]$/s);
    const count = (id: string, model: string) => forAdmission(id).filter((r) => r.body.model === model).length;
    expect([count('q2-once', 'agg'), count('q2-once', 'ref-a'), count('q2-once', 'ref-b')]).toEqual([2, 1, 1]);
    expect([count('q2-every', 'agg'), count('q2-every', 'ref-a'), count('q2-every', 'ref-b')]).toEqual([2, 2, 2]);
    // The aggregator is offered the agent's tools; the references never are.
    expect(forAdmission('q2-once').find((r) => r.body.model === 'agg')!.body.tools?.map((t) => t.function.name)).toContain('get_time');
    expect((await usageRows(r2.a.id)).filter((r) => r.task === 'moa_reference')).toHaveLength(4);
  });

  it('leaves a failing reference out and still answers', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'half-broken' }, model: { provider: 'moa', model: 'p' },
      moa: { defaultPreset: 'p', presets: [preset('p', ['ref-a', 'ref-broken'])] },
    });
    const { a, reply } = await runTurn(sys.rt, { agentId, sessionKey: `${agentId}:u`, content: 'q3: still there?' });
    expect(reply).toBe('final | advice: [Reference 1: ref-a]');
    expect((await usageRows(a.id)).map((r) => [r.task, r.model])).toEqual([['moa_reference', 'ref-a'], ['turn', 'agg']]);
  });

  it('leaves a reference that never answers out at its deadline, and still answers', async () => {
    // A hung reference held the whole turn until the liveness watchdog failed it (600 s, "no progress").
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'half-hung' }, model: { provider: 'moa', model: 'p' },
      moa: { defaultPreset: 'p', presets: [preset('p', ['ref-a', 'ref-hang'])] },
    });
    const { a, reply } = await runTurn(sys.rt, { agentId, sessionKey: `${agentId}:u`, content: 'q9: anyone?' });
    expect([a.outcome, reply]).toEqual(['completed', 'final | advice: [Reference 1: ref-a]']);
    const hung = sys.model.requests.find((r) => r.body.model === 'ref-hang' && lastUser(r.body).includes('q9'))!;
    await eventually(() => hung.aborted || undefined, 'the hung reference\'s request cut');
    expect((await usageRows(a.id)).map((r) => [r.task, r.model])).toEqual([['moa_reference', 'ref-a'], ['turn', 'agg']]);
  });

  it('/moa answers one prompt with the default preset; the next message goes to the Profile\'s model', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'one-shot' }, moa: { defaultPreset: 'council', presets: [preset('council', ['ref-a', 'ref-b'])] },
    });
    const first = await runTurn(sys.rt, { agentId, sessionKey: `${agentId}:u`, content: '/moa q4: plan the launch' });
    expect(first.reply).toBe('final | advice: [Reference 1: ref-a] [Reference 2: ref-b]');
    const refs = forAdmission('q4:').filter((r) => r.body.model.startsWith('ref-'));
    expect(refs.map((r) => r.body.messages[1]!.content)).toEqual(['q4: plan the launch', 'q4: plan the launch']);
    const second = await runTurn(sys.rt, { agentId, sessionKey: `${agentId}:u`, content: 'q5: and now?' });
    expect(second.reply).toBe('plain gpt-test');
    expect(forAdmission('q5:').map((r) => r.body.model)).toEqual(['gpt-test']);
    const stored = await sys.rt.db.pool.query<{ content: string }>("SELECT content FROM messages WHERE session_id = $1 AND role = 'user' ORDER BY seq", [first.a.sessionId]);
    expect(stored.rows.map((r) => r.content)).toEqual(['/moa q4: plan the launch', 'q5: and now?']);
  });

  it('/moa on an agent without presets says so, without a model call', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'no-moa' } });
    const before = sys.model.requests.length;
    const { reply } = await runTurn(sys.rt, { agentId, sessionKey: `${agentId}:u`, content: '/moa q6: anything' });
    expect(reply).toMatch(/no Mixture-of-Agents preset.*spec\.moa\.presets/);
    expect(sys.model.requests.length).toBe(before);
  });

  it('under a spend cap every member needs a price; priced members are each costed by their own price', async () => {
    const moa = (aggPriced: boolean) => ({ defaultPreset: 'p', presets: [{ ...preset('p', []), referenceModels: [member('ref-a', true), member('ref-b', true)], aggregator: member('agg', aggPriced) }] });
    const caps = { agent: { dailyUsd: 100 } };
    const unpriced = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'capped-unpriced' }, model: { provider: 'moa', model: 'p' }, moa: moa(false), spendCaps: caps });
    const before = sys.model.requests.length;
    const refused = await runTurn(sys.rt, { agentId: unpriced, sessionKey: `${unpriced}:u`, content: 'q7: go' });
    expect(refused.reply).toMatch(/the model "agg" has no known price.*spec\.moa\.presets/);
    expect(sys.model.requests.length).toBe(before);

    const priced = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'capped-priced' }, model: { provider: 'moa', model: 'p' }, moa: moa(true), spendCaps: caps });
    const { a } = await runTurn(sys.rt, { agentId: priced, sessionKey: `${priced}:u`, content: 'q8: go' });
    const rows = await usageRows(a.id);
    // 1 000 input tokens at $1/M + 100 output tokens at $10/M = $0.002 per call.
    expect(rows.map((r) => [r.task, r.model, Number(r.cost_usd)])).toEqual([['moa_reference', 'ref-a', 0.002], ['moa_reference', 'ref-b', 0.002], ['turn', 'agg', 0.002]]);
  });
});
