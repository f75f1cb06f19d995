// Usage accounting around the loop: each model call's tokens and cost — reported or estimated (Postgres row +
// Prometheus counters by agent and model), answers and summaries alike, each with its task; spend
// caps checked before every call (a model with no known price is refused under a cap unless the
// Profile allows it); and `/usage`.
import { Counter, Gauge } from 'prom-client';
import {
  recordModelCall, sessionUsageText, spendSince, type Admission, type CompiledAgent, type Db, type Metrics, type ModelCallUsageRow, type SpendScope, type TurnResult, type UsageTask,
} from '../core/index.js';
import { estimateCost, moaCallsOf, priceFor, pricedRoutes, type Completion, type ModelRoute } from '../agent/index.js';

const costCounters = new WeakMap<Metrics, Counter<'agent' | 'model' | 'status'>>();

export function costCounter(metrics: Metrics): Counter<'agent' | 'model' | 'status'> {
  let c = costCounters.get(metrics);
  if (!c) {
    c = new Counter({ name: 'hermes_model_cost_usd_total', help: 'Model spend in USD (status: actual = reported by the provider | estimated | included | unknown).', labelNames: ['agent', 'model', 'status'], registers: [metrics.registry] });
    costCounters.set(metrics, c);
  }
  return c;
}

interface SpendCapMetrics {
  used: Gauge<'agent' | 'scope' | 'period'>;
  refusals: Counter<'agent' | 'scope' | 'period'>;
}
const capMetrics = new WeakMap<Metrics, SpendCapMetrics>();

/**
 * hermes_spend_cap_used_ratio{agent,scope,period} (spend so far over the cap, agent and profile
 * caps, set at each check before a model call) and hermes_spend_cap_refusals_total (calls refused
 * at a cap, user caps included), once per registry.
 */
export function spendCapMetrics(metrics: Metrics): SpendCapMetrics {
  let m = capMetrics.get(metrics);
  if (!m) {
    const r = [metrics.registry];
    m = {
      used: new Gauge({ name: 'hermes_spend_cap_used_ratio', help: 'Spend so far in the period over its cap (1 = reached: turns are refused), by agent, scope (agent | profile) and period (daily | monthly), as of the last check before a model call.', labelNames: ['agent', 'scope', 'period'], registers: r }),
      refusals: new Counter({ name: 'hermes_spend_cap_refusals_total', help: 'Model calls refused because a spend cap was reached, by agent, scope (agent | profile | user) and period.', labelNames: ['agent', 'scope', 'period'], registers: r }),
    };
    capMetrics.set(metrics, m);
  }
  return m;
}

const profileKey = (agent: CompiledAgent) => `${agent.profile.namespace}/${agent.profile.name}`;
export const agentLabelOf = (agent: CompiledAgent) => `${agent.agent.namespace}/${agent.agent.name}`;

export interface CallContext {
  db: Db;
  metrics: Metrics;
  adm: Admission;
  agent: CompiledAgent;
}

/** The usage row of one call (answer or summary: `task`), priced by its route. */
export function usageRowOf({ adm, agent }: Pick<CallContext, 'adm' | 'agent'>, done: Completion, route: ModelRoute, task: UsageTask = 'turn'): ModelCallUsageRow {
  const provider = route.pool.current();
  // The route's own price: a fallback model is priced by its own `pricing`, not the primary's.
  const cost = estimateCost({ provider: provider.name, model: route.model, local: provider.local ?? false, usage: done.usage, ...(route.price ? { price: route.price } : {}) });
  const u = done.usage;
  return {
    agentId: adm.agentId, profileKey: profileKey(agent), sessionId: adm.sessionId, userId: adm.userId, admissionId: adm.id, provider: provider.name, model: route.model,
    inputTokens: u.inputTokens, outputTokens: u.outputTokens, cacheReadTokens: u.cacheReadTokens, cacheWriteTokens: u.cacheWriteTokens, reasoningTokens: u.reasoningTokens,
    costUsd: cost.costUsd, costStatus: cost.status, task, ...(u.estimated ? { tokensEstimated: true as const } : {}),
  };
}

