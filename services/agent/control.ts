// What a running turn can be told while it runs: stop (hard interrupt, drops pending steers),
// steer (a user line delivered after the current tool batch) and redirect (cancel the in-flight
// model call and continue with the correction; during tool execution it falls back to steer).
export class TurnControl {
  private readonly stopper = new AbortController();
  private steers: string[] = [];
  private call: AbortController | undefined;
  private redirectText: string | undefined;

  /** Aborted by stop(). */
  get signal(): AbortSignal {
    return this.stopper.signal;
  }

  stop(reason = 'stopped by /stop'): void {
    this.steers = [];
    this.stopper.abort(new Error(reason));
  }

  steer(text: string): void {
    this.steers.push(text);
  }

  /** True when it cancelled a model call; false when it was queued as a steer. */
  redirect(text: string): boolean {
    if (!this.call) {
      this.steer(text);
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
    return s;
  }
}
