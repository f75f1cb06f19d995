// Runs one claimed admission to its end: config, prompt, history, the model call with the
// signals that may cancel it, then the terminal transaction and the delivery enqueue.
import type { Redis } from 'ioredis';
import {
  AgentCache, type Admission, type CompiledAgent, type Config, type Db, type Lease, type Logger, type Metrics, type Queues,
  appendTurnMessage, readToolResultSpill, saveToolResultSpill, expireSignalOf, parseControlCommand, signalOfAdmission, inSpan, publishTurnEvent, readTurnContext, type TurnContext, LeaseLostError, extractTraceContext, recordModelCall,
  type TurnResult, enqueueReview, commandAllowed, commandRefusal, isBuiltinCommand, slashCommandName, type Permissions,
  agentStopped, busyInterruptText, commandWord, stoppedReply, SILENT_REPLY, isSilentReply, pulledPlatforms, type AgentRecord, parseCommand,
} from '../core/index.js';
import {
  directRoutes, DenialBreaker, promptMessages, runAgentLoop, skillInvocation, skillRequestText, type Tool, TurnControl, ProgressWatchdog, type ChatMessage, type ModelRoute, type SecretResolver,
} from '../agent/index.js';
import { stopReason, type ControlHub } from './control.js';
import { stopOnEmergency } from './agent-stop.js';
import type { DeliveryAdapter } from './delivery.js';
import { startProgress } from './progress.js';
import { spendAccounting, usageReply, type SpendAccounting } from './usage.js';
import { compressReply, precompress, recordCompression, tailOptions } from './compress.js';
import { createLoopDeps, type LoopDeps } from './loop-deps.js';
import { recoveryCommand } from './recovery-commands.js';
import { rollbackReply } from './rollback-command.js';
import { offers, promptParts, turnTools, type TurnTools } from './turn-tools.js';
import { mcpToolsOf } from './mcp-tools.js';
import { modelOptions, routesOf } from './turn-model.js';
import { learningReply } from './learning-commands.js';
import { curatorReply } from './curator-commands.js';
import { reviewSkipReason } from './review-policy.js';
import { approvalReply, turnGuard } from './approvals.js';
import { clarifyAnswerReply, resumeClarification } from './clarify.js';
import { clarifyEvents } from './reach-tools.js';
import { settleTurn, whileLeaseHolds, type TurnFence } from './settle.js';
import { REPLY, historyFor, sessionPrompt } from './turn-context.js';
import { turnPermissions } from './turn-permissions.js';
import { cronPromptAgent, cronSkillNames, isCronTurn, withCronSkills } from './cron/turn.js';
import { reportChild, startChildTurn, stopChildrenOf, turnDelegation, type ChildTurn } from './delegation.js';

export interface TurnDeps {
  config: Config;
  db: Db;
  redis: Redis;
  queues: Queues;
  agents: AgentCache;
  secrets: SecretResolver;
  log: Logger;
  metrics: Metrics;
  /** Agent-loop state shared by all turns of this worker (pools, cool-downs, tools). */
  loop?: LoopDeps;
  /** Routes /stop, steer and redirect signals to running turns. */
  control?: ControlHub;
  /** The delivery adapters by platform: a turn shows progress through the one of its platform. */
  adapters?: Map<string, DeliveryAdapter>;
}

/** The caller's own system message (OpenAI API): request-only context, never stored. */
const callerSystem = (adm: Admission): ChatMessage[] =>
  (adm.callerHistory ?? []).filter((m) => m.role === 'system' && m.content.trim()).map((m) => ({ role: 'system', content: m.content }));

/**
 * A `/stop`, `/steer …` or `/redirect …` message, run after the turn it addressed: its reply says
 * whether a turn acted on it. A steer or redirect nobody took is an ordinary message (undefined).
 * A plain message that the busy policy made a steer of the running turn, and that the model saw,
 * is answered by that turn: it ends silently (stored, nothing sent). Its interrupt signal, or a
 * steer the model never saw, leaves it an ordinary message.
 */
