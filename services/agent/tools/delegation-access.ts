// What `delegate_task` reaches (ToolContext.delegation): the worker's ledger-backed delegation of
// one turn (services/worker/delegation.ts). Absent: this turn cannot delegate (a child, or no service).

export interface DelegatedTaskArgs {
  goal: string;
  context?: string | undefined;
  outputSchema?: Record<string, unknown> | undefined;
}

/** What `delegate_task` reaches: the worker's ledger-backed delegation for this turn. Each returns the JSON-able result. */
export interface DelegationAccess {
  spawn(tasks: DelegatedTaskArgs[]): Promise<Record<string, unknown>>;
  list(): Promise<Record<string, unknown>>;
  steer(subagentId: string, message: string): Promise<Record<string, unknown>>;
  /** Stops one child, or all active children of this conversation when `subagentId` is absent. */
  stop(subagentId?: string): Promise<Record<string, unknown>>;
}
