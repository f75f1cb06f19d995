// Long-lived outbound connections to chat platforms, for agents that have no public URL: Slack
// Socket Mode, Telegram long polling, the Discord Gateway. Each connection is held by exactly one
// gateway replica (runAsLeader: a Postgres advisory lock named by the connection's identity, e.g.
// the bot), and fails over to another replica when its holder dies or loses Postgres.
//
// The supervisor re-reads the agents every HERMES_CONNECTOR_REFRESH_SECONDS: a connection starts
// when an agent's revision asks for one, restarts when that revision changes, and stops when the
// agent or its platform goes away. Two agents naming the same bot (one identity) get one
// connection, the first agent's (a warning names the other).
import { listAgents, runAsLeader, type AgentRecord, type Leadership, type LeaderTuning } from '../../core/index.js';
import type { PlatformSettings } from '../../platforms/index.js';
import type { GatewayContext } from '../context.js';

export interface Connector {
  /** The platform type this connector serves (an Agent's `spec.platforms[].type`). */
  readonly platform: string;
  /**
   * The identity of the connection this agent's settings call for (e.g. `slack-socket:<hash of
   * the app token>`), or undefined when they call for none (e.g. a public URL is configured).
   * Never a secret itself: it names the leader lock and appears in logs.
   */
  plan(ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings): Promise<string | undefined>;
  /** Holds the connection, admitting what arrives, until `signal` aborts (then returns soon). */
  run(ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings, signal: AbortSignal): Promise<void>;
}

export interface ConnectorSupervisor {
  /** Identities of the connections this replica campaigns for (leading or waiting). */
  campaigns(): string[];
  /** Identities of the connections this replica holds now. */
  leading(): string[];
  /** Re-reads the agents now (also runs on its own every refresh period). */
  refresh(): Promise<void>;
  stop(): Promise<void>;
}

export interface SupervisorOptions {
  /** @defaultValue HERMES_CONNECTOR_REFRESH_SECONDS */
  refreshMs?: number;
  leader?: Partial<LeaderTuning>;
}

interface Campaign { revisionId: string; agent: string; leadership: Leadership }

type Wanted = Map<string, { agent: AgentRecord; settings: PlatformSettings; connector: Connector }>;

async function wantedConnections(ctx: GatewayContext, connectors: readonly Connector[]): Promise<Wanted> {
  const wanted: Wanted = new Map();
  for (const agent of await listAgents(ctx.deps.db.pool)) {
    for (const settings of agent.compiled.platforms ?? []) {
      for (const connector of connectors.filter((c) => c.platform === settings.type)) {
        const id = await connector.plan(ctx, agent, settings).catch((err: unknown) => {
          ctx.deps.log.warn({ err, agent: agentLabel(agent), platform: settings.type }, 'Could not plan the platform connection; retrying at the next refresh');
          return undefined;
        });
        if (!id) continue;
        const first = wanted.get(id);
        if (first) ctx.deps.log.warn({ connection: id, agent: agentLabel(agent), holder: agentLabel(first.agent) }, 'Two agents use the same bot; only the first one connects');
        else wanted.set(id, { agent, settings, connector });
      }
    }
  }
  return wanted;
}

const agentLabel = (a: AgentRecord) => `${a.compiled.agent.namespace}/${a.compiled.agent.name}`;

export function startConnectors(ctx: GatewayContext, connectors: readonly Connector[], opts: SupervisorOptions = {}): ConnectorSupervisor {
  const { log } = ctx.deps;
  const campaigns = new Map<string, Campaign>();
  let stopped = false;
  let refreshing: Promise<void> | undefined;

  async function reconcile(): Promise<void> {
    const wanted = await wantedConnections(ctx, connectors);
    for (const [id, c] of campaigns) {
      const w = wanted.get(id);
      if (w && w.agent.revisionId === c.revisionId) continue;
      campaigns.delete(id);
      log.info({ connection: id, agent: c.agent, reason: w ? 'the agent changed' : 'no agent asks for it any more' }, 'Stopping a platform connection');
      await c.leadership.stop();
    }
    for (const [id, w] of wanted) {
      if (campaigns.has(id) || stopped) continue;
      const leadership = runAsLeader({
        databaseUrl: ctx.deps.config.DATABASE_URL,
        name: `hermes-connection:${id}`,
        log,
        ...(opts.leader ? { tuning: opts.leader } : {}),
        lead: (signal) => w.connector.run(ctx, w.agent, w.settings, signal),
      });
      campaigns.set(id, { revisionId: w.agent.revisionId, agent: agentLabel(w.agent), leadership });
    }
  }

  const refresh = () => {
    refreshing ??= reconcile()
      .catch((err: unknown) => log.warn({ err }, 'Could not refresh the platform connections; retrying at the next refresh'))
      .finally(() => { refreshing = undefined; });
    return refreshing;
  };

  const timer = setInterval(() => void refresh(), opts.refreshMs ?? ctx.deps.config.HERMES_CONNECTOR_REFRESH_SECONDS * 1_000);
  timer.unref();
  void refresh();

  return {
    campaigns: () => [...campaigns.keys()],
    leading: () => [...campaigns].filter(([, c]) => c.leadership.leading).map(([id]) => id),
    refresh,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await refreshing;
      await Promise.all([...campaigns.values()].map((c) => c.leadership.stop()));
      campaigns.clear();
    },
  };
}
