// One model call with everything that may stand between the request and an answer: classified
// errors, API retries with backoff, stream retries, credential rotation, the per-turn fallback
// chain, the primary's cool-down and the auto-recovery ladder. Waits go through the Clock.
import { systemClock, type Clock } from './clock.js';
import { CooldownBook, type CredentialPool } from './credentials.js';
import { backoffMs, classifyError, type ClassifiedError, type ErrorReason } from './errors.js';
import type { Completion, CompletionRequest } from './messages.js';
import type { Price } from './pricing.js';

export interface ModelRoute {
  /** Stable identity for cool-downs: provider, endpoint and model. */
  key: string;
  model: string;
  pool: CredentialPool;
  /** The Profile's price for this model (USD per million tokens), over the built-in table. */
  price?: Price;
  /** A route made of other routes (a Mixture-of-Agents preset): its calls are priced by these. */
  members?: readonly ModelRoute[];
}

export interface RetryPolicy {
  /** API retries per route (SPEC: 3, at least 1). */
  apiRetries: number;
  /** Stream retries and their waits (SPEC: 1 s, 2 s). */
  streamRetryMs: number[];
  /** Auto-recovery ladder waits, for overloaded / server_error / timeout only (SPEC: 15/30/60/60/60 s). */
  ladderMs: number[];
}

export const defaultRetryPolicy: RetryPolicy = { apiRetries: 3, streamRetryMs: [1_000, 2_000], ladderMs: [15_000, 30_000, 60_000, 60_000, 60_000] };

export interface ModelCallOptions {
  routes: ModelRoute[];
  /** The user chose this model explicitly: never fall back silently. */
  explicit?: boolean;
  request: Omit<CompletionRequest, 'model'>;
  clock?: Clock;
  cooldowns?: CooldownBook;
  policy?: RetryPolicy;
  /** Told about every failed attempt (logs, metrics). */
  onFailure?: (route: ModelRoute, error: ClassifiedError) => void;
}

export type ModelCallResult =
  | { ok: true; completion: Completion; route: ModelRoute; fellBack: boolean }
  | { ok: false; error: ClassifiedError; route: ModelRoute; compress: boolean; partialText: string };

type RouteOutcome = { ok: true; completion: Completion } | { ok: false; error: ClassifiedError; next: 'fallback' | 'final' | 'compress' };

const LADDER_REASONS: ReadonlySet<ErrorReason> = new Set(['overloaded', 'server_error', 'timeout']);

interface CallState {
  delivered: string;
  clock: Clock;
  policy: RetryPolicy;
  request: Omit<CompletionRequest, 'model'>;
  onFailure?: (route: ModelRoute, error: ClassifiedError) => void;
}

interface RouteState {
  retries: number;
  streamRetries: number;
  sameKeyRateLimits: number;
  rotations: number;
  /** Keys (pool indexes) whose secret was already re-resolved after an auth error in this call. */
  refreshed: Set<number>;
}

type Decision = { kind: 'again' } | { kind: 'wait'; ms: number } | { kind: 'stop'; next: 'fallback' | 'final' | 'compress' };

function rotate(route: ModelRoute, rs: RouteState): boolean {
  if (rs.rotations >= route.pool.size - 1 || !route.pool.rotate()) return false;
  rs.rotations++;
  rs.sameKeyRateLimits = 0;
  return true;
}

/** What to do after a failed attempt on `route` (SPEC "The turn": retries, rotation, fallback). */
function decide(c: ClassifiedError, route: ModelRoute, rs: RouteState, st: CallState): Decision {
  // Text already reached the user: a retry would repeat it, so the failure stands.
  if (st.delivered) return { kind: 'stop', next: 'final' };
  if (c.shouldCompress) return { kind: 'stop', next: 'compress' };
  if ((c.reason === 'billing' || c.reason === 'auth') && rotate(route, rs)) return { kind: 'again' };
  // Rate limit: the same key once more, then the next key.
  if (c.reason === 'rate_limit' && ++rs.sameKeyRateLimits >= 2 && rotate(route, rs)) return { kind: 'again' };
  if (c.reason === 'stream') {
    const wait = st.policy.streamRetryMs[rs.streamRetries++];
    return wait === undefined ? { kind: 'stop', next: 'fallback' } : { kind: 'wait', ms: wait };
  }
  if (c.retryable && rs.retries < st.policy.apiRetries) {
    rs.retries++;
    return { kind: 'wait', ms: backoffMs(rs.retries, st.clock.random(), c.retryAfterMs) };
  }
  return { kind: 'stop', next: c.shouldFallback ? 'fallback' : 'final' };
}

