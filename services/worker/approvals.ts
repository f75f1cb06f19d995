// The worker's side of approvals: the turn's command guard (the Profile's `approvals` block, the
// smart reviewer routed like a summary call — spend caps first, recorded with the task
// `approval` — and the durable human wait), the events that tell the client a command waits, and
// the reply of a `/approve` or `/deny` admission (the gateway already recorded its decision).
import { setTimeout as sleep } from 'node:timers/promises';
import { Counter } from 'prom-client';
import type { Redis } from 'ioredis';
import {
  commandWord, approvalDecidedBy, approvalPendingMessage, closeApproval, consumeApproval, parkApproval, parseApprovalCommand, publishTurnEvent, readApproval, unattendedPlatforms,
  type Admission, type CommandApproval, type CompiledAgent, type Db, type Logger, type Metrics, type TurnResult,
} from '../core/index.js';
import {
  ApprovalGuard, callModel, type ApprovalOutcome, type DenialBreaker, type HumanApprovalRequest, type HumanApprovals, type HumanDecision, type ModelRoute, type ReviewerCall,
} from '../agent/index.js';
import type { SummaryLoop } from './web-tools.js';
import type { SpendAccounting } from './usage.js';

const counters = new WeakMap<Metrics, Counter<'agent' | 'outcome'>>();

/** hermes_command_approvals_total{agent, outcome}: every command the guard decided, by how. */
export function approvalCounter(metrics: Metrics): Counter<'agent' | 'outcome'> {
  let c = counters.get(metrics);
  if (!c) {
    c = new Counter({ name: 'hermes_command_approvals_total', help: 'Commands checked by the approval guard, by outcome (hardline, deny_rule, mode_off, allow_rule, not_dangerous, unattended_denied, smart_approved, smart_denied, approved, denied, expired, cancelled, unavailable).', labelNames: ['agent', 'outcome'], registers: [metrics.registry] });
    counters.set(metrics, c);
  }
  return c;
}

export interface ApprovalWaitDeps {
  db: Db;
  redis: Redis;
  prefix: string;
  log: Logger;
  /** How often the pending row is re-read. */
  pollMs: number;
}

const approvalEvent = (a: CommandApproval, message: string) => ({
  type: 'approval' as const,
  approval: { id: a.id, status: a.status, command: a.command, reason: a.reason, expiresAt: a.expiresAt, message },
});


/** The human wait in Postgres: park, tell the client, poll until decided, expired or stopped. */
export class DurableApprovals implements HumanApprovals {
  constructor(private readonly deps: ApprovalWaitDeps, private readonly admissionId: string) {}

  async ask(req: HumanApprovalRequest, signal: AbortSignal): Promise<HumanDecision> {
    const { db, log } = this.deps;
    let row: CommandApproval;
    try {
      row = await parkApproval(db.pool, { admissionId: this.admissionId, command: req.command, reason: req.reason, timeoutSeconds: req.timeoutSeconds });
    } catch (err) {
      log.warn({ err, admission: this.admissionId }, 'Could not record a pending approval; the command is refused');
      return { decision: 'unavailable', reason: 'the approval store is unreachable' };
    }
    await this.announce(row, approvalPendingMessage(row));
    log.info({ admission: this.admissionId, approval: row.id, reason: req.reason }, 'Parked a command for approval');
    const decision = await this.wait(row.id, req.timeoutSeconds, signal);
    const now = await readApproval(db.pool, row.id).catch(() => undefined);
    await this.announce(now ?? row, `Approval ${decision.decision}: ${JSON.stringify(row.command)}.`);
    return decision;
  }

  private async announce(a: CommandApproval, message: string): Promise<void> {
    await publishTurnEvent(this.deps.redis, this.deps.prefix, this.admissionId, approvalEvent(a, message)).catch(() => undefined);
  }

  /** Polls the row; Postgres' clock decides expiry. Unreachable past the deadline (plus a grace) → refused. */
  private async wait(id: string, timeoutSeconds: number, signal: AbortSignal): Promise<HumanDecision> {
    const { pollMs, log } = this.deps;
    const giveUpAt = Date.now() + timeoutSeconds * 1_000 + 30_000;
    for (;;) {
      if (signal.aborted) return (await this.close(id, 'cancelled')) ?? { decision: 'cancelled' };
      try {
        const d = await this.look(id);
        if (d) return d;
      } catch (err) {
        log.warn({ err, approval: id }, 'Could not read a pending approval; retrying');
        if (Date.now() > giveUpAt) return { decision: 'unavailable', reason: 'the approval store is unreachable' };
      }
      await sleep(pollMs, undefined, { signal }).catch(() => undefined);
    }
  }

