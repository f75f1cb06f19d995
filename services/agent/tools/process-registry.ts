// Background commands (`terminal` with `background: true`), tracked per session for `process`.
// SPEC: at most 64 tracked per session, 200 000 characters of rolling output each, a finished one
// kept 30 minutes after it ended. The registry lives in the worker process: a worker restart
// loses the handles (the commands' sandboxes are then ended with the worker's backend, and left-
// over sandbox Pods are collected by the operator's hygiene controller).
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { ExecResult, RunningCommand, SessionSandbox } from '../../sandbox/index.js';

export const MAX_TRACKED_PROCESSES = 64;
/**
 * Running background commands of all sessions of one worker together. Without it, one API key
 * that opens a new conversation per request starts 64 sandboxes each time, with no end.
 */
export const MAX_WORKER_PROCESSES = 256;
/**
 * Running background commands of one person, over all their conversations on one worker: without
 * it, one chat user (or API key) with four conversations held all 256 of the worker's places.
 */
export const MAX_PERSON_PROCESSES = 64;
export const PROCESS_OUTPUT_CHARS = 200_000;
export const FINISHED_TTL_MS = 30 * 60_000;
/**
 * How long a background command may run when its call names no timeout (Hermes ends background
 * processes after 24 h; bindSession in services/sandbox/types.ts allows MAX_BACKGROUND_SECONDS).
 */
export const BACKGROUND_TIMEOUT_MS = 24 * 3_600_000;

export interface TrackedProcess {
  id: string;
  sessionId: string;
  /** The person whose turn started it (absent: a turn of nobody's, such as a cron run). */
  userId?: string;
  command: string;
  cwd: string;
  startedAt: number;
  running: RunningCommand;
  /** Set when the command ended (any status). */
  result?: ExecResult;
  finishedAt?: number;
}

export type StartOutcome = { ok: true; proc: TrackedProcess } | { ok: false; error: string };

export interface StartRequest {
  sessionId: string;
  /** The person the turn acts for: their running commands over all sessions are bounded together. */
  userId?: string;
  sandbox: SessionSandbox;
  command: string;
  cwd: string;
  timeoutMs?: number;
}

export class ProcessRegistry {
  private readonly sessions = new Map<string, Map<string, TrackedProcess>>();
  /** Ends every background command at worker shutdown. */
  private readonly stopAll = new AbortController();

  /**
   * @param clock when processes started and ended (the 30-minute retention). @defaultValue Date.now
   * @param maxRunning running commands of all sessions together. @defaultValue MAX_WORKER_PROCESSES
   * @param maxPerPerson running commands of one person, over all sessions. @defaultValue MAX_PERSON_PROCESSES
   */
  constructor(private readonly clock: () => number = Date.now, private readonly maxRunning = MAX_WORKER_PROCESSES, private readonly maxPerPerson = MAX_PERSON_PROCESSES) {
    // One listener per running command (the backend's), up to 64 per session.
    setMaxListeners(0, this.stopAll.signal);
  }

  /** Starts a background command for a session, if it has room for one more. */
  async start(req: StartRequest): Promise<StartOutcome> {
    const procs = this.prune(req.sessionId);
    if (procs.size >= MAX_TRACKED_PROCESSES) {
      return { ok: false, error: `This session already tracks ${MAX_TRACKED_PROCESSES} running background processes (the most allowed). Kill one with process {"action": "kill", "session_id": …} first.` };
    }
    if (req.userId !== undefined && this.running(req.userId) >= this.maxPerPerson) {
      return { ok: false, error: `You already run ${this.maxPerPerson} background processes over your conversations on this worker (the most one person may); nothing was started. Kill one with process {"action": "kill", "session_id": …} in its conversation, or run the command in the foreground.` };
    }
    if (this.running() >= this.maxRunning) {
      return { ok: false, error: `This worker already runs ${this.maxRunning} background processes for all its sessions (the most allowed); nothing was started. Kill one of this session's with process {"action": "kill", "session_id": …}, or run the command in the foreground.` };
    }
    // Not the turn's signal: a background command outlives the call and the turn that started it.
    const running = await req.sandbox.start({ command: req.command, cwd: req.cwd, maxOutputChars: PROCESS_OUTPUT_CHARS, timeoutMs: req.timeoutMs ?? BACKGROUND_TIMEOUT_MS }, this.stopAll.signal);
    const proc: TrackedProcess = {
      id: `proc_${randomBytes(6).toString('hex')}`, sessionId: req.sessionId, ...(req.userId !== undefined ? { userId: req.userId } : {}),
      command: req.command, cwd: req.cwd, startedAt: this.clock(), running,
    };
    void running.done.then((r) => { proc.result = r; proc.finishedAt = this.clock(); });
    procs.set(proc.id, proc);
    this.sessions.set(req.sessionId, procs);
    return { ok: true, proc };
  }

  /** The registry's clock (ms). */
  now(): number {
    return this.clock();
  }

  /** One process of this session (never another session's). */
  get(sessionId: string, id: string): TrackedProcess | undefined {
    return this.prune(sessionId).get(id);
  }

  /** This session's processes, oldest first. */
  list(sessionId: string): TrackedProcess[] {
    return [...this.prune(sessionId).values()];
  }

  /** Ends every tracked command (worker shutdown). */
  close(): void {
    this.stopAll.abort(new Error('worker shutting down'));
    for (const procs of this.sessions.values()) for (const p of procs.values()) if (!p.result) p.running.kill();
    this.sessions.clear();
  }

  /** Running commands of every session (`userId`: only that person's). */
  private running(userId?: string): number {
    let n = 0;
    for (const procs of this.sessions.values()) for (const p of procs.values()) if (!p.result && (userId === undefined || p.userId === userId)) n++;
    return n;
  }

  /**
   * Drops finished processes past their 30 minutes; then, while over the limit, the oldest
   * finished. A session left with none is forgotten (the caller gets an empty, detached map).
   */
  private prune(sessionId: string): Map<string, TrackedProcess> {
    const now = this.clock();
    const procs = this.sessions.get(sessionId) ?? new Map<string, TrackedProcess>();
    for (const [id, p] of procs) if (p.finishedAt !== undefined && now - p.finishedAt > FINISHED_TTL_MS) procs.delete(id);
    const finished = [...procs.values()].filter((p) => p.result).sort((a, b) => (a.finishedAt ?? 0) - (b.finishedAt ?? 0));
    while (procs.size >= MAX_TRACKED_PROCESSES && finished.length > 0) procs.delete(finished.shift()!.id);
    if (procs.size === 0) this.sessions.delete(sessionId);
    return procs;
  }
}
