// The gateway's fastify app, without a listener (tests drive it with `app.inject()`; `startGateway`
// listens). Wiring only: parsers, error shapes, hooks, routes, and what closing means.
import Fastify, { type FastifyInstance } from 'fastify';
import { recordAllowedMethods } from './allowed-methods.js';
import { answerClientError } from './client-error.js';
import { registerClientGone } from './client-gone.js';
import { platformConnectors, startConnectors, type Connector, type ConnectorSupervisor } from './connectors/index.js';
import { createContext } from './context.js';
import type { GatewayDeps } from './deps.js';
import { HermesError, runKanbanDispatcher, type Leadership } from '../core/index.js';
import { sendApiError, toApiError } from './errors.js';
import { registerRequestMetrics } from './request-metrics.js';
import { registerAdminLearningRoutes } from './routes/admin-learning.js';
import { registerAdminPairingRoutes } from './routes/admin-pairing.js';
import { registerAdminKanbanRoutes } from './routes/admin-kanban.js';
import { registerAdmissionEventRoutes } from './routes/admission-events.js';
import { registerAdmissionRoutes } from './routes/admissions.js';
import { registerDiscordRoutes } from './routes/discord.js';
import { registerCapabilitiesRoute } from './routes/capabilities.js';
import { registerHealthRoutes } from './routes/health.js';
import { registerMessageRoutes } from './routes/messages.js';
import { registerOpenAiRoutes } from './routes/openai.js';
import { registerResponseRoutes } from './routes/responses.js';
import { registerRunRoutes } from './routes/runs.js';
import { registerSessionRoutes } from './routes/sessions.js';
import { registerSlackRoutes } from './routes/slack.js';
import { registerTeamsRoutes } from './routes/teams.js';
import { registerWebhookRoutes } from './routes/webhook.js';
import { registerTelegramRoutes } from './routes/telegram.js';
import { registerTracing } from './tracing.js';
import { acceptEmptyJsonBody, refuseEncodedBodies, refuseRepeatedHeaders } from './validation.js';

export interface AppOptions {
  /** The long-lived platform connections a listening gateway campaigns for. @defaultValue platformConnectors */
  connectors?: readonly Connector[];
}

export function buildGatewayApp(deps: GatewayDeps, opts: AppOptions = {}): FastifyInstance {
  const { config } = deps;
  const app = Fastify({
    loggerInstance: deps.log,
    bodyLimit: config.HERMES_MAX_BODY_BYTES,
    requestIdHeader: 'x-request-id',
    return503OnClosing: true,
    // Requests Node's parser refuses (431, 400, 408): answered in our error shape.
    clientErrorHandler: answerClientError,
    // Path parameters as long as our own checks allow (ids up to 256, names up to 253 characters,
    // percent-encoded): the router's default of 100 answered longer ones with its own 414.
    routerOptions: { maxParamLength: 2_048 },
    // A path the router cannot decode (`%ED%A0%80`) or a parameter past that length: our JSON error, not fastify's.
    frameworkErrors: (err, request, reply) => sendApiError(reply, request, toApiError(
      new HermesError('HERMES_BAD_REQUEST', err.code === 'FST_ERR_BAD_URL' ? 'The request path is not valid percent-encoded UTF-8.'
        : err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A part of the request path is longer than 2048 characters.' : `The request path was refused (${err.code}).`),
      request, config.HERMES_MAX_BODY_BYTES)),
  }) as unknown as FastifyInstance;
  const ctx = createContext(deps);

  // JSON only: without the default text/plain parser, any other body type is a 415.
  app.removeContentTypeParser('text/plain');
  acceptEmptyJsonBody(app);

  app.setErrorHandler((err, request, reply) => {
    const apiError = toApiError(err, request, config.HERMES_MAX_BODY_BYTES);
    if (apiError.code === 'HERMES_CLIENT_CLOSED_REQUEST') request.log.info({ reason: (err as Error).message }, 'Client went away before the answer');
    // Expected while Postgres restarts: one line per request without a stack, not an error flood.
    else if (apiError.code === 'HERMES_STORE_UNAVAILABLE') request.log.warn({ code: apiError.code, reason: (err as Error).message }, 'Request refused: Postgres unavailable');
    else if (apiError.status >= 500) request.log.error({ err, code: apiError.code }, 'Request failed');
    else request.log.info({ code: apiError.code, reason: apiError.message }, 'Request refused');
    return sendApiError(reply, request, apiError);
  });
  const allowedMethods = recordAllowedMethods(app);
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    const allowed = allowedMethods(path);
    if (allowed.length === 0) {
      return sendApiError(reply, request, toApiError(new HermesError('HERMES_ROUTE_NOT_FOUND', `${request.method} ${path} is not a route of the Hermes gateway.`), request, config.HERMES_MAX_BODY_BYTES));
    }
    const allow = [...allowed, 'OPTIONS'].join(', ');
    if (request.method === 'OPTIONS') return reply.code(204).header('allow', allow).send();
    reply.header('allow', allow);
    return sendApiError(reply, request, toApiError(new HermesError('HERMES_METHOD_NOT_ALLOWED', `${path} takes ${allowed.join(', ')}, not ${request.method}.`), request, config.HERMES_MAX_BODY_BYTES));
  });

  registerClientGone(app);
  refuseRepeatedHeaders(app);
  refuseEncodedBodies(app);
  registerTracing(app);
  registerRequestMetrics(app, deps.metrics);
  registerHealthRoutes(app, ctx);
  registerCapabilitiesRoute(app);
  registerMessageRoutes(app, ctx);
  registerAdmissionRoutes(app, ctx);
  registerAdmissionEventRoutes(app, ctx);
  registerOpenAiRoutes(app, ctx);
  registerResponseRoutes(app, ctx);
  registerRunRoutes(app, ctx);
  registerSessionRoutes(app, ctx);
  registerSlackRoutes(app, ctx);
  registerTeamsRoutes(app, ctx);
  registerWebhookRoutes(app, ctx);
  registerTelegramRoutes(app, ctx);
  registerDiscordRoutes(app, ctx);
  registerAdminLearningRoutes(app, ctx);
  registerAdminPairingRoutes(app, ctx);
  registerAdminKanbanRoutes(app, ctx);

  // Long-lived platform connections (Socket Mode, long polling, the Discord Gateway): only for a
  // gateway that listens (not for app.inject in tests) and can read platform secrets.
  let connections: ConnectorSupervisor | undefined;
  let kanban: Leadership | undefined;
  app.addHook('onListen', (done) => {
    const connectors = opts.connectors ?? platformConnectors;
    if (deps.secrets && config.HERMES_CONNECTORS === 'on' && connectors.length > 0) connections = startConnectors(ctx, connectors);
    // The Kanban dispatcher: every listening gateway campaigns, one leads (core/kanban/dispatcher-loop.ts).
    if (config.HERMES_KANBAN_DISPATCH === 'on') kanban = runKanbanDispatcher({ config, db: deps.db, queues: deps.queues, redis: deps.redis, log: deps.log });
    done();
  });

  // Closing: stop taking requests (fastify answers 503), end waits and streams, drop subscriptions,
  // hand the platform connections over (their leader locks are released at once).
  app.addHook('preClose', async () => {
    ctx.beginShutdown();
    await connections?.stop();
    await kanban?.stop();
  });
  app.addHook('onClose', async () => {
    await ctx.close();
  });
  return app;
}