  /** The decision now, if there is one (taking it), or undefined while it still waits. */
  private async look(id: string): Promise<HumanDecision | undefined> {
    const row = await readApproval(this.deps.db.pool, id);
    if (!row) return { decision: 'unavailable', reason: 'the pending approval disappeared' };
    if (row.status === 'pending' && !row.expired) return undefined;
    if (row.status === 'pending') return (await this.close(id, 'expired')) ?? { decision: 'expired' };
    return this.take(row);
  }

  private async close(id: string, status: 'expired' | 'cancelled'): Promise<HumanDecision | undefined> {
    const row = await closeApproval(this.deps.db.pool, id, status).catch(() => undefined);
    // A decision that got in first wins over the deadline or the stop.
    return row && (row.status === 'approved' || row.status === 'denied') ? this.take(row) : undefined;
  }

  private async take(row: CommandApproval): Promise<HumanDecision> {
    if (row.status === 'approved' || row.status === 'denied') await consumeApproval(this.deps.db.pool, row.id);
    if (row.status === 'approved') return { decision: 'approved' };
    if (row.status === 'denied') return { decision: 'denied', ...(row.note ? { note: row.note } : {}) };
    if (row.status === 'expired') return { decision: 'expired' };
    return { decision: 'cancelled' };
  }
}

export interface TurnGuardSetup {
  deps: { db: Db; redis: Redis; log: Logger; metrics: Metrics; config: { HERMES_QUEUE_PREFIX: string; HERMES_APPROVAL_POLL_MS: number } };
  adm: Admission;
  agent: CompiledAgent;
  loop: SummaryLoop;
  routes: ModelRoute[];
  accounting: SpendAccounting;
  breaker: DenialBreaker;
}

/** The reviewer: the agent's model chain, like a summary call (caps first, recorded as `approval`). */
function reviewerOf(s: TurnGuardSetup): ReviewerCall {
  return async (messages, signal) => {
    if (await s.accounting.beforeCall()) return undefined;
    const clock = s.loop.clock;
    const res = await callModel({ routes: s.routes, request: { messages, signal, maxOutputTokens: 200 }, cooldowns: s.loop.cooldowns, ...(clock ? { clock } : {}), ...(s.loop.policy ? { policy: s.loop.policy } : {}) });
    if (!res.ok) return undefined;
    await s.accounting.onCall(res.completion, res.route, 'approval');
    return res.completion.text;
  };
}

/** The command guard of one turn. */
export function turnGuard(s: TurnGuardSetup): ApprovalGuard {
  const { deps, adm, agent } = s;
  const counter = approvalCounter(deps.metrics);
  const label = `${agent.agent.namespace}/${agent.agent.name}`;
  const human = new DurableApprovals({ db: deps.db, redis: deps.redis, prefix: deps.config.HERMES_QUEUE_PREFIX, log: deps.log, pollMs: deps.config.HERMES_APPROVAL_POLL_MS }, adm.id);
  return new ApprovalGuard({
    ...(agent.approvals ? { settings: agent.approvals } : {}),
    session: adm.sessionId,
    // Nobody to ask (cron runs, dispatched Kanban tasks, subagents): dangerous commands are denied (Hermes: subagent_auto_approve off).
    unattended: unattendedPlatforms.includes(adm.platform),
    human,
    reviewer: reviewerOf(s),
    breaker: s.breaker,
    onOutcome: (outcome: ApprovalOutcome) => counter.inc({ agent: label, outcome }),
  });
}

/**
 * The reply of a `/approve` or `/deny` admission (undefined for other messages). The gateway
 * decided the pending approval when it admitted the message; by now the waiting turn has taken
 * the decision — or it no longer waits (its worker stopped), and then nothing ran.
 */
export async function approvalReply(db: Db, adm: Admission): Promise<TurnResult | undefined> {
  const command = parseApprovalCommand(adm.content);
  if (!command) return undefined;
  const row = await approvalDecidedBy(db.pool, adm.id);
  const done = (reply: string): TurnResult => ({ outcome: 'completed', reply });
  if (!row) return done(command.decision === 'approved' ? 'Nothing is waiting for your approval.' : 'Nothing is waiting for your approval, so there is nothing to deny.');
  const what = JSON.stringify(row.command);
  if (row.consumed) return done(row.status === 'approved' ? `Approved: ${what} was allowed to run.` : `Denied: ${what} did not run.`);
  await db.pool.query(`UPDATE command_approvals SET status = 'abandoned' WHERE id = $1 AND consumed_at IS NULL`, [row.id]);
  return done(`Too late: the turn that asked to run ${what} no longer waits (it was interrupted), so nothing ran. Send ${commandWord(adm.platform, 'retry')} to run that request again.`);
}
