// Slack Socket Mode: for an agent with no public URL. The rule (docs/platforms.md): the platform's
// Secret has SLACK_APP_TOKEN (an `xapp-` app-level token with connections:write) and no
// SLACK_SIGNING_SECRET — "only an app token is given". Then one replica (the supervisor's leader
// lock, named by a hash of the app token: one connection per Slack app) opens a WebSocket through
// `apps.connections.open` at the platform's API base URL (HERMES_SLACK_API_URL or its `apiUrl`)
// with the official client (`@slack/socket-mode`), and every `events_api` envelope takes the same
// path as an Events API request: parse → normaliseSlack → (follow-up: settleFollowUp) → admission.
// The envelope is acknowledged only after the admission (or refusal) is committed; when it fails
// (Postgres down) it is not acknowledged and Slack sends it again — with the same event_id, which
// the ledger's dedupe row makes one admission, as for HTTP retries.
import { createHash } from 'node:crypto';
import { SocketModeClient, LogLevel, type Logger as SlackLogger } from '@slack/socket-mode';
import type { FastifyBaseLogger } from 'fastify';
import { ZodError } from 'zod';
import { injectTraceContext, pause, type AgentRecord, type Logger } from '../../core/index.js';
import { slack, type PlatformSettings } from '../../platforms/index.js';
import type { GatewayContext } from '../context.js';
import { admitPlatformEvent, settleFollowUp } from '../platform-admission.js';
import type { Connector } from './supervisor.js';

/** After a failed start (a refused token, Slack unreachable) wait this long before the next try. @defaultValue 30 000 */
export interface SlackSocketTuning { retryMs?: number; clientPingTimeoutMs?: number }

interface SocketSecrets { appToken?: string; signingSecret?: string }

async function readSecrets(ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings): Promise<SocketSecrets> {
  const { secrets } = ctx.deps;
  if (!secrets) return {};
  const namespace = agent.compiled.agent.namespace;
  const read = (key: string) => secrets.resolve(namespace, { name: settings.credentialsSecret, key });
  const [appToken, signingSecret] = await Promise.all([read(slack.SLACK_KEYS.appToken), read(slack.SLACK_KEYS.signingSecret)]);
  return { ...(appToken ? { appToken } : {}), ...(signingSecret ? { signingSecret } : {}) };
}

/** Socket Mode is wanted when the Secret has an app token and no signing secret (no public URL to verify). */
export const wantsSocketMode = (s: SocketSecrets) => Boolean(s.appToken) && !s.signingSecret;

/** The connection's identity: one per Slack app (its app-level token), never the token itself. */
export const socketIdentity = (appToken: string) => `slack-socket:${createHash('sha256').update(appToken).digest('hex').slice(0, 16)}`;

/** The socket client's log lines into ours (its debug lines carry payloads: kept at trace). */
function slackLogger(log: Logger): SlackLogger {
  let level = LogLevel.INFO;
  const line = (args: unknown[]) => args.map(String).join(' ');
  return {
    debug: (...m: unknown[]) => log.trace(line(m)),
    info: (...m: unknown[]) => log.debug(line(m)),
    warn: (...m: unknown[]) => log.warn(line(m)),
    error: (...m: unknown[]) => log.warn(line(m)),
    setLevel: (l: LogLevel) => { level = l; },
    getLevel: () => level,
    setName: () => undefined,
  };
}

interface SocketEvent { envelope_id: string; type: string; body: unknown; retry_num?: number; ack: () => Promise<void> }

