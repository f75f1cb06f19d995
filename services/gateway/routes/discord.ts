// POST /hooks/discord/:namespace/:name — Discord's interactions endpoint for one Agent (the
// "Interactions Endpoint URL" of the application). In order, each step refusing before the next
// runs, so nothing bad reaches the ledger:
//   413 body over HERMES_MAX_BODY_BYTES; 415 not JSON; 400 bad path;
//   401 X-Signature-Timestamp missing or more than 300 s off (no lookup at all);
//   401 no such Agent, no discord platform, no public key, or a signature that does not match
//       the raw bytes (one answer for all, so it tells nobody which agents exist);
//   503 secrets unreadable / Postgres down;
//   400 malformed JSON or an interaction we cannot read (only for requests Discord signed);
//   200 PING → PONG; `/ask` → a deferred response (type 5) once the turn is admitted (or refused:
//       an ephemeral one, which the refusal then replaces; refused before: an ephemeral refusal at once; DM
//       pairing with nothing for the ledger to send: an ephemeral "still pending" at once);
//       other interactions → an ephemeral hint.
// Discord does not retry interactions, but a duplicate (same interaction id) is one admission.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ZodError } from 'zod';
import { HermesError, injectTraceContext, type AgentRecord } from '../../core/index.js';
import { discord, platformOf, refusalText, type PlatformSettings } from '../../platforms/index.js';
import type { GatewayContext } from '../context.js';
import { describeIssues } from '../errors.js';
import { admitPlatformEvent } from '../platform-admission.js';
import { pairingNotice } from '../pairing.js';
import { agentParams, parseInput } from '../validation.js';

const unverified = (reason: string) => new HermesError('HERMES_SIGNATURE_INVALID', `(${reason})`);

/** After the lookup: one answer whatever the reason (logged), so refusals tell nobody which agents exist. */
function notVerified(request: FastifyRequest, namespace: string, name: string, reason: string): HermesError {
  request.log.info({ agent: `${namespace}/${name}`, reason }, 'Refused a Discord request');
  return new HermesError('HERMES_SIGNATURE_INVALID');
}

async function discordAgent(ctx: GatewayContext, namespace: string, name: string): Promise<{ agent: AgentRecord; settings: PlatformSettings } | undefined> {
  const agent = await ctx.deps.agents.get(namespace, name);
  const settings = agent ? platformOf(agent.compiled, 'discord') : undefined;
  return agent && settings ? { agent, settings } : undefined;
}

/** The application's public key; undefined when it is not configured (logged: the agent cannot be reached). */
async function publicKey(ctx: GatewayContext, request: FastifyRequest, namespace: string, settings: PlatformSettings): Promise<string | undefined> {
  const { secrets } = ctx.deps;
  if (!secrets) throw new HermesError('HERMES_PLATFORM_SECRETS_UNAVAILABLE', 'This gateway was started without a secret source (HERMES_SECRETS_SOURCE).');
  const ref = { name: settings.credentialsSecret, key: discord.DISCORD_KEYS.publicKey };
  let value: string | undefined;
  try {
    value = await secrets.resolve(namespace, ref);
  } catch (err) {
    request.log.warn({ err, namespace, secret: ref.name }, 'Could not read the Discord public key');
    throw new HermesError('HERMES_PLATFORM_SECRETS_UNAVAILABLE');
  }
  if (!value) request.log.warn({ namespace, secret: ref.name, key: ref.key }, 'The Discord public key is missing: interactions for this agent cannot be verified');
  return value?.trim() || undefined;
}

function parseInteraction(raw: Buffer): discord.DiscordInteraction {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new HermesError('HERMES_BAD_JSON', 'Discord sends a JSON object.');
  }
  try {
    return discord.parseDiscordInteraction(body);
  } catch (err) {
    if (!(err instanceof ZodError)) throw err;
    const { detail, issues } = describeIssues(err, 'body');
    throw new HermesError('HERMES_BAD_REQUEST', detail, { issues });
  }
}

export function registerDiscordRoutes(app: FastifyInstance, ctx: GatewayContext): void {
  const now = ctx.deps.tuning?.now ?? Date.now;
  // Its own scope: the body stays the raw bytes Discord signed (the rest of the app parses JSON).
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    scope.post('/hooks/discord/:namespace/:name', async (request, reply) => {
      const { namespace, name } = parseInput(agentParams, request.params, 'params');
      const nowMs = now();
      const nowSeconds = Math.floor(nowMs / 1_000);
      const headers = { timestamp: request.headers['x-signature-timestamp'], signature: request.headers['x-signature-ed25519'] };
      const fresh = discord.checkDiscordTimestamp(headers.timestamp, nowSeconds);
      if (!fresh.ok) throw unverified(fresh.reason);
      const found = await discordAgent(ctx, namespace, name);
      if (!found) throw notVerified(request, namespace, name, 'no Agent with a discord platform at this URL');
      const { agent, settings } = found;
      const key = await publicKey(ctx, request, namespace, settings);
      if (!key) throw notVerified(request, namespace, name, 'the public key is not configured');
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const verified = await discord.verifyDiscordRequest(key, headers, raw, nowSeconds);
      if (!verified.ok) throw notVerified(request, namespace, name, verified.reason);

      const normalised = discord.normaliseDiscordInteraction(parseInteraction(raw), nowMs);
      if (normalised.kind === 'answer') return reply.code(200).send(normalised.body);
      if (normalised.kind !== 'message') {
        request.log.warn({ agent: `${namespace}/${name}`, reason: normalised.kind === 'ignore' ? normalised.reason : normalised.kind }, 'Ignored a Discord interaction');
        return reply.code(200).send({ type: 4, data: { content: 'This interaction could not be read.', flags: 64 } });
      }
      const maxChars = ctx.deps.config.HERMES_MAX_MESSAGE_CHARS;
      if (normalised.event.text.length > maxChars) {
        return reply.code(200).send({ type: 4, data: { content: `That prompt has ${normalised.event.text.length} characters; this agent takes at most ${maxChars}.`, flags: 64 } });
      }
      const admitted = await admitPlatformEvent(ctx, agent, settings, normalised.event, { trace: injectTraceContext(request.otelContext), log: request.log });
      request.log.info({ agent: `${namespace}/${name}`, platform: 'discord', eventId: normalised.event.eventId, ...admitted }, 'Admitted Discord interaction');
      // Refused before: the ledger sends nothing more, but Discord wants an answer: only the user sees it.
      if (admitted.outcome === 'refused-before') return reply.code(200).send({ type: 4, data: { content: refusalText, flags: 64 } });
      // Pairing with nothing for the ledger to send (a repeat within 10 min, a refusal sent before):
      // a deferred "thinking…" would never be replaced, so the user is told now, ephemerally.
      if (admitted.outcome === 'pairing' && !admitted.answering) return reply.code(200).send({ type: 4, data: { content: pairingNotice(admitted.ask), flags: 64 } });
      // A first refusal replaces "thinking…" through the ledger: deferred ephemerally, so the channel sees neither.
      if (admitted.outcome === 'refused') return reply.code(200).send(discord.deferredEphemeralResponse);
      return reply.code(200).send(discord.deferredResponse);
    });
  });
}
