// POST /hooks/slack/:namespace/:name — Slack's Events API for one Agent. In order, each step
// refusing before the next runs, so nothing bad reaches the ledger:
//   413 body over HERMES_MAX_BODY_BYTES; 415 not JSON; 400 bad path;
//   401 timestamp missing or more than 300 s off (no lookup at all);
//   401 no such Agent, no slack platform, no signing secret, or a signature that does not match
//       the raw bytes (one answer for all, so it tells nobody which agents exist);
//   503 secrets unreadable / Postgres down (Slack retries);
//   400 malformed JSON or an envelope we do not know (only for requests Slack signed);
//   200 url_verification's challenge; 200 for everything admitted, deduplicated, refused or ignored
//       (a thread message without a mention is admitted only in a thread that is already a session).
// A retry (X-Slack-Retry-Num) carries the same event_id: the dedupe row makes it a no-op 200.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ZodError } from 'zod';
import { HermesError, injectTraceContext, type AgentRecord } from '../../core/index.js';
import { platformOf, slack, type PlatformSettings } from '../../platforms/index.js';
import type { GatewayContext } from '../context.js';
import { describeIssues } from '../errors.js';
import { admitPlatformEvent, settleFollowUp } from '../platform-admission.js';
import { agentParams, parseInput } from '../validation.js';

/** Before any lookup (the timestamp): the reason may be told, it depends on nothing of ours. */
const unverified = (reason: string) => new HermesError('HERMES_SIGNATURE_INVALID', `(${reason})`);

/**
 * After the lookup: one answer whether the agent is missing, has no slack platform, has no
 * signing secret or the signature is wrong, so refusals tell nobody which agents exist. The
 * reason goes to the log.
 */
function notVerified(request: FastifyRequest, namespace: string, name: string, reason: string): HermesError {
  request.log.info({ agent: `${namespace}/${name}`, reason }, 'Refused a Slack request');
  return new HermesError('HERMES_SIGNATURE_INVALID');
}

/** The agent and its slack settings, when the URL names one. */
async function slackAgent(ctx: GatewayContext, namespace: string, name: string): Promise<{ agent: AgentRecord; settings: PlatformSettings } | undefined> {
  const agent = await ctx.deps.agents.get(namespace, name);
  const settings = agent ? platformOf(agent.compiled, 'slack') : undefined;
  return agent && settings ? { agent, settings } : undefined;
}

/** The agent's signing secret; undefined when it is not configured (logged: the agent cannot be reached). */
async function signingSecret(ctx: GatewayContext, request: FastifyRequest, namespace: string, settings: PlatformSettings): Promise<string | undefined> {
  const { secrets } = ctx.deps;
  if (!secrets) throw new HermesError('HERMES_PLATFORM_SECRETS_UNAVAILABLE', 'This gateway was started without a secret source (HERMES_SECRETS_SOURCE).');
  const ref = { name: settings.credentialsSecret, key: slack.SLACK_KEYS.signingSecret };
  let value: string | undefined;
  try {
    value = await secrets.resolve(namespace, ref);
  } catch (err) {
    request.log.warn({ err, namespace, secret: ref.name }, 'Could not read the Slack signing secret');
    throw new HermesError('HERMES_PLATFORM_SECRETS_UNAVAILABLE');
  }
  if (!value) request.log.warn({ namespace, secret: ref.name, key: ref.key }, 'The Slack signing secret is missing: requests to this agent cannot be verified');
  return value || undefined;
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new HermesError('HERMES_BAD_JSON', 'Slack sends a JSON object.');
  }
}

function parseEnvelope(raw: Buffer): slack.SlackEnvelope {
  try {
    return slack.parseSlackEnvelope(parseJson(raw));
  } catch (err) {
    if (!(err instanceof ZodError)) throw err;
    const { detail, issues } = describeIssues(err, 'body');
    throw new HermesError('HERMES_BAD_REQUEST', detail, { issues });
  }
}

export function registerSlackRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const now = ctx.deps.tuning?.now ?? Date.now;
  // Its own scope: the body stays the raw bytes Slack signed (the rest of the app parses JSON).
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    scope.post('/hooks/slack/:namespace/:name', async (request, reply) => {
      const { namespace, name } = parseInput(agentParams, request.params, 'params');
      const nowSeconds = Math.floor(now() / 1_000);
      const fresh = slack.checkTimestamp(request.headers['x-slack-request-timestamp'], nowSeconds);
      if (!fresh.ok) throw unverified(fresh.reason);
      const found = await slackAgent(ctx, namespace, name);
      if (!found) throw notVerified(request, namespace, name, 'no Agent with a slack platform at this URL');
      const { agent, settings } = found;
      const secret = await signingSecret(ctx, request, namespace, settings);
      if (!secret) throw notVerified(request, namespace, name, 'the signing secret is not configured');
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const verified = slack.verifySlackRequest(secret, { timestamp: request.headers['x-slack-request-timestamp'], signature: request.headers['x-slack-signature'] }, raw, nowSeconds);
      if (!verified.ok) throw notVerified(request, namespace, name, verified.reason);

      let normalised = slack.normaliseSlack(parseEnvelope(raw), settings);
      const retry = request.headers['x-slack-retry-num'];
      if (normalised.kind === 'answer') return reply.code(200).send(normalised.body);
      normalised = await settleFollowUp(ctx, agent, settings, normalised);
      if (normalised.kind === 'ignore') {
        request.log[normalised.warn ? 'warn' : 'debug']({ agent: `${namespace}/${name}`, reason: normalised.reason }, 'Ignored a Slack event');
        return reply.code(200).send({ ok: true });
      }
      const admitted = await admitPlatformEvent(ctx, agent, settings, normalised.event, { trace: injectTraceContext(request.otelContext), log: request.log });
      request.log.info({ agent: `${namespace}/${name}`, platform: 'slack', eventId: normalised.event.eventId, retry, ...admitted }, 'Admitted Slack event');
      return reply.code(200).send({ ok: true });
    });
  });
}
