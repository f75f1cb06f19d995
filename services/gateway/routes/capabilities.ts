// GET /v1/capabilities: Hermes' API-server discovery document. Clients of Hermes (fleet managers,
// consoles) read it before they use the run API, and refuse a server that does not list the
// features they need (run_submission, run_status, run_events_sse, run_stop). It is static — what
// this gateway serves — and asks for a bearer key as every /v1 route does, without telling whether
// the key opens an agent (that is /v1/models').
import type { FastifyInstance } from 'fastify';
import { callerFrom } from '../auth.js';

const route = (method: string, path: string) => ({ method, path });

/** What this gateway serves, in Hermes' shape; a feature it lacks is false, never left out. */
export const capabilities = {
  object: 'hermes.api_server.capabilities',
  platform: 'hermes-operator',
  auth: { type: 'bearer', required: true },
  runtime: { mode: 'server_agent', tool_execution: 'server', split_runtime: false },
  features: {
    chat_completions: true,
    chat_completions_streaming: true,
    responses_api: true,
    run_submission: true,
    run_status: true,
    run_events_sse: true,
    run_stop: true,
    run_approval_response: false,
    runs_idempotency: { supported: true, durable: true },
    session_chat: false,
    session_fork: false,
    skills_api: false,
    jobs_admin: false,
    session_continuity_header: 'X-Hermes-Session-Id',
  },
  endpoints: {
    health: route('GET', '/health'),
    capabilities: route('GET', '/v1/capabilities'),
    models: route('GET', '/v1/models'),
    chat_completions: route('POST', '/v1/chat/completions'),
    responses: route('POST', '/v1/responses'),
    runs: route('POST', '/v1/runs'),
    run_status: route('GET', '/v1/runs/{run_id}'),
    run_events: route('GET', '/v1/runs/{run_id}/events'),
    run_stop: route('POST', '/v1/runs/{run_id}/stop'),
    sessions: route('GET', '/v1/sessions'),
  },
} as const;

export function registerCapabilitiesRoute(app: FastifyInstance): void {
  app.get('/v1/capabilities', async (request) => {
    callerFrom(request);
    return capabilities;
  });
}
