// Bearer-key authentication for the API platform. Agents store only SHA-256 hashes of their keys
// (compiled.api.keySha256); a request carries the key, we hash it and look the hash up in the
// agent cache's key index (key hash → agents that accept it) BEFORE any lookup by name, so
// unauthenticated traffic never makes the gateway load or remember an agent.
//   no/malformed key → 401; a key no agent accepts → 401;
//   a key that is not one of this agent's (whether or not the agent exists, or has the API
//   platform enabled) → 404, the same status and text in every case: the answer does not tell
//   a caller which agents exist.
// Comparing hashes of keys needs no constant-time compare: the hash leaks nothing usable about the key.
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

/**
 * Whom a key speaks for on an agent (spec.api.keys): one named user, a trusted backend that
 * names users, or (neither set: the safe default) an implicit user of its own.
 */
export type KeyBinding = { kind: 'user'; user: string } | { kind: 'trusted-backend' } | { kind: 'own' };

export function keyBinding(agent: AgentRecord, caller: Caller): KeyBinding {
  const meta = agent.compiled.api.keys?.find((k) => k.sha256 === caller.keyHash);
  if (meta?.trustedBackend) return { kind: 'trusted-backend' };
  if (meta?.user !== undefined) return { kind: 'user', user: meta.user };
  return { kind: 'own' };
}

export const acceptsKey = (agent: AgentRecord, caller: Caller) =>
  agent.compiled.api.enabled && agent.compiled.api.keySha256.includes(caller.keyHash);

export const agentName = (agent: AgentRecord) => `${agent.compiled.agent.namespace}/${agent.compiled.agent.name}`;

export const unknownKey = () => new HermesError('HERMES_UNAUTHENTICATED', 'No agent accepts this API key.');

const noSuchAgent = (namespace: string, name: string) =>
  new HermesError('HERMES_AGENT_NOT_FOUND', `No agent "${namespace}/${name}" accepts this key: check the namespace and name of the Agent resource, and that the key is one of its spec.api keys.`);

/** The agents (`namespace/name`) that accept `caller`'s key; throws 401 when none does. */
export async function usableAgents(agents: AgentCache, caller: Caller): Promise<ReadonlySet<string>> {
  const usable = await agents.agentsForKey(caller.keyHash);
  if (usable.size === 0) throw unknownKey();
  return usable;
}

/** The agent `namespace/name` when `caller` may use it; throws the matching HermesError otherwise. */
export async function authorizeAgent(agents: AgentCache, caller: Caller, namespace: string, name: string): Promise<AgentRecord> {
  const usable = await usableAgents(agents, caller);
  if (!usable.has(`${namespace}/${name}`)) throw noSuchAgent(namespace, name);
  const agent = await agents.get(namespace, name);
  // The index and the revision are read separately: check the key against the revision itself.
  if (!agent || !acceptsKey(agent, caller)) throw noSuchAgent(namespace, name);
  return agent;
}