/** Records one call and counts it in Prometheus. */
export async function accountCall(ctx: CallContext, done: Completion, route: ModelRoute, task: UsageTask = 'turn'): Promise<void> {
  const row = usageRowOf(ctx, done, route, task);
  // The row first: a retried call (Postgres blip) must not count the metrics twice.
  await recordModelCall(ctx.db.pool, row);
  countCall(ctx, row);
}

function countCall({ metrics, agent }: CallContext, row: ModelCallUsageRow): void {
  const labels = { agent: agentLabelOf(agent), model: row.model };
  const u = row;
  metrics.modelCalls.inc({ ...labels, outcome: 'completed' });
  for (const [kind, n] of [['input', u.inputTokens], ['output', u.outputTokens], ['cache_read', u.cacheReadTokens], ['cache_write', u.cacheWriteTokens], ['reasoning', u.reasoningTokens]] as const) {
    metrics.tokens.inc({ ...labels, kind }, n);
  }
  costCounter(metrics).inc({ ...labels, status: row.costStatus }, row.costUsd ?? 0);
  if (row.tokensEstimated) metrics.usageEstimated.inc(labels);
}

const startOfDay = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
const startOfMonth = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
const usd = (n: number) => `$${n.toFixed(2)}`;

type Caps = NonNullable<CompiledAgent['spendCaps']>;
const hasCap = (caps: Caps) => [caps.agent, caps.profile, caps.user].some((c) => c?.dailyUsd !== undefined || c?.monthlyUsd !== undefined);

/**
 * Under a cap every model of the turn needs a price, or its calls would cost "unknown" (NULL) and
 * never reach the cap. Local endpoints count too: "local" is read from a URL the Profile chose.
 */
function unpricedRefusal(caps: Caps, routes: readonly ModelRoute[]): string | undefined {
  if (caps.allowUnpriced || !hasCap(caps)) return undefined;
  const primary = routes[0];
  const unpriced = pricedRoutes(routes).find((r) => !priceFor(r.model, r.price));
  if (!unpriced) return undefined;
  const where = primary?.members?.includes(unpriced) ? 'pricing on that model of spec.moa.presets[]'
    : unpriced === primary ? 'spec.model.pricing' : 'pricing on that fallback model (spec.fallbackModels[])';
  return `Sorry — I did not call the model: this agent has a spend cap, and the model "${unpriced.model}" has no known price, so its spend could not be counted. An operator needs to set ${where} in the Profile (USD per million tokens), or allow unpriced models with spendCaps.allowUnpriced: true.`;
}

type Cap = { dailyUsd?: number | undefined; monthlyUsd?: number | undefined };

/** One scope's caps: a refusal in words when one is reached; each check and refusal counted in `m`. */
async function scopeRefusal(c: { db: Db; agent: CompiledAgent; now: Date; m: SpendCapMetrics | undefined }, who: string, scope: SpendScope, cap: Cap): Promise<string | undefined> {
  const { db, agent, now, m } = c;
  for (const [period, limit, since, resets] of [['daily', cap.dailyUsd, startOfDay(now), '00:00 UTC'], ['monthly', cap.monthlyUsd, startOfMonth(now), 'the 1st of the month (UTC)']] as const) {
    if (limit === undefined) continue;
    const spent = await spendSince(db.pool, scope, since);
    const labels = { agent: agentLabelOf(agent), scope: scope.kind, period };
    // Per-user ratios would be one series per user: users count only as refusals.
    if (scope.kind !== 'user') m?.used.set(labels, limit > 0 ? spent / limit : 1);
    if (spent >= limit) {
      m?.refusals.inc(labels);
      const whose = who === 'your' ? 'your' : `this ${who}'s`;
      return `Sorry — ${whose} ${period} spend cap is reached (${usd(spent)} of ${usd(limit)} used), so I did not call the model. It resets at ${resets}; an operator can raise the cap.`;
    }
  }
  return undefined;
}