async function controlResult(deps: TurnDeps, adm: Admission): Promise<TurnResult | undefined> {
  const command = parseControlCommand(adm.content);
  // Read with the claim (hermes_claim_next) unless this admission came from elsewhere.
  const sig = adm.ownSignal !== undefined ? adm.ownSignal ?? undefined : await signalOfAdmission(deps.db.pool, adm.id);
  if (!command) {
    if (!sig) return undefined;
    await expireSignalOf(deps.db.pool, adm.id);
    return sig.kind === 'steer' && sig.consumed ? { outcome: 'completed', reply: SILENT_REPLY } : undefined;
  }
  await expireSignalOf(deps.db.pool, adm.id);
  // `/stop` of a parent stops its delegated children too (the gateway does the same when it answers it).
  const children = command.kind === 'stop' ? await stopChildrenOf(deps, adm.sessionId) : 0;
  const alsoChildren = children ? ` Stopped ${children} delegated task(s) too.` : '';
  if (sig?.consumed) return { outcome: 'completed', reply: command.kind === 'stop' ? `${REPLY.stopped}${alsoChildren}` : REPLY.sent };
  if (command.kind !== 'stop') return undefined;
  return { outcome: 'completed', reply: children ? `Stopped ${children} delegated task(s).` : REPLY.idle };
}

/** A reply without the model: control commands, /usage, approval and clarify answers, learning and curator commands. */
async function controlledReply(deps: TurnDeps, adm: Admission, agent: CompiledAgent, perms: Permissions): Promise<TurnResult | undefined> {
  // A steer the model saw and a clarify answer end silently (the running turn answers them).
  const passed = (r: TurnResult | undefined) => (r && isSilentReply(r.reply) && answersEachRequest(deps, adm) ? { ...r, reply: PASSED_NOTICE } : r);
  return passed(await controlResult(deps, adm)) ?? (await usageReply(deps.db, adm)) ?? (await approvalReply(deps.db, adm)) ?? passed(await clarifyAnswerReply(deps.db, adm))
    ?? (await learningReply(deps.db, adm, agent, perms)) ?? (await curatorReply(deps.db, adm, agent, perms));
}

/**
 * What a message the running turn took (a steer the model saw, a clarify answer) gets instead of
 * silence when its target waits for one reply to this very request: the running turn's reply goes
 * to that turn's own target, so a Discord `/ask` would "think" for ever and a webhook caller get nothing.
 */
export const PASSED_NOTICE = 'Passed to the turn that was running: its reply answers this message too.';

/** Whether the admission's target waits for its own reply (a Discord `/ask`, a webhook request): silence would leave it waiting. */
const answersEachRequest = (deps: TurnDeps, adm: Admission): boolean => deps.adapters?.get(adm.platform)?.answersEachRequest?.(adm.replyTarget) ?? false;

/** Runs a step of the turn again after a lost Postgres connection, for as long as the turn's lease holds. */
type Durable = <T>(step: () => Promise<T>) => Promise<T>;

async function produce(deps: TurnDeps, lease: Lease, adm: Admission, fence: TurnFence, record: AgentRecord | undefined): Promise<TurnResult> {
  if (!record) return { outcome: 'failed', reply: 'This agent is no longer configured.', error: `agent ${adm.agentId} has no current revision` };
  // Emergency stop: admitted before the stop, refused now — no model call.
  if (agentStopped(record)) return { outcome: 'completed', reply: stoppedReply };
  const agent = record.compiled;
  // The reads (and idempotent writes) before the model: a Postgres blip costs latency, not the turn.
  const durable: Durable = (step) => whileLeaseHolds(step, fence, deps.log.child({ admission: adm.id, session: adm.sessionId }));
  const perms = await durable(() => turnPermissions(deps.db, agent, adm));
  // Team mode: a slash command this person may not use is refused here, before any command runs.
  const command = slashCommandName(adm.content);
  if (command && isBuiltinCommand(command) && !commandAllowed(perms, command)) return { outcome: 'completed', reply: commandRefusal(command) };
  const controlled = await durable(() => controlledReply(deps, adm, agent, perms));
  if (controlled) return controlled;
  const recovery = await durable(() => recoveryCommand(deps.db, lease, adm));
  if (recovery && 'reply' in recovery) return recovery.reply;
  if (recovery) {
    await durable(() => appendTurnMessage(deps.db, lease, adm.id, { role: 'user', content: recovery.rerun }));
    const result = await runLoop(deps, lease, { ...adm, content: recovery.rerun }, fence, { agent, perms, durable });
    return recovery.notice ? { ...result, reply: `${result.reply}\n\n(${recovery.notice})` } : result;
  }
  return runLoop(deps, lease, adm, fence, { agent, perms, durable });
}

