// Bearer-key authentication for the API platform. Agents store only SHA-256 hashes of their keys
// (compiled.api.keySha256); a request carries the key, we hash it and look for the hash.
// Order: no/malformed key → 401; unknown agent → 404; key not accepted by this agent → 403
// (401 on the OpenAI-compatible routes, see errors.ts). Comparing hashes of keys needs no
// constant-time compare: the hash leaks nothing usable about the key.
import type { FastifyRequest } from 'fastify';
import { HermesError, sha256, type AgentCache, type AgentRecord } from '../core/index.js';

export interface Caller {
  /** sha256(key), hex. */
  keyHash: string;
  /** A stable, non-secret name for the key: the first 12 hex of its hash. */
  keyId: string;
}

const bearer = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i;

export function callerFrom(request: FastifyRequest): Caller {
  const header = request.headers.authorization;
  const key = header ? bearer.exec(header)?.[1] : undefined;
  if (!key) throw new HermesError('HERMES_UNAUTHENTICATED', header ? 'The Authorization header is not of the form "Bearer <key>".' : 'No Authorization header was sent.');
  const keyHash = sha256(key);
  return { keyHash, keyId: keyHash.slice(0, 12) };
}

export const acceptsKey = (agent: AgentRecord, caller: Caller) =>
  agent.compiled.api.enabled && agent.compiled.api.keySha256.includes(caller.keyHash);

export const agentName = (agent: AgentRecord) => `${agent.compiled.agent.namespace}/${agent.compiled.agent.name}`;

/** The agent `namespace/name` when `caller` may use it; throws the matching HermesError otherwise. */
export async function authorizeAgent(agents: AgentCache, caller: Caller, namespace: string, name: string): Promise<AgentRecord> {
  const agent = await agents.get(namespace, name);
  if (!agent) throw new HermesError('HERMES_AGENT_NOT_FOUND', `There is no agent "${namespace}/${name}" (check the namespace and name of the Agent resource).`);
  if (!agent.compiled.api.enabled) throw new HermesError('HERMES_FORBIDDEN', `The API platform is disabled for agent "${namespace}/${name}" (spec.api.enabled).`);
  if (!acceptsKey(agent, caller)) throw new HermesError('HERMES_FORBIDDEN', `The key ${caller.keyId}… is not one of agent "${namespace}/${name}"'s API keys.`);
  return agent;
}
