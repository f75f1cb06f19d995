// What a running turn can be told while it runs: stop (hard interrupt, drops pending steers),
// steer (a user line delivered after the current tool batch) and redirect (cancel the in-flight
// model call and continue with the correction; during tool execution it falls back to steer).
export class TurnControl {
  private readonly stopper = new AbortController();
  private steers: { text: string; id?: string | undefined }[] = [];
  private dropped: { text: string; id?: string | undefined }[] = [];
  private call: AbortController | undefined;
  private redirectText: string | undefined;

  /** Aborted by stop(). */
  get signal(): AbortSignal {
    return this.stopper.signal;
  }

  stop(reason = 'stopped by /stop'): void {
    // Pending steers are dropped from this turn (SPEC); unsent() still names them, so their messages are not lost.
    this.dropped.push(...this.steers);
    this.steers = [];
    this.stopper.abort(new Error(reason));
  }

  /** `id`: the signal it came from, so a steer the turn never delivered can be handed back (unsent()). */
  steer(text: string, id?: string): void {
    this.steers.push({ text, id });
  }

  /** True when it cancelled a model call; false when it was queued as a steer. */
  redirect(text: string, id?: string): boolean {
    if (!this.call) {
      this.steer(text, id);
      return false;
    }
    this.redirectText = this.redirectText ? `${this.redirectText}\n${text}` : text;
    this.call.abort(new Error('redirected'));
    return true;
  }

  /** The signal for one model call: the turn's, plus a redirect. */
  beginCall(turn: AbortSignal): AbortSignal {
    this.call = new AbortController();
    return AbortSignal.any([turn, this.call.signal]);
  }

  /** Ends the call; the redirect text when the call was redirected. */
  endCall(): string | undefined {
    this.call = undefined;
    const t = this.redirectText;
    this.redirectText = undefined;
    return t;
  }

  takeSteers(): string[] {
    const s = this.steers;
    this.steers = [];
    return s.map((x) => x.text);
  }

  /**
   * Signal ids of steers the model never saw: still waiting when the turn ended (it answered
   * without another tool batch) or dropped by stop(). Their messages must run as turns of their own.
   */
  unsent(): string[] {
    return [...this.dropped, ...this.steers].flatMap((x) => (x.id ? [x.id] : []));
  }
}