/** The agent loop for `adm` (its content is the request: for /retry, the request it re-runs). */
async function runLoop(deps: TurnDeps, lease: Lease, adm: Admission, fence: TurnFence, who: { agent: CompiledAgent; perms: Permissions; durable: Durable }): Promise<TurnResult> {
  const { agent, perms, durable } = who;
  const loop = deps.loop ?? createLoopDeps(deps.config, deps.secrets);
  // `/moa <prompt>`: this turn answers with the default Mixture-of-Agents preset; the next one with the Profile's model again.
  const moa = moaPrompt(adm.content) !== undefined;
  if (moa && !agent.moa) return { outcome: 'completed', reply: 'This agent has no Mixture-of-Agents preset: an operator can add one to its Profile (spec.moa.presets).' };
  const routes = await routesOf(loop, agent, moa ? agent.moa?.defaultPreset : undefined);
  if (!Array.isArray(routes)) return routes;
  // A delegated child: stopped before it started, or running with its heartbeat and its own budget.
  const child = await startChildTurn(deps, agent, adm);
  if (child === 'stopped') return { outcome: 'interrupted', reply: 'Stopped before it started.', interrupted: true, partial: '' };
  try {
    return await runChecked(deps, lease, adm, fence, { agent, perms, routes, loop, durable, ...(child ? { child } : {}) });
  } finally {
    child?.end();
  }
}

interface Checked {
  agent: CompiledAgent;
  perms: Permissions;
  routes: ModelRoute[];
  loop: LoopDeps;
  durable: Durable;
  child?: ChildTurn;
}

async function runChecked(deps: TurnDeps, lease: Lease, adm: Admission, fence: TurnFence, c: Checked): Promise<TurnResult> {
  const { agent, perms, routes, loop, durable, child } = c;
  // Every model call of the turn — summaries too — passes the spend caps and is recorded with its task;
  // a child's calls count toward its parent's conversation (as task `subagent`).
  const billed = child ? { ...adm, sessionId: child.sub.parentSessionId } : adm;
  const accounting = childAccounting(spendAccounting({ db: deps.db, metrics: deps.metrics, adm: billed, agent }, routes, durable), child);
  const control = new TurnControl();
  // Listen for /stop, steer and redirect first; the context read then brings those recorded before.
  const watching = deps.control?.watch(deps.db, adm.sessionId, adm, control);
  const unwatchStop = stopOnEmergency(deps.agents, adm.agentId, control);
  const ended = new AbortController();
  try {
    const read = await durable(() => readTurnContext(deps.db.pool, adm.sessionId, adm.seq));
    if (!read) return { outcome: 'failed', reply: 'Sorry — something went wrong on our side.', error: `session ${adm.sessionId} is gone` };
    watching?.catchUp(read.signals);
    // A turn resumed after a shutdown cut while clarify waited: the wait goes on here first.
    const clarifyDeps = { db: deps.db, queues: deps.queues, log: deps.log, pollMs: deps.config.HERMES_APPROVAL_POLL_MS, ...clarifyEvents(deps) };
    const ctx = await resumeClarification({ deps: clarifyDeps, lease, adm, agent, signal: AbortSignal.any([fence.signal, control.signal]) }, read);
    // Asked only of a turn a new message interrupted: no target parse on every turn.
    const answersEach = () => answersEachRequest(deps, adm);
    const result = busyInterrupted(await loopIn({ deps, lease, adm, fence, agent, perms, loop, routes, accounting, control, durable, ended: ended.signal, ...(child ? { child } : {}) }, ctx), control, adm, answersEach);
    const usageRows = accounting.takeDeferred(); // written with the turn's end, in one transaction
    return usageRows.length ? { ...result, usageRows } : result;
  } finally {
    ended.abort();
    unwatchStop();
    // Steers the model never saw go back to their own admissions (which then run as turns).
    await watching?.release().catch((err: unknown) => deps.log.warn({ err, session: adm.sessionId }, 'Could not hand back unsent steers; their messages are answered as steered'));
    watching?.stop();
  }
}

/** What an interrupted request that waits for its own reply gets instead of silence (busyInterrupted). */
export const SUPERSEDED_NOTICE = 'Interrupted by your next message: that one is answered instead.';

/** What a turn stopped by `/new` or `/reset` (`word`, as its platform writes it) says when it had said nothing yet. */
export const resetStoppedReply = (word: string) => `The turn was stopped by ${word}; the new conversation starts with your next message.`;

/**
 * A turn stopped by a new message (busy policy interrupt) with nothing said yet ends silently: the
 * new message runs next and answers in the same chat; its partial text, if any, is kept and sent
 * marked interrupted. A target that waits for one reply to this very request (`answersEach`: a
 * Discord `/ask`, a webhook request) would wait for ever on silence: it gets a short notice.
 * One stopped by `/new` or `/reset` is not offered `/retry`: the session key has a new session,
 * where a `/retry` cannot reach it.
 */
