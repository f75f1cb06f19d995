// POST /hooks/teams/:namespace/:name — the messaging endpoint of one Agent's Teams bot (Azure Bot
// resource → Configuration → Messaging endpoint). In order, each step refusing before the next
// runs, so nothing bad reaches the ledger:
//   413 body over HERMES_MAX_BODY_BYTES; 415 not JSON; 400 bad path;
//   401 no "Authorization: Bearer <JWT>" (no lookup at all);
//   401 no such Agent, no teams platform, no TEAMS_APP_ID, or a token that does not verify
//       against the OpenID metadata (issuer, audience = the app id, signature, expiry): one
//       answer for all, the reason goes to the log;
//   503 secrets unreadable, the OpenID metadata / keys unreachable, or Postgres down (the Bot
//       Framework retries);
//   400 malformed JSON or an activity we cannot read (only for requests with a valid token);
//   401 the token's serviceurl claim is not the activity's serviceUrl (or the key is not endorsed
//       for its channel): replies would otherwise go where the token never said;
//   200 for everything admitted, deduplicated, refused or ignored.
// A retried activity carries the same id: the dedupe row makes it a no-op 200.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ZodError } from 'zod';
import { HermesError, injectTraceContext, type AgentRecord } from '../../core/index.js';
import { platformOf, teams, type PlatformSettings } from '../../platforms/index.js';
import type { GatewayContext } from '../context.js';
import { describeIssues } from '../errors.js';
import { admitPlatformEvent, settleFollowUp } from '../platform-admission.js';
import { parseRawJson, readPlatformSecret } from '../platform-secrets.js';
import { agentParams, parseInput } from '../validation.js';

/** Before any lookup: the reason may be told, it depends on nothing of ours. */
const unverified = (reason: string) => new HermesError('HERMES_SIGNATURE_INVALID', `(${reason})`);

/** After the lookup: one answer whatever the reason (it would tell which agents exist); the reason is logged. */
function notVerified(request: FastifyRequest, namespace: string, name: string, reason: string): HermesError {
  request.log.info({ agent: `${namespace}/${name}`, reason }, 'Refused a Teams request');
  return new HermesError('HERMES_SIGNATURE_INVALID');
}

async function teamsAgent(ctx: GatewayContext, namespace: string, name: string): Promise<{ agent: AgentRecord; settings: PlatformSettings } | undefined> {
  const agent = await ctx.deps.agents.get(namespace, name);
  const settings = agent ? platformOf(agent.compiled, 'teams') : undefined;
  return agent && settings ? { agent, settings } : undefined;
}

function parseActivity(raw: Buffer): teams.TeamsActivity {
  try {
    return teams.parseTeamsActivity(parseRawJson(raw, 'The Bot Framework'));
  } catch (err) {
    if (!(err instanceof ZodError)) throw err;
    const { detail, issues } = describeIssues(err, 'body');
    throw new HermesError('HERMES_BAD_REQUEST', detail, { issues });
  }
}

async function verifyToken(keys: teams.BotFrameworkKeys, request: FastifyRequest, appId: string, nowMs: number): Promise<teams.TeamsVerified> {
  try {
    return await teams.verifyTeamsToken(keys, request.headers.authorization, appId, nowMs);
  } catch (err) {
    request.log.warn({ err }, 'Could not fetch the Bot Framework OpenID metadata or signing keys');
    throw new HermesError('HERMES_PLATFORM_KEYS_UNAVAILABLE');
  }
}


export function registerTeamsRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const now = ctx.deps.tuning?.now ?? Date.now;
  // One key cache per gateway process (bounded: the keys of one metadata URL).
  const keys = new teams.BotFrameworkKeys({ openIdUrl: ctx.deps.config.HERMES_TEAMS_OPENID_URL, now });
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    scope.post('/hooks/teams/:namespace/:name', async (request, reply) => {
      const { namespace, name } = parseInput(agentParams, request.params, 'params');
      if (!teams.hasBearerToken(request.headers.authorization)) throw unverified('no "Authorization: Bearer <JWT>" header');
      const found = await teamsAgent(ctx, namespace, name);
      if (!found) throw notVerified(request, namespace, name, 'no Agent with a teams platform at this URL');
      const { agent, settings } = found;
      const appId = await readPlatformSecret(ctx, request, namespace, settings, teams.TEAMS_KEYS.appId);
      if (!appId) throw notVerified(request, namespace, name, 'TEAMS_APP_ID is not configured');
      const verified = await verifyToken(keys, request, appId, now());
      if (!verified.ok) throw notVerified(request, namespace, name, verified.reason);

      const activity = parseActivity(Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0));
      const bound = teams.checkActivityClaims(verified, activity);
      if (!bound.ok) throw notVerified(request, namespace, name, bound.reason);
      // A bot of one tenant (TEAMS_TENANT_ID) answers only that tenant: allowAll means its people, not
      // those of another tenant where the app was installed. Dropped with 200, so the connector does not retry.
      const tenant = await readPlatformSecret(ctx, request, namespace, settings, { key: teams.TEAMS_KEYS.tenantId, optional: true });
      const from = teams.activityTenant(activity);
      if (tenant && from !== undefined && from !== tenant) {
        request.log.warn({ agent: `${namespace}/${name}`, tenant: from }, 'Ignored a Teams activity from another tenant than TEAMS_TENANT_ID');
        return reply.code(200).send({});
      }
      const normalised = await settleFollowUp(ctx, agent, settings, teams.normaliseTeams(activity, settings));
      if (normalised.kind !== 'message') {
        const why = normalised.kind === 'ignore' ? normalised : { reason: normalised.kind, warn: false };
        request.log[why.warn ? 'warn' : 'debug']({ agent: `${namespace}/${name}`, reason: why.reason }, 'Ignored a Teams activity');
        return reply.code(200).send({});
      }
      const admitted = await admitPlatformEvent(ctx, agent, settings, normalised.event, { trace: injectTraceContext(request.otelContext), log: request.log });
      request.log.info({ agent: `${namespace}/${name}`, platform: 'teams', eventId: normalised.event.eventId, ...admitted }, 'Admitted Teams activity');
      return reply.code(200).send({});
    });
  });
}
