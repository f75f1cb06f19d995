// The load of a scenario: sessions, each a client sending unique tokens through the HTTP API as a
// real client would. A POST is retried with the same Idempotency-Key when the connection drops,
// nothing answers, or the answer is a 5xx, until it is acknowledged (2xx) — so every input is
// either acknowledged or still being retried, and an input admitted twice is the gateway's fault.
//   messages: POST /v1/agents/default/demo/messages (202, or 200 duplicate), then the next input
//   chat:     POST /v1/chat/completions, waiting for the answer (X-Hermes-Session-Id keeps one session)
import { Agent, request } from 'undici';
import { chaosApiKey } from './cluster.js';
import { tokenOf } from './model.js';
import { between, pause, prng, type Rand } from './random.js';

export type Api = 'messages' | 'chat';

export interface Input {
  token: string;
  session: string;
  api: Api;
  /** performance.now() of the first attempt. */
  sentAt: number;
  attempts: number;
  /** The answer that acknowledged it. */
  acked?: Ack & { at: number };
  /** Still unacknowledged when the load was stopped and its retries ran out. */
  gaveUp?: boolean;
}

export interface Ack { status: number; admissionId?: string; duplicate?: boolean; reply?: string }

export interface StatusCounts {
  /** Every answer by status ('conn' = no answer: refused, reset, timed out). */
  byStatus: Record<string, number>;
  /** 503 "the ledger is unavailable" / "gateway closing": right during an outage. */
  outage503: number;
  /** Any other 5xx, with a sample of what was answered. */
  unexpected5xx: number;
  samples: string[];
}

export interface LoadOptions {
  run: string;
  /** Gateway base URLs; a client moves to the next one when a request gets no answer. */
  gateways: () => string[];
  sessions: number;
  /** Which API each session uses (default: all `messages`). */
  apiOf?: (session: number) => Api;
  /** Pause between two inputs of a session (ms). */
  paceMs: [number, number];
  seed: number;
  /** How long a client may wait for one answer before it gives up on that attempt. @defaultValue 30 000 */
  attemptTimeoutMs?: number;
  /** How long an input is retried after the load was stopped. @defaultValue 120 000 */
  drainMs?: number;
  /** Stop sending new inputs after this many in total. */
  maxInputs?: number;
  /**
   * A session sends input n only once input n − window has settled (read back through the API),
   * so queues stay short and recovery is not hidden behind a backlog. @defaultValue 2
   */
  window?: number;
}

const outageCodes = new Set(['HERMES_STORE_UNAVAILABLE', 'HERMES_GATEWAY_CLOSING', 'store_unavailable']);

export class Load {
  readonly inputs: Input[] = [];
  readonly statuses: StatusCounts = { byStatus: {}, outage503: 0, unexpected5xx: 0, samples: [] };
  private stopping = false;
  private stoppedAt = Infinity;
  private loops: Promise<void>[] = [];
  private readonly dispatcher = new Agent({ connections: 64, keepAliveTimeout: 10_000, connect: { timeout: 2_000 } });
  private readonly rand: Rand;

  constructor(readonly opts: LoadOptions) {
    this.rand = prng(opts.seed);
  }

  start(): void {
    this.loops = Array.from({ length: this.opts.sessions }, (_, i) => this.session(i));
  }