function busyInterrupted(result: TurnResult, control: TurnControl, adm: Admission, answersEach: () => boolean): TurnResult {
  const reason: unknown = control.signal.reason;
  if (!control.signal.aborted || !(reason instanceof Error) || result.outcome !== 'interrupted' || result.partial) return result;
  if (reason.message === stopReason(busyInterruptText)) return { ...result, reply: answersEach() ? SUPERSEDED_NOTICE : SILENT_REPLY };
  const reset = ['new', 'reset'].map((name) => commandWord(adm.platform, name)).find((word) => reason.message === stopReason(word));
  return reset ? { ...result, reply: resetStoppedReply(reset) } : result;
}

interface LoopSetup {
  deps: TurnDeps;
  lease: Lease;
  adm: Admission;
  fence: TurnFence;
  agent: CompiledAgent;
  /** The person's permissions (team mode): which toolsets the model is offered. */
  perms: Permissions;
  loop: LoopDeps;
  routes: ModelRoute[];
  accounting: SpendAccounting;
  control: TurnControl;
  durable: Durable;
  /** Set when this is a delegated child's turn. */
  child?: ChildTurn;
  /** Aborted when the turn ends (its stdio MCP servers' processes end then). */
  ended?: AbortSignal;
}

/** A child's answers are recorded as task `subagent` (its summaries keep their own task). */
function childAccounting(accounting: SpendAccounting, child: ChildTurn | undefined): SpendAccounting {
  if (!child) return accounting;
  return { ...accounting, onCall: (done, route, task) => accounting.onCall(done, route, task === 'turn' ? 'subagent' : task) };
}

/** `/<skill-name> request`: the model gets the skill's instructions with the request (the transcript keeps the command). */
async function withSkillCommand(history: ChatMessage[], adm: Admission, tools: readonly Tool[], context: TurnTools['context']): Promise<ChatMessage[]> {
  if (isCronTurn(adm)) {
    // A CronJob's skills are loaded into its request, in order.
    if (cronSkillNames(adm).length === 0 || !context.skills) return history;
    const loaded = withCronSkills(history, adm, await context.skills.offered());
    for (const skill of loaded.used) await context.skills.used?.(skill);
    return loaded.history;
  }
  if (!adm.content.startsWith('/') || !offers(tools, 'skill_view') || !context.skills) return history;
  const invocation = skillInvocation(adm.content, await context.skills.offered());
  const last = history.at(-1);
  if (!invocation || last?.role !== 'user') return history;
  await context.skills.used?.(invocation.skill);
  return [...history.slice(0, -1), { ...last, content: skillRequestText(invocation) }];
}

/** The prompt of a `/moa <prompt>` message; undefined for any other. */
function moaPrompt(content: string): string | undefined {
  const c = parseCommand(content);
  return c?.name === 'moa' ? c.args : undefined;
}

/** `/moa <prompt>`: the model gets the prompt (the transcript keeps the command). */
function withMoaCommand(history: ChatMessage[], adm: Admission): ChatMessage[] {
  const prompt = moaPrompt(adm.content);
  const last = history.at(-1);
  if (prompt === undefined || last?.role !== 'user') return history;
  return [...history.slice(0, -1), { ...last, content: prompt }];
}

/** The turn's tools: the built-in ones (with delegation, unless this is a child) and its MCP servers'. */
async function loopTools(s: LoopSetup, direct: ModelRoute[]) {
  const { deps, loop, agent, adm } = s;
  const delegation = s.child ? undefined : turnDelegation(deps, agent, adm);
  // A child is narrowed as its parent's platform narrows (delegating never widens the toolsets).
  const platform = s.child ? { platform: s.child.parentPlatform } : {};
  const { tools: builtin, context: toolContext, sandbox } = turnTools(deps, loop, agent, adm, { perms: s.perms, summary: { loop, routes: direct, accounting: s.accounting }, ...(delegation ? { delegation } : {}), ...platform });
  const mcp = await mcpToolsOf(loop, deps, agent, adm, { perms: s.perms, signal: s.fence.signal, ...(s.ended ? { turnEnded: s.ended } : {}), ...platform });
  return { tools: [...builtin, ...mcp.tools], toolContext, sandbox, mcp };
}

