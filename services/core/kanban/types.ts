// The Kanban board's vocabulary (Hermes' states, block kinds and run outcomes) and the shapes the
// ledger functions return. A board is scoped (docs/kanban.md "Scoping"): every function takes the
// caller's Scope and never reaches a task outside its board.

export const KANBAN_STATUSES = ['triage', 'todo', 'scheduled', 'ready', 'running', 'blocked', 'review', 'done', 'archived'] as const;
export type KanbanStatus = (typeof KANBAN_STATUSES)[number];

/** Hermes' four block kinds: `needs_input` and `capability` wait for a person; `transient` clears by itself. */
export const BLOCK_KINDS = ['dependency', 'needs_input', 'capability', 'transient'] as const;
export type BlockKind = (typeof BLOCK_KINDS)[number];

/**
 * How a run ended. Counted by the circuit breaker: failed, crashed, timed_out, stale, reclaimed,
 * protocol_violation (the turn ended without kanban_complete or kanban_block). Not counted:
 * completed, blocked, spawn_failed (infrastructure), cancelled (a person moved the task).
 */
export const RUN_OUTCOMES = ['completed', 'blocked', 'failed', 'crashed', 'timed_out', 'stale', 'reclaimed', 'protocol_violation', 'spawn_failed', 'cancelled'] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

export interface KanbanTask {
  id: string;
  boardId: string;
  title: string;
  body: string | null;
  assigneeAgentId: string | null;
  /** `namespace/name` of the assignee, when it exists. */
  assignee: string | null;
  status: KanbanStatus;
  blockKind: BlockKind | null;
  blockReason: string | null;
  priority: number;
  createdBy: string;
  maxRuntimeSeconds: number | null;
  maxRetries: number | null;
  consecutiveFailures: number;
  unblocks: number;
  scheduledAt: Date | null;
  currentRunId: string | null;
  result: string | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
}

export interface KanbanRun {
  id: string;
  taskId: string;
  agentId: string;
  admissionId: string | null;
  status: 'claimed' | 'running' | 'ended';
  outcome: RunOutcome | null;
  infrastructure: boolean;
  summary: string | null;
  error: string | null;
  metadata: unknown;
  claimedAt: Date;
  startedAt: Date | null;
  heartbeatAt: Date;
  endedAt: Date | null;
}

export interface KanbanComment { id: string; author: string; body: string; createdAt: Date }
export interface KanbanAttachment { id: string; name: string; ref: string; createdBy: string; createdAt: Date }
export interface KanbanEvent { id: string; runId: string | null; kind: string; data: unknown; createdAt: Date }

/**
 * Who is calling, on which board:
 *   worker       — a dispatched turn: its own task's board; lifecycle calls only on its own task;
 *   orchestrator — a turn whose Profile lists the kanban toolset, or `/kanban` in chat: that
 *                  person's own board on that agent; tasks are assigned to this agent only;
 *   admin        — the admin API and the CLI: any board, any assignee of the board's namespace.
 */
export type KanbanScope =
  | { mode: 'worker'; boardId: string; agentId: string; taskId: string; runId: string; actor: string }
  | { mode: 'orchestrator'; boardId: string; agentId: string; actor: string }
  | { mode: 'admin'; boardId: string; agentId: string; actor: string };

export type KanbanErrorCode = 'not_found' | 'invalid' | 'forbidden' | 'conflict';

/** An expected refusal (bad input, another board's task, a wrong state): its message says what to do. */
export class KanbanError extends Error {
  override name = 'KanbanError';
  constructor(readonly code: KanbanErrorCode, message: string) {
    super(message);
  }
}
