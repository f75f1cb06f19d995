// The background review (the learning loop, SPEC "Memory and skills"): after a turn's reply is
// delivered, a forked turn looks back over the conversation and may save memory (the agent's
// notes, the person's profile) and skills. It runs as its own queued job — never delaying the
// reply —, at most 16 model calls, with only memory, skill_manage and read-only search tools,
// the session's own stored prompt (a byte-identical prefix: the provider's cache serves it) and
// the same spend caps as the turn, its calls recorded with task `background_review`. Nothing it
// says enters the transcript. Claimed once per admission (background_reviews), so a job delivered
// twice never reviews twice; a review that fails is recorded and not retried. Skipped for cron
// turns, turns that did not complete, turns answered without the model (commands), and Profiles
// without `spec.learning.backgroundReview`.
import {
  getAdmission, readTurnContext, type Admission, type CompiledAgent, type Db, type TurnContext,
} from '../core/index.js';
import { directRoutes, promptMessages, runAgentLoop, type ChatMessage, type Tool } from '../agent/index.js';
import { spendAccounting } from './usage.js';
import { historyFor, sessionPrompt, speaksAsGuest } from './turn-context.js';
import type { TurnDeps } from './turn-runner.js';
import { createLoopDeps } from './loop-deps.js';
import { promptParts, turnTools } from './turn-tools.js';
import { turnPermissions } from './turn-permissions.js';
import { modelOptions, routesOf } from './turn-model.js';
import { reviewSkipReason } from './review-policy.js';

/** SPEC: a review is a short forked turn. */
const REVIEW_MAX_ITERATIONS = 16;
/** The tools a review may use: writes to memory and skills, reads of skills and past sessions. */
const REVIEW_TOOLS: ReadonlySet<string> = new Set(['memory', 'skill_manage', 'skills_list', 'skill_view', 'session_search']);

/** The instruction the review turn gets after the conversation (request-only). */
export const REVIEW_PROMPT = [
  '[Background review — the user does not see this turn.]',
  'Look back over the conversation above and save what will still matter in later conversations:',
  '- with memory (target "user"): stable facts about this person — preferences, role, how they like answers;',
  '- with memory (target "memory"): durable facts about the environment, conventions or tools you had to discover;',
  '- with skill_manage: a procedure that took several steps, needed recovery from errors, or that the user corrected — check skills_list first and patch an existing skill instead of creating a near-duplicate.',
  'Never save transient failures, unverified root causes, one-off task details, secrets, or anything the person asked you not to keep.',
  'If nothing is worth saving, answer "Nothing to save." and stop.',
].join('\n');

export type ReviewOutcome = 'skipped' | 'already' | 'done' | 'failed';

/** Why `adm` gets no review, or undefined when it does. */
function skipReason(adm: Admission | undefined, agent: CompiledAgent | undefined): string | undefined {
  if (!adm || adm.state !== 'terminal') return 'the turn is not finished';
  return reviewSkipReason(adm, agent);
}

/**
 * Whether the turn called the model: a turn answered without it (a command such as `/memory
 * approve`, a refusal, a stopped agent) has nothing to learn from, and a review of it would pay
 * for a model call over the whole conversation.
 */
async function calledModel(db: Db, adm: Admission): Promise<boolean> {
  const { rows } = await db.pool.query(`SELECT 1 FROM model_call_usage WHERE session_id = $1 AND admission_id = $2 AND task <> 'background_review' LIMIT 1`, [adm.sessionId, adm.id]);
  return rows.length > 0;
}

/** Claims the review of `admissionId`: false when another job already has (or had) it. */
async function claim(db: Db, admissionId: string): Promise<boolean> {
  const { rowCount } = await db.pool.query(`INSERT INTO background_reviews (admission_id, state) VALUES ($1, 'running') ON CONFLICT DO NOTHING`, [admissionId]);
  return rowCount === 1;
}

async function record(db: Db, admissionId: string, state: 'done' | 'failed', error?: string): Promise<void> {
  await db.pool.query(`UPDATE background_reviews SET state = $2, error = $3, finished_at = now() WHERE admission_id = $1`, [admissionId, state, error ?? null]);
}