/** `/compress`, hygiene compression, the session prompt, then the agent loop, on the turn's context. */
async function loopIn(s: LoopSetup, ctx: TurnContext): Promise<TurnResult> {
  const { deps, lease, adm, agent, loop, routes, control, durable } = s;
  const stored = historyFor(adm, ctx);
  // Summaries and command reviews need one model, not advice: a Mixture-of-Agents route gives its aggregator.
  const direct = directRoutes(routes);
  const command = { db: deps.db, lease, adm, loop, routes: direct, signal: s.fence.signal, tail: tailOptions(loop, agent), history: () => Promise.resolve(stored), accounting: s.accounting };
  const { tools, toolContext, sandbox, mcp } = await loopTools(s, direct);
  const rolledBack = await rollbackReply(adm.content, sandbox, s.fence.signal);
  if (rolledBack) return rolledBack;
  const compressed = await compressReply(command);
  if (compressed) return compressed;
  // Hygiene before the prompt is loaded: a compression here makes this turn rebuild the prompt.
  const history = await precompress(command, deps.log);
  const prompt = await sessionPrompt(adm, { agent: isCronTurn(adm) ? cronPromptAgent(agent) : agent, toolNames: tools.map((t) => t.name), ...(mcp.version ? { toolsVersion: mcp.version } : {}) }, ctx, history !== stored, () => promptParts(tools, toolContext));
  const request = withMoaCommand(await withSkillCommand(history, adm, tools, toolContext), adm);
  if (prompt.notices.length) deps.log.warn({ session: adm.sessionId, notices: prompt.notices }, 'Refused context files');
  // SPEC: a turn that keeps its lease but makes no progress for 600 s (polled every 15 s) ends.
  const watchdog = new ProgressWatchdog({
    stallMs: deps.config.HERMES_TURN_STALL_SECONDS * 1_000,
    pollMs: deps.config.HERMES_TURN_WATCHDOG_POLL_SECONDS * 1_000,
    ...loop.watchdog,
  });
  const progress = startProgress({
    adapter: deps.adapters?.get(adm.platform), adm, db: deps.db, log: deps.log,
    timing: { delayMs: deps.config.HERMES_PROGRESS_DELAY_SECONDS * 1_000, everyMs: deps.config.HERMES_PROGRESS_EDIT_SECONDS * 1_000 },
  });
  const result = await runAgentLoop({
    sessionId: adm.sessionId,
    routes,
    ...(direct.some((r, i) => r !== routes[i]) ? { summaryRoutes: direct } : {}),
    system: [...promptMessages(prompt.stored), ...callerSystem(adm)],
    history: request,
    tools,
    toolContext,
    signal: AbortSignal.any([s.fence.signal, control.signal, watchdog.signal]),
    control,
    onProgress: () => { watchdog.progress(); progress.tick(); s.child?.progress(); },
    platform: adm.platform,
    unattended: adm.platform === 'cron' || adm.platform === 'subagent', // SPEC: the tool-loop guard's hard halts only where nobody watches
    // Every command a tool runs passes the approval guard first (ctx.guard).
    guard: turnGuard({ deps, adm, agent, loop, routes: direct, accounting: s.accounting, breaker: loop.approvalBreaker ??= new DenialBreaker() }),
    ...modelOptions(agent, loop),
    // A child has its own, fresh iteration budget (Profile spec.delegation.maxIterations).
    ...(s.child ? { maxIterations: s.child.maxIterations } : {}),
    compression: { cooldown: loop.summaryCooldown, ...command.tail },
    persist: {
      assistant: async (m, usage) => (await durable(() => appendTurnMessage(deps.db, lease, adm.id, { role: 'assistant', content: m.content, toolCalls: m.toolCalls, usage }))).seq,
      toolResult: async (m, disposition) => (await durable(() => appendTurnMessage(deps.db, lease, adm.id, { role: 'tool', content: m.content, toolCallId: m.toolCallId ?? null, effectDisposition: disposition }))).seq,
      compressed: (summary, coversSeq) => durable(() => recordCompression(deps.db, lease, adm, summary, coversSeq)),
      results: {
        save: (r) => durable(() => saveToolResultSpill(deps.db, lease, adm.id, r)).catch((err: unknown) => {
          deps.log.warn({ err, session: adm.sessionId, tool: r.toolName, chars: r.content.length }, 'Storing an oversized tool result failed; the model gets it cut');
          throw err;
        }),
        read: (id, offset, limit) => readToolResultSpill(deps.db.pool, adm.sessionId, id, offset, limit),
      },
    },
    beforeCall: s.accounting.beforeCall,
    onCall: s.accounting.onCall,
    onDelta: (text) => void publishTurnEvent(deps.redis, deps.config.HERMES_QUEUE_PREFIX, adm.id, { type: 'delta', text }).catch(() => undefined),
  }).finally(async () => { watchdog.stop(); await progress.stop(); });
  if (result.outcome !== 'completed') deps.metrics.modelCalls.inc({ agent: `${agent.agent.namespace}/${agent.agent.name}`, model: agent.model.model, outcome: result.outcome });
  const withPrompt: TurnResult = prompt.store ? { ...result, sessionPrompt: prompt.store } : result;
  // Refused context files: the user sees why the agent lacks them (once, when the prompt was built).
  return prompt.notices.length ? { ...withPrompt, reply: `${result.reply}\n\n(Notice: ${prompt.notices.join(' ')})` } : withPrompt;
}

