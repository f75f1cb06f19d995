// Delegation on the worker (docs/delegation.md): `delegate_task` of a turn acts on the ledger
// (core ledger/subagents.ts) and wakes workers through the turn queue; a child's own turn marks
// itself running, beats every 30 s while it makes progress, and on its end reports to the parent
// (its batch's results become a new turn of the parent session). `/stop` of the parent stops its
// children through the same control signals a `/stop` of theirs would use.
import type { Redis } from 'ioredis';
import {
  DEFAULT_CHILD_ITERATIONS, MAX_CONCURRENT_CHILDREN, SUBAGENT_HEARTBEAT_SECONDS, SUBAGENT_PLATFORM,
  beatSubagent, enqueueTurn, getAdmission, listSubagents, markSubagentRunning, publishSignal, settleSubagent, spawnSubagents, steerSubagent, stopSubagents, subagentOfChild,
  type Admission, type CompiledAgent, type Config, type Db, type Logger, type Queues, type SessionSignal, type Subagent,
} from '../core/index.js';
import type { DelegationAccess } from '../agent/index.js';

export interface DelegationDeps {
  config: Pick<Config, 'HERMES_QUEUE_PREFIX'>;
  db: Db;
  redis: Redis;
  queues: Queues;
  log: Logger;
}

export const isChildTurn = (adm: Pick<Admission, 'platform'>): boolean => adm.platform === SUBAGENT_PLATFORM;

/** The Profile's limit on children running at once in one conversation (at most 10, SPEC). */
export const childLimit = (agent: CompiledAgent): number => Math.min(agent.delegation?.maxConcurrentChildren ?? MAX_CONCURRENT_CHILDREN, MAX_CONCURRENT_CHILDREN);

async function announce(deps: DelegationDeps, signals: readonly SessionSignal[]): Promise<void> {
  // The signals are durable: a child that misses the announcement still reads them when it starts.
  for (const s of signals) await publishSignal(deps.redis, deps.config.HERMES_QUEUE_PREFIX, s).catch((err: unknown) => deps.log.warn({ err, session: s.sessionId }, 'Could not announce a signal to a subagent'));
}

const preview = (s: string | null, n = 2_000) => (s && s.length > n ? `${s.slice(0, n)}…` : s);

function listed(s: Subagent) {
  return {
    subagent_id: s.id, goal: s.goal, status: s.status,
    ...(s.result !== null ? { result: preview(s.result) } : {}), ...(s.error !== null ? { error: s.error } : {}),
    created_at: s.createdAt.toISOString(), ...(s.finishedAt ? { finished_at: s.finishedAt.toISOString() } : {}),
  };
}

/** `delegate_task` for the turn `adm` (a parent turn; a child never gets the tool). */
export function turnDelegation(deps: DelegationDeps, agent: CompiledAgent, adm: Admission): DelegationAccess {
  return {
    async spawn(tasks) {
      const spawned = await spawnSubagents(deps.db, adm.id, tasks, childLimit(agent));
      if (!spawned.ok) return { status: 'error', error: spawned.reason };
      for (const s of spawned.spawned) {
        await enqueueTurn(deps.queues, { admissionId: s.childAdmissionId, sessionId: s.childSessionId })
          .catch((err: unknown) => deps.log.warn({ err, subagent: s.id }, 'Could not queue a subagent; the sweeper will pick it up'));
      }
      return {
        status: 'spawned',
        subagents: spawned.spawned.map((s) => ({ subagent_id: s.id, goal: s.goal, status: s.status })),
        note: 'The subagents run in the background. Their results arrive as a new message in this conversation when all of them have finished.',
      };
    },
    async list() {
      return { subagents: (await listSubagents(deps.db.pool, adm.sessionId)).map(listed) };
    },
    async steer(id, message) {
      const r = await steerSubagent(deps.db.pool, adm.sessionId, id, message);
      if (!r.ok) return { status: 'error', error: r.reason };
      await announce(deps, [r.signal]);
      return { status: 'sent', subagent_id: id };
    },
    async stop(id) {
      const r = await stopSubagents(deps.db.pool, adm.sessionId, id);
      await announce(deps, r.signals);
      if (id && !r.ids.length) return { status: 'error', error: `no running subagent ${id} in this conversation (action "list" shows them)` };
      return { status: 'stopping', subagents: r.ids };
    },
  };
}

/** `/stop` in a conversation: its active children stop too. Returns how many were asked to. */
export async function stopChildrenOf(deps: DelegationDeps, sessionId: string): Promise<number> {
  const r = await stopSubagents(deps.db.pool, sessionId);
  await announce(deps, r.signals);
  return r.ids.length;
}

/** A running child turn: its fresh iteration budget, and its heartbeat (beats in cycles that made progress). */
export interface ChildTurn {
  sub: Subagent;
  /**
   * The platform of the turn that spawned it: its toolsets narrowing (Agent spec.platforms[].toolsets)
   * holds for the child too, so delegating never reaches a toolset the parent's platform withholds.
   */
  parentPlatform: string;
  maxIterations: number;
  progress(): void;
  end(): void;
}

/**
 * The start of a child's turn: `running` and the heartbeat, or `stopped` when it was stopped (or
 * given up) before it started. Undefined for a turn that is not a child's.
 */
export async function startChildTurn(deps: DelegationDeps, agent: CompiledAgent, adm: Admission): Promise<ChildTurn | 'stopped' | undefined> {
  if (!isChildTurn(adm)) return undefined;
  const sub = await subagentOfChild(deps.db.pool, adm.sessionId);
  if (!sub) return undefined;
  if (!(await markSubagentRunning(deps.db.pool, adm.sessionId))) return 'stopped';
  const parentPlatform = (await getAdmission(deps.db.pool, sub.parentAdmissionId))?.platform ?? SUBAGENT_PLATFORM;
  let progressed = false;
  const timer = setInterval(() => {
    if (!progressed) return; // an idle cycle: no beat (15 of them in a row make the child stale)
    progressed = false;
    void beatSubagent(deps.db.pool, sub.id).catch((err: unknown) => deps.log.warn({ err, subagent: sub.id }, 'Could not record a subagent heartbeat'));
  }, SUBAGENT_HEARTBEAT_SECONDS * 1_000);
  timer.unref();
  return {
    sub,
    parentPlatform,
    maxIterations: agent.delegation?.maxIterations ?? DEFAULT_CHILD_ITERATIONS,
    progress: () => { progressed = true; },
    end: () => clearInterval(timer),
  };
}

/** After a child's turn ended: its row settles, and a complete batch's results are queued as the parent's new turn. */
export async function reportChild(deps: DelegationDeps, adm: Admission): Promise<void> {
  if (!isChildTurn(adm)) return;
  try {
    const batch = await settleSubagent(deps.db, adm.sessionId);
    if (batch) await enqueueTurn(deps.queues, { admissionId: batch.admissionId, sessionId: batch.sessionId });
  } catch (err) {
    // The sweeper settles children whose turn ended unsettled, and re-enqueues queued turns.
    deps.log.warn({ err, admission: adm.id }, 'Could not report a subagent\'s end yet; the sweeper will');
  }
}