/** Runs the background review of the finished turn `admissionId` (a review job). */
export async function runReview(deps: TurnDeps, admissionId: string, signal: AbortSignal): Promise<ReviewOutcome> {
  const adm = await getAdmission(deps.db.pool, admissionId);
  const agent = adm ? (await deps.agents.getById(adm.agentId))?.compiled : undefined;
  const why = skipReason(adm, agent);
  if (why || !adm || !agent) {
    deps.log.debug({ admission: admissionId, why }, 'No background review');
    return 'skipped';
  }
  if (!(await calledModel(deps.db, adm))) {
    deps.log.debug({ admission: admissionId, why: 'the turn was answered without the model' }, 'No background review');
    return 'skipped';
  }
  if (!(await claim(deps.db, admissionId))) return 'already';
  const log = deps.log.child({ admission: adm.id, session: adm.sessionId, task: 'background_review' });
  try {
    const result = await review(deps, adm, agent, signal);
    await record(deps.db, adm.id, result.failed ? 'failed' : 'done', result.failed);
    log.info({ iterations: result.iterations, outcome: result.outcome }, 'Background review finished');
    return result.failed ? 'failed' : 'done';
  } catch (err) {
    log.warn({ err }, 'Background review failed');
    await record(deps.db, adm.id, 'failed', (err as Error).message).catch(() => undefined);
    return 'failed';
  }
}

/** `ctx` with its transcript cut after the last message of admission `admissionId`. */
function throughTurn(ctx: TurnContext, admissionId: string): TurnContext {
  const own = ctx.transcript.filter((m) => m.admissionId === admissionId).map((m) => m.seq);
  const last = own.length ? Math.max(...own) : -1;
  return { ...ctx, transcript: ctx.transcript.filter((m) => m.seq <= last) };
}

async function review(deps: TurnDeps, adm: Admission, agent: CompiledAgent, signal: AbortSignal): Promise<{ outcome: string; iterations: number; failed?: string }> {
  const loop = deps.loop ?? createLoopDeps(deps.config, deps.secrets);
  const routed = await routesOf(loop, agent);
  if (!Array.isArray(routed)) return { outcome: 'failed', iterations: 0, failed: routed.error ?? 'no model route' };
  // A Mixture-of-Agents model reviews with its aggregator alone: the review needs no advice.
  const routes = directRoutes(routed);
  const ctx = await readTurnContext(deps.db.pool, adm.sessionId, adm.seq);
  if (!ctx?.prompt.text) return { outcome: 'failed', iterations: 0, failed: 'the session has no stored prompt or transcript' };
  // The person's grants (team mode) hold for the review of their turn too: no tool their turn was not offered.
  const turn = turnTools(deps, loop, agent, adm, { perms: await turnPermissions(deps.db, agent, adm) });
  const tools: Tool[] = turn.tools.filter((t) => REVIEW_TOOLS.has(t.name));
  if (!tools.some((t) => t.name === 'memory' || t.name === 'skill_manage')) return { outcome: 'no writable tools', iterations: 0 };
  const accounting = spendAccounting({ db: deps.db, metrics: deps.metrics, adm, agent }, routes);
  // The conversation as stored up to this turn's last message (the caller's own history of an OpenAI-style call
  // included), then the instruction. Later turns of the session — one may be running — get reviews of their own.
  const history: ChatMessage[] = [...historyFor({ ...adm, callerHistory: null, intent: 'queue' }, throughTurn(ctx, adm.id)), { role: 'user', content: REVIEW_PROMPT }];
  // The stored prompt is the one of the person the session was opened for: the review of someone
  // else's turn in a shared thread gets a prompt with that person's own USER block, as their turn did.
  const system = speaksAsGuest(adm, ctx.prompt.ownerUserId)
    ? (await sessionPrompt(adm, { agent, toolNames: turn.tools.map((t) => t.name) }, ctx, false, () => promptParts(turn.tools, turn.context))).stored
    : ctx.prompt.text;
  const { memory, skills, recall } = turn.context;
  const result = await runAgentLoop({
    sessionId: adm.sessionId, routes, tools, signal,
    system: promptMessages(system),
    history,
    toolContext: { ...(memory ? { memory } : {}), ...(skills ? { skills } : {}), ...(recall ? { recall } : {}) },
    ...modelOptions(agent, loop),
    maxIterations: Math.min(agent.maxIterations ?? REVIEW_MAX_ITERATIONS, REVIEW_MAX_ITERATIONS),
    unattended: true,
    // Nothing of the review enters the transcript: the messages live in this call only.
    persist: { assistant: () => Promise.resolve(), toolResult: () => Promise.resolve() },
    beforeCall: accounting.beforeCall,
    onCall: (done, route) => accounting.onCall(done, route, 'background_review'),
  });
  return { outcome: result.outcome, iterations: result.iterations, ...(result.outcome === 'failed' ? { failed: result.error ?? 'the review failed' } : {}) };
}