  /** Stops sending new inputs; resolves when every input sent is acknowledged or given up. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stoppedAt = performance.now();
    await Promise.all(this.loops);
    await this.dispatcher.close();
  }

  acked(): Input[] {
    return this.inputs.filter((i) => i.acked);
  }

  private async session(i: number): Promise<void> {
    const session = `s${i}`;
    const api = this.opts.apiOf?.(i) ?? 'messages';
    const mine: Input[] = [];
    const window = this.opts.window ?? 2;
    for (let n = 1; !this.stopping && (this.opts.maxInputs === undefined || this.inputs.length < this.opts.maxInputs); n++) {
      const behind = mine[mine.length - window];
      if (behind?.acked?.admissionId && !(await this.settledOrStopped(behind.acked.admissionId))) break;
      const input: Input = { token: tokenOf(this.opts.run, session, n), session, api, sentAt: performance.now(), attempts: 0 };
      this.inputs.push(input);
      mine.push(input);
      await this.deliver(input, i);
      await pause(between(this.rand, this.opts.paceMs));
    }
  }

  /** Polls the admission until it is terminal or unknown (true), or the load stops (false). */
  private async settledOrStopped(admissionId: string): Promise<boolean> {
    for (let k = 0; !this.stopping; k++) {
      const gateways = this.opts.gateways();
      try {
        const res = await request(`${gateways[k % gateways.length]!}/v1/agents/default/demo/admissions/${admissionId}`, {
          headers: { authorization: `Bearer ${chaosApiKey}` }, dispatcher: this.dispatcher, headersTimeout: 5_000, bodyTimeout: 5_000,
        });
        const text = await res.body.text();
        this.count(String(res.statusCode), text);
        const state = res.statusCode === 200 ? (JSON.parse(text) as { state?: string }).state : undefined;
        if (state === 'terminal' || state === 'unknown') return true;
      } catch { /* the gateway is away: ask again */ }
      await pause(250);
    }
    return false;
  }

  /** Retries the input until acknowledged, or until the load was stopped `drainMs` ago. */
  private async deliver(input: Input, lane: number): Promise<void> {
    let wait = 100;
    for (;;) {
      const gateways = this.opts.gateways();
      const url = gateways[(lane + input.attempts) % gateways.length]!;
      input.attempts++;
      const answer = await this.attempt(input, url);
      if (answer) {
        input.acked = { ...answer, at: performance.now() };
        return;
      }
      if (performance.now() - this.stoppedAt > (this.opts.drainMs ?? 120_000)) {
        input.gaveUp = true;
        return;
      }
      await pause(wait + Math.round(this.rand() * wait));
      wait = Math.min(wait * 2, 1_000);
    }
  }

  private count(status: string, body: string): void {
    const s = this.statuses;
    s.byStatus[status] = (s.byStatus[status] ?? 0) + 1;
    if (!status.startsWith('5')) return;
    let code = '';
    try {
      const e = (JSON.parse(body) as { error?: { code?: string } }).error;
      code = e?.code ?? '';
    } catch { /* not JSON */ }
    if (status === '503' && outageCodes.has(code)) s.outage503++;
    else if (status === '502' && /HERMES_TURN_(INTERRUPTED|FAILED)/.test(code)) return; // the turn's own answer (unknown / failed): audited from the ledger
    else {
      s.unexpected5xx++;
      if (s.samples.length < 10) s.samples.push(`${status} ${body.slice(0, 300)}`);
    }
  }

  /** One attempt: the acknowledgement, or undefined to retry. */
  private async attempt(input: Input, url: string): Promise<Ack | undefined> {
    const timeout = this.opts.attemptTimeoutMs ?? 30_000;
    const headers: Record<string, string> = { authorization: `Bearer ${chaosApiKey}`, 'content-type': 'application/json', 'idempotency-key': input.token };
    const chat = input.api === 'chat';
    if (chat) headers['x-hermes-session-id'] = `${this.opts.run}-${input.session}`;
    const body = chat
      ? { model: 'default/demo', messages: [{ role: 'user', content: input.token }] }
      : { content: input.token, conversation: `${this.opts.run}-${input.session}` };
    let status: number;
    let text: string;
    try {
      const res = await request(`${url}${chat ? '/v1/chat/completions' : '/v1/agents/default/demo/messages'}`, {
        method: 'POST', headers, body: JSON.stringify(body), dispatcher: this.dispatcher, headersTimeout: timeout, bodyTimeout: timeout,
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch {
      this.count('conn', '');
      return undefined;
    }
    this.count(String(status), text);
    if (status >= 500) {
      if (status === 502 && chat) return { status };
      return undefined;
    }
    if (status >= 400) {
      // Our requests are valid: a refusal is a finding, recorded (not retried) for the audit.
      if (this.statuses.samples.length < 10) this.statuses.samples.push(`${status} ${text.slice(0, 300)}`);
      return { status };
    }
    const json = JSON.parse(text) as { admissionId?: string; duplicate?: boolean; choices?: { message: { content: string } }[] };
    if (chat) return { status, reply: json.choices?.[0]?.message.content ?? '' };
    return { status, admissionId: json.admissionId!, duplicate: json.duplicate ?? false };
  }
}