async function tryRoute(route: ModelRoute, st: CallState): Promise<RouteOutcome> {
  const rs: RouteState = { retries: 0, streamRetries: 0, sameKeyRateLimits: 0, rotations: 0, refreshed: new Set() };
  const onDelta = (t: string) => { st.delivered += t; st.request.onDelta?.(t); };
  for (;;) {
    try {
      return { ok: true, completion: await route.pool.current().complete({ ...st.request, model: route.model, onDelta }) };
    } catch (err) {
      if (st.request.signal.aborted) throw err;
      const c = classifyError(err, st.clock.now());
      st.onFailure?.(route, c);
      // Auth: refresh then rotate — re-resolve the failing key's secret once (a rotated Secret
      // gives a new value) and retry with it; only if it did not change, or failed again, rotate.
      if (c.reason === 'auth' && !st.delivered && !rs.refreshed.has(route.pool.index)) {
        rs.refreshed.add(route.pool.index);
        if (await route.pool.refresh()) continue;
      }
      const d = decide(c, route, rs, st);
      if (d.kind === 'stop') return { ok: false, error: c, next: d.next };
      if (d.kind === 'wait') await st.clock.sleep(d.ms, st.request.signal);
    }
  }
}

function order(opts: ModelCallOptions, cooldowns: CooldownBook, now: number): ModelRoute[] {
  const [primary, ...fallbacks] = opts.routes;
  if (!primary) throw new Error('no model route');
  if (opts.explicit || !fallbacks.length) return [primary];
  return cooldowns.isCooling(primary.key, now) ? [...fallbacks, primary] : [primary, ...fallbacks];
}

/** One pass over the routes; undefined when every route failed over (ladder territory). */
async function pass(opts: ModelCallOptions, st: CallState, cooldowns: CooldownBook): Promise<ModelCallResult | { ok: false; last: { route: ModelRoute; error: ClassifiedError } }> {
  const primary = opts.routes[0]!;
  const canFallBack = opts.routes.length > 1 && !opts.explicit;
  let last: { route: ModelRoute; error: ClassifiedError } | undefined;
  for (const route of order(opts, cooldowns, st.clock.now())) {
    const r = await tryRoute(route, st);
    if (r.ok) {
      if (route === primary) cooldowns.succeed(primary.key);
      return { ok: true, completion: r.completion, route, fellBack: route !== primary };
    }
    if (route === primary && r.next === 'fallback' && canFallBack) cooldowns.fail(primary.key, st.clock.now());
    if (r.next !== 'fallback') return { ok: false, error: r.error, route, compress: r.next === 'compress', partialText: st.delivered };
    last = { route, error: r.error };
  }
  return { ok: false, last: last! };
}

export async function callModel(opts: ModelCallOptions): Promise<ModelCallResult> {
  const clock = opts.clock ?? systemClock;
  const cooldowns = opts.cooldowns ?? new CooldownBook();
  const policy = opts.policy ?? defaultRetryPolicy;
  const st: CallState = { delivered: '', clock, policy, request: opts.request, ...(opts.onFailure ? { onFailure: opts.onFailure } : {}) };
  for (let cycle = 0; ; cycle++) {
    const r = await pass(opts, st, cooldowns);
    if (!('last' in r)) return r;
    const waitMs = policy.ladderMs[cycle];
    if (st.delivered || waitMs === undefined || !LADDER_REASONS.has(r.last.error.reason)) {
      return { ok: false, error: r.last.error, route: r.last.route, compress: false, partialText: st.delivered };
    }
    await clock.sleep(waitMs, opts.request.signal);
  }
}