/**
 * A refusal in words when any cap is reached (or a model of `routes` has no price under a cap);
 * undefined when the call may go out. With `metrics`, the share of each cap used and the refusals
 * are exported (hermes_spend_cap_used_ratio, hermes_spend_cap_refusals_total).
 */
export async function checkSpendCaps(db: Db, adm: Admission, agent: CompiledAgent, routes: readonly ModelRoute[] = [], opts: { now?: Date; metrics?: Metrics } = {}): Promise<string | undefined> {
  const caps = agent.spendCaps;
  if (!caps) return undefined;
  const unpriced = unpricedRefusal(caps, routes);
  if (unpriced) return unpriced;
  const scopes: [string, SpendScope | undefined, Cap | undefined][] = [
    ['agent', { kind: 'agent', agentId: adm.agentId }, caps.agent],
    ['profile', { kind: 'profile', profileKey: profileKey(agent) }, caps.profile],
    ['your', adm.userId ? { kind: 'user', userId: adm.userId } : undefined, caps.user],
  ];
  const c = { db, agent, now: opts.now ?? new Date(), m: opts.metrics ? spendCapMetrics(opts.metrics) : undefined };
  for (const [who, scope, cap] of scopes) {
    if (!scope || !cap) continue;
    const refusal = await scopeRefusal(c, who, scope, cap);
    if (refusal) return refusal;
  }
  return undefined;
}

/** What goes around every model call of a turn — answers and summaries alike. */
export interface SpendAccounting {
  /** The caps, before a call: a refusal in words, or undefined. */
  beforeCall(): Promise<string | undefined>;
  /** After a successful call: its row, with what it was for. */
  onCall(done: Completion, route: ModelRoute, task: UsageTask): Promise<void>;
  /**
   * Rows of calls not written yet: the turn's final answer, whose row goes into the transaction
   * that ends the turn (no call of this turn comes after it, so no cap check needs it earlier).
   * Taking them empties the list.
   */
  takeDeferred(): ModelCallUsageRow[];
}

/**
 * The caps and the accounting of one turn's calls. `durable` wraps the row write (the worker retries
 * it while the turn's lease holds, so a Postgres blip costs latency, not the turn or the cap).
 */
export function spendAccounting(ctx: CallContext, routes: readonly ModelRoute[], durable: <T>(write: () => Promise<T>) => Promise<T> = (w) => w()): SpendAccounting {
  let deferred: ModelCallUsageRow[] = [];
  const record = async (done: Completion, route: ModelRoute, task: UsageTask): Promise<void> => {
    if (task === 'turn' && done.toolCalls.length === 0) {
      const row = usageRowOf(ctx, done, route, task);
      deferred.push(row);
      countCall(ctx, row);
      return;
    }
    await durable(() => accountCall(ctx, done, route, task));
  };
  return {
    beforeCall: async () => {
      // A call after a deferred one (it was not the final answer after all): write the row first.
      for (const row of deferred.splice(0)) await durable(() => recordModelCall(ctx.db.pool, row));
      return checkSpendCaps(ctx.db, ctx.adm, ctx.agent, routes, { metrics: ctx.metrics });
    },
    onCall: async (done, route, task) => {
      const moa = moaCallsOf(done);
      if (moa) {
        // A Mixture-of-Agents call: each reference and the aggregator on its own row, priced by its own model.
        for (const c of moa.filter((m) => m.reference)) await durable(() => accountCall(ctx, c.completion, c.route, 'moa_reference'));
        const answer = moa.find((m) => !m.reference)!;
        return record(answer.completion, answer.route, task);
      }
      return record(done, route, task);
    },
    takeDeferred: () => { const rows = deferred; deferred = []; return rows; },
  };

}

/** `/usage` reaching a turn (admitted without the gateway, e.g. by a test or a tool): the same text the gateway answers with. */
export async function usageReply(db: Db, adm: Admission): Promise<TurnResult | undefined> {
  if (adm.content.trim().toLowerCase() !== '/usage') return undefined;
  return { outcome: 'completed', reply: await sessionUsageText(db.pool, adm.sessionId) };
}