/** What one envelope leads to; `ack` false when it must not be acknowledged (Slack sends it again). */
async function handleEnvelope(ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings, ev: SocketEvent, log: Logger): Promise<boolean> {
  const label = `${agent.compiled.agent.namespace}/${agent.compiled.agent.name}`;
  // Slash commands and interactivity are not used by Hermes: acknowledged and dropped.
  if (ev.type !== 'events_api') {
    log.debug({ agent: label, type: ev.type }, 'Ignored a Socket Mode envelope');
    return true;
  }
  let envelope: slack.SlackEnvelope;
  try {
    envelope = slack.parseSlackEnvelope(ev.body);
  } catch (err) {
    if (!(err instanceof ZodError)) throw err;
    // A shape we do not know will not parse on a retry either: acknowledge, tell the operator.
    log.warn({ agent: label, issues: err.issues.slice(0, 5) }, 'Ignored a Socket Mode event of a shape we do not know');
    return true;
  }
  let normalised = slack.normaliseSlack(envelope, settings);
  normalised = await settleFollowUp(ctx, agent, settings, normalised);
  if (normalised.kind === 'answer') return true;
  if (normalised.kind === 'ignore') {
    log[normalised.warn ? 'warn' : 'debug']({ agent: label, reason: normalised.reason }, 'Ignored a Slack event');
    return true;
  }
  const admitted = await admitPlatformEvent(ctx, agent, settings, normalised.event, { trace: injectTraceContext(), log: log as unknown as FastifyBaseLogger });
  log.info({ agent: label, platform: 'slack', via: 'socket', eventId: normalised.event.eventId, retry: ev.retry_num, ...admitted }, 'Admitted Slack event');
  return true;
}

async function holdConnection(ctx: GatewayContext, agent: AgentRecord, settings: PlatformSettings, signal: AbortSignal, tuning: SlackSocketTuning): Promise<void> {
  const log = ctx.deps.log.child({ connector: 'slack-socket', agent: `${agent.compiled.agent.namespace}/${agent.compiled.agent.name}` });
  const { appToken } = await readSecrets(ctx, agent, settings);
  if (!appToken) return;
  const apiUrl = slack.slackApiUrl(settings, ctx.deps.config.HERMES_SLACK_API_URL);
  const client = new SocketModeClient({
    appToken,
    logger: slackLogger(log),
    clientPingTimeout: tuning.clientPingTimeoutMs ?? 5_000,
    // apps.connections.open goes to the configured API base (tests, egress proxies); a few quick retries, then our own backoff.
    clientOptions: { slackApiUrl: apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`, retryConfig: { retries: 2, factor: 1.5, minTimeout: 200, maxTimeout: 2_000 } },
  });
  const inFlight = new Set<Promise<void>>();
  client.on('slack_event', (ev: SocketEvent) => {
    const job = handleEnvelope(ctx, agent, settings, ev, log)
      .then((ack) => (ack ? ev.ack() : undefined))
      .catch((err: unknown) => log.warn({ err, envelope: ev.envelope_id }, 'Could not admit a Socket Mode event; not acknowledged, so Slack sends it again'))
      .finally(() => inFlight.delete(job));
    inFlight.add(job);
  });
  const aborted = new Promise<void>((resolve) => { if (signal.aborted) resolve(); else signal.addEventListener('abort', () => resolve(), { once: true }); });
  try {
    const started = client.start();
    started.catch(() => undefined);
    await Promise.race([started, aborted]);
    if (!signal.aborted) log.info('Slack Socket Mode connected');
    // The client reconnects by itself (Slack's `disconnect` refreshes, lost sockets) while we lead.
    await aborted;
  } catch (err) {
    log.warn({ err }, 'Slack Socket Mode could not connect; trying again later');
    await pause(tuning.retryMs ?? 30_000, signal);
  } finally {
    // Envelopes being admitted finish and are acknowledged before the socket closes.
    await Promise.allSettled([...inFlight]);
    await client.disconnect().catch(() => undefined);
    client.removeAllListeners();
  }
}

export function slackSocketConnector(tuning: SlackSocketTuning = {}): Connector {
  return {
    platform: 'slack',
    async plan(ctx, agent, settings) {
      const secrets = await readSecrets(ctx, agent, settings);
      return wantsSocketMode(secrets) ? socketIdentity(secrets.appToken!) : undefined;
    },
    run: (ctx, agent, settings, signal) => holdConnection(ctx, agent, settings, signal, tuning),
  };
}