/** What the lease holder does after a turn: run `next` (claimed under the same lease by the finish), or stop; `released` when the finish let the lease go. */
export interface TurnAfter {
  next?: Admission;
  released: boolean;
}

/** The fenced turn's usage rows still count toward spend (the calls were made): written outside the lease. */
async function recordLate(deps: TurnDeps, result: TurnResult, log: Logger): Promise<void> {
  for (const row of result.usageRows ?? []) await recordModelCall(deps.db.pool, row).catch((err: unknown) => log.warn({ err }, 'Could not record the usage of a fenced turn'));
}

/**
 * Runs `adm` (already `started` by this lease holder) to its end, under `fence` (lease keeper and
 * shutdown). Returns without throwing when the lease was lost: recovery settles the turn.
 */
export async function runAdmission(deps: TurnDeps, lease: Lease, adm: Admission, fence: TurnFence): Promise<TurnAfter> {
  const record = await deps.agents.getById(adm.agentId);
  const agent = record?.compiled;
  const agentLabel = agent ? `${agent.agent.namespace}/${agent.agent.name}` : adm.agentId;
  const log = deps.log.child({ admission: adm.id, session: adm.sessionId, agent: agentLabel });
  const timer = deps.metrics.turnSeconds.startTimer({ agent: agentLabel });
  return inSpan('hermes.turn', { 'hermes.admission_id': adm.id, 'hermes.session_id': adm.sessionId }, extractTraceContext(adm.traceContext), async (): Promise<TurnAfter> => {
    log.info('Started turn');
    const result = await produce(deps, lease, adm, fence, record).catch((err: unknown): TurnResult => {
      log.error({ err }, 'Turn failed');
      return { outcome: 'failed', reply: 'Sorry — something went wrong on our side.', error: (err as Error).message };
    });
    try {
      const settled = await settleTurn(deps, { lease, adm, result, fence, log });
      deps.metrics.turns.inc({ agent: agentLabel, outcome: settled.kind === 'cut' ? 'cut' : settled.outcome });
      if (settled.kind === 'finished') log.info({ outcome: settled.outcome, obligation: settled.obligationId, ...(result.error ? { error: result.error } : {}) }, 'Finished turn');
      // A silence token is settled delivered by the turn's end (hermes_finish_turn): counted here, as the delivery worker never sees it.
      if (settled.kind === 'finished' && !settled.deliveryPending && isSilentReply(result.reply) && !pulledPlatforms.includes(adm.platform)) deps.metrics.deliveries.inc({ platform: adm.platform, outcome: 'silent' });
      // A delegated child's end goes back to its parent (its batch's results become the parent's next turn).
      if (settled.kind === 'finished') await reportChild(deps, adm);
      if (settled.kind === 'finished' && !reviewSkipReason({ outcome: settled.outcome, platform: adm.platform }, agent)) {
        // The learning loop runs after the reply, as its own job: it never delays this session.
        void enqueueReview(deps.queues, { admissionId: adm.id }).catch((err: unknown) => log.warn({ err }, 'Could not queue the background review'));
      }
      return settled.kind === 'finished' ? { released: settled.released, ...(settled.next ? { next: settled.next } : {}) } : { released: false };
    } catch (err) {
      if (err instanceof LeaseLostError) {
        deps.metrics.leaseLosses.inc();
        log.warn('Lease lost before the turn could finish; recovery will settle it as unknown');
        await recordLate(deps, result, log);
        return { released: false };
      }
      deps.metrics.ledgerWriteFailures.inc({ operation: 'finish_turn' });
      throw err;
    } finally {
      timer();
    }
  });
}
