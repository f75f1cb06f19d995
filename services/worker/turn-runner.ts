// Runs one claimed admission to its end: config, prompt, history, the model call with the
// signals that may cancel it, then the terminal transaction and the delivery enqueue.
import type { Redis } from 'ioredis';
import {
  AgentCache, type Admission, type CompiledAgent, type Config, type Db, type Lease, type Logger, type Metrics, type Queues,
  enqueueDelivery, finishTurn, inSpan, listMessages, publishTurnEvent, LeaseLostError, extractTraceContext, injectTraceContext,
  type TurnResult,
} from '../core/index.js';
import { buildSystemPrompt, createProvider, runTextTurn, ProviderConfigError, type ChatMessage, type SecretResolver } from '../agent/index.js';

export interface TurnDeps {
  config: Config;
  db: Db;
  redis: Redis;
  queues: Queues;
  agents: AgentCache;
  secrets: SecretResolver;
  log: Logger;
  metrics: Metrics;
}

async function systemPromptFor(deps: TurnDeps, adm: Admission, build: () => string): Promise<string> {
  // Built once per session and stored, so the provider's prefix cache stays warm across turns.
  const { rows } = await deps.db.pool.query<{ system_prompt: string }>(
    `UPDATE sessions SET system_prompt = COALESCE(system_prompt, $2) WHERE id = $1 RETURNING system_prompt`,
    [adm.sessionId, build()],
  );
  return rows[0]!.system_prompt;
}

async function historyFor(deps: TurnDeps, adm: Admission): Promise<ChatMessage[]> {
  if (adm.callerHistory) {
    const prior = adm.callerHistory.filter((m) => m.role !== 'system').map((m) => ({ role: m.role, content: m.content }) as ChatMessage);
    return [...prior, { role: 'user', content: adm.content }];
  }
  const stored = await listMessages(deps.db.pool, adm.sessionId);
  return stored.filter((m) => m.role === 'user' || m.role === 'assistant').map((m) => ({ role: m.role as 'user' | 'assistant', content: m.content }));
}

async function produce(deps: TurnDeps, adm: Admission, signal: AbortSignal, agent: CompiledAgent | undefined): Promise<TurnResult> {
  if (!agent) return { outcome: 'failed', reply: 'This agent is no longer configured.', error: `agent ${adm.agentId} has no current revision` };
  let provider;
  try {
    provider = await createProvider(agent.model, deps.secrets, { timeoutMs: deps.config.HERMES_MODEL_TIMEOUT_SECONDS * 1_000, ...(deps.config.OPENAI_BASE_URL ? { openaiBaseURL: deps.config.OPENAI_BASE_URL } : {}) });
  } catch (err) {
    if (err instanceof ProviderConfigError) return { outcome: 'failed', reply: 'This agent is misconfigured: an operator needs to fix its model settings.', error: err.message };
    throw err;
  }
  const systemPrompt = await systemPromptFor(deps, adm, () => buildSystemPrompt(agent));
  const history = await historyFor(deps, adm);
  const result = await runTextTurn({
    agent, provider, systemPrompt, history, signal,
    onDelta: (text) => void publishTurnEvent(deps.redis, deps.config.HERMES_QUEUE_PREFIX, adm.id, { type: 'delta', text }).catch(() => undefined),
  });
  const labels = { agent: `${agent.agent.namespace}/${agent.agent.name}`, model: agent.model.model };
  deps.metrics.modelCalls.inc({ ...labels, outcome: result.outcome });
  if (result.usage) {
    const u = result.usage as { inputTokens: number; outputTokens: number; cacheReadTokens: number; reasoningTokens: number };
    deps.metrics.tokens.inc({ ...labels, kind: 'input' }, u.inputTokens);
    deps.metrics.tokens.inc({ ...labels, kind: 'output' }, u.outputTokens);
    deps.metrics.tokens.inc({ ...labels, kind: 'cache_read' }, u.cacheReadTokens);
    deps.metrics.tokens.inc({ ...labels, kind: 'reasoning' }, u.reasoningTokens);
  }
  return result;
}

/** Runs `adm` (already `started` by this lease holder) to `terminal`. */
export async function runAdmission(deps: TurnDeps, lease: Lease, adm: Admission, signal: AbortSignal): Promise<void> {
  const agent = (await deps.agents.getById(adm.agentId))?.compiled;
  const agentLabel = agent ? `${agent.agent.namespace}/${agent.agent.name}` : adm.agentId;
  const log = deps.log.child({ admission: adm.id, session: adm.sessionId, agent: agentLabel });
  const timer = deps.metrics.turnSeconds.startTimer({ agent: agentLabel });
  await inSpan('hermes.turn', { 'hermes.admission_id': adm.id, 'hermes.session_id': adm.sessionId }, extractTraceContext(adm.traceContext), async () => {
    log.info('Started turn');
    const result = await produce(deps, adm, signal, agent).catch((err: unknown) => ({ outcome: 'failed' as const, reply: 'Sorry — something went wrong on our side.', error: (err as Error).message }));
    try {
      const done = await finishTurn(deps.db, lease, adm.id, result);
      deps.metrics.turns.inc({ agent: agentLabel, outcome: result.outcome });
      log.info({ outcome: result.outcome, obligation: done.obligationId }, 'Finished turn');
      await publishTurnEvent(deps.redis, deps.config.HERMES_QUEUE_PREFIX, adm.id, { type: 'changed' }).catch(() => undefined);
      await enqueueDelivery(deps.queues, { obligationId: done.obligationId, trace: injectTraceContext() })
        .catch((err: unknown) => log.warn({ err }, 'Delivery enqueue failed; the sweeper will pick it up'));
    } catch (err) {
      if (err instanceof LeaseLostError) {
        log.warn('Lease lost before the turn could finish; recovery will settle it as unknown');
        return;
      }
      deps.metrics.ledgerWriteFailures.inc({ operation: 'finish_turn' });
      throw err;
    } finally {
      timer();
    }
  });
}
