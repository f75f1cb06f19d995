// What the clarify tool asks through (ToolContext.clarify): the worker parks the question durably
// in Postgres, sends it to the chat through the delivery ledger and waits for the user's next
// message (worker/clarify.ts). Absent: nobody can be asked here (unattended turns).

export interface ClarifyRequest {
  question: string;
  /** Up to 4 suggested answers; the user may still answer in their own words. */
  choices?: string[];
}

/** How the wait ended. */
export type ClarifyOutcome =
  | { status: 'answered'; answer: string }
  | { status: 'timeout'; timeoutSeconds: number }
  | { status: 'stopped' }
  | { status: 'unavailable'; reason: string };

export interface ClarifyAccess {
  /** `keepAlive` is called on every poll while the question waits (the turn's liveness watchdog). */
  ask(request: ClarifyRequest, signal: AbortSignal, keepAlive?: () => void): Promise<ClarifyOutcome>;
}
