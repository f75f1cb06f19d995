// Usage per model call (tokens by kind, estimated cost) and the sums that `/usage` and the spend
// caps read. One row per successful provider call — the turn's own calls and the summary calls
// made to compress its history, each with its task; turn and session totals are sums over them.
import type { Sql } from '../db.js';

/**
 * What a model call was for: `turn` (answering), `compression` (the loop's summary over the
 * threshold or after a context overflow), `compress_command` (`/compress`),
 * `hygiene_compression` (pre-compression at turn start), `subagent` (a delegated child's answers,
 * recorded in its parent's session). All count toward the spend caps.
 */
export type UsageTask = 'turn' | 'compression' | 'compress_command' | 'hygiene_compression' | 'approval' | 'background_review' | 'web_extract' | 'moa_reference' | 'subagent';

export interface ModelCallUsageRow {
  agentId: string;
  profileKey: string;
  sessionId: string;
  userId: string | null;
  admissionId: string | null;
  provider: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  costUsd: number | null;
  costStatus: 'actual' | 'estimated' | 'unknown' | 'included';
  task: UsageTask;
  /** The provider sent no readable token counts: these are estimated from the text (counted in Prometheus, not stored). */
  tokensEstimated?: true;
}

export async function recordModelCall(sql: Sql, r: ModelCallUsageRow): Promise<void> {
  await sql.query(
    `INSERT INTO model_call_usage (agent_id, profile_key, session_id, user_id, admission_id, provider, model,
       input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, cost_status, task)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
    [r.agentId, r.profileKey, r.sessionId, r.userId, r.admissionId, r.provider, r.model,
      r.inputTokens, r.outputTokens, r.cacheReadTokens, r.cacheWriteTokens, r.reasoningTokens, r.costUsd, r.costStatus, r.task],
  );
}

export interface UsageTotals {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  costUsd: number;
  /** Calls whose model had no known price (their cost is not in costUsd). */
  unpricedCalls: number;
  /** The part of costUsd the provider reported (status `actual`); the rest is estimated. */
  actualUsd: number;
}

/** Calls and cost of one task within a session. */
export interface TaskUsage {
  task: UsageTask;
  calls: number;
  costUsd: number;
}

/** The session's calls and cost by task, turn first. */
export async function sessionUsageByTask(sql: Sql, sessionId: string): Promise<TaskUsage[]> {
  const { rows } = await sql.query<{ task: UsageTask; calls: string; costUsd: string }>(
    `SELECT task, count(*) AS calls, coalesce(sum(cost_usd), 0) AS "costUsd" FROM model_call_usage WHERE session_id = $1
     GROUP BY task ORDER BY task <> 'turn', task`,
    [sessionId],
  );
  return rows.map((r) => ({ task: r.task, calls: Number(r.calls), costUsd: Number(r.costUsd) }));
}

export async function sessionUsage(sql: Sql, sessionId: string): Promise<UsageTotals> {
  const { rows } = await sql.query<Record<keyof UsageTotals, string | number | null>>(
    `SELECT count(*) AS calls, coalesce(sum(input_tokens), 0) AS "inputTokens", coalesce(sum(output_tokens), 0) AS "outputTokens",
            coalesce(sum(cache_read_tokens), 0) AS "cacheReadTokens", coalesce(sum(cache_write_tokens), 0) AS "cacheWriteTokens",
            coalesce(sum(reasoning_tokens), 0) AS "reasoningTokens", coalesce(sum(cost_usd), 0) AS "costUsd",
            count(*) FILTER (WHERE cost_status = 'unknown') AS "unpricedCalls",
            coalesce(sum(cost_usd) FILTER (WHERE cost_status = 'actual'), 0) AS "actualUsd"
     FROM model_call_usage WHERE session_id = $1`,
    [sessionId],
  );
  const r = rows[0]!;
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v ?? 0)])) as unknown as UsageTotals;
}

export type SpendScope = { kind: 'agent'; agentId: string } | { kind: 'profile'; profileKey: string } | { kind: 'user'; userId: string };

/** USD spent in `scope` since `since`: reported by the provider where it did, estimated elsewhere. */
export async function spendSince(sql: Sql, scope: SpendScope, since: Date): Promise<number> {
  const [column, value] = scope.kind === 'agent' ? ['agent_id', scope.agentId] : scope.kind === 'profile' ? ['profile_key', scope.profileKey] : ['user_id', scope.userId];
  const { rows } = await sql.query<{ spent: string | null }>(
    `SELECT sum(cost_usd) AS spent FROM model_call_usage WHERE ${column} = $1 AND created_at >= $2`,
    [value, since],
  );
  return Number(rows[0]?.spent ?? 0);
}

const usd = (n: number) => `$${n.toFixed(2)}`;

const TASK_WORDS: Record<UsageTask, string> = {
  turn: 'answers', compression: 'compression summaries', compress_command: '/compress summaries', hygiene_compression: 'pre-turn compression summaries', approval: 'command reviews (smart approvals)',
  background_review: 'background reviews (learning)', web_extract: 'web page summaries (web_extract)', moa_reference: 'Mixture-of-Agents reference answers', subagent: 'delegated tasks (subagents)',
};

/** How sure a total is: all reported by the provider, all estimated, or how it splits. */
function costWords(total: number, actual: number): string {
  if (actual <= 0) return 'estimated';
  if (actual >= total) return 'as reported by the provider';
  return `(${usd(actual)} reported by the provider, ${usd(total - actual)} estimated)`;
}

/** `/usage`: the session's tokens and cost (reported or estimated), without calling the model. */
export async function sessionUsageText(sql: Sql, sessionId: string): Promise<string> {
  const t = await sessionUsage(sql, sessionId);
  const byTask = await sessionUsageByTask(sql, sessionId);
  const cost = `${usd(t.costUsd)} ${costWords(t.costUsd, t.actualUsd)}${t.unpricedCalls ? ` (${t.unpricedCalls} call(s) with no known price not included)` : ''}`;
  return [
    `Usage in this conversation: ${t.calls} model call(s).`,
    `Tokens — input ${t.inputTokens}, output ${t.outputTokens}, cache read ${t.cacheReadTokens}, cache write ${t.cacheWriteTokens}, reasoning ${t.reasoningTokens}.`,
    `Cost: ${cost}.`,
    // Only when summaries were made: they are part of the totals above.
    ...(byTask.some((b) => b.task !== 'turn') ? [`By task: ${byTask.map((b) => `${TASK_WORDS[b.task] ?? b.task} ${b.calls} (${usd(b.costUsd)})`).join(', ')}.`] : []),
  ].join('\n');
}
