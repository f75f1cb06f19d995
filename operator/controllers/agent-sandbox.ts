// The Agent's SandboxReady condition: where its commands run, and what weakens that. For the
// kubernetes backend the sandbox namespace is checked (Pod Security "restricted" enforced, the
// sandbox ServiceAccount present without a token); `mode: session` reports the Profile's
// agent-sandbox warm pool (its SandboxPool condition), or that agent-sandbox is missing and a Pod
// per call is used. Informational: a degraded
// sandbox does not make the Agent un-Ready (its commands still run isolated, or answer degraded).
import { CoreV1Api } from '@kubernetes/client-node';
import type { CompiledAgent } from '../../services/core/index.js';
import { sandboxNamespaceProblems } from '../../services/sandbox/index.js';
import type { ConditionInput } from '../runtime/conditions.js';
import type { OperatorContext } from './context.js';
import { AGENT_SANDBOX_MISSING, SANDBOX_POOL_CONDITION } from './session-pool.js';

export const SANDBOX_CONDITION = 'SandboxReady';

const cond = (status: ConditionInput['status'], reason: string, message: string): ConditionInput => ({ type: SANDBOX_CONDITION, status, reason, message });

/** Mode session: what the Profile's SandboxPool condition says about the Agent's session sandboxes. */
function sessionPart(ctx: OperatorContext, compiled: CompiledAgent, namespace: string): ConditionInput {
  const profile = ctx.caches.profiles.get(compiled.profile.name, compiled.profile.namespace);
  const pool = profile?.status?.conditions?.find((c) => c.type === SANDBOX_POOL_CONDITION);
  if (!pool || pool.status === 'Unknown') return cond('Unknown', 'SessionPoolPending', `Waiting for Profile ${compiled.profile.name} to report its SandboxPool (agent-sandbox warm pool).`);
  if (pool.reason === 'AgentSandboxMissing') return cond('False', 'AgentSandboxMissing', AGENT_SANDBOX_MISSING);
  if (pool.status === 'False' && pool.reason !== 'Warming') return cond('False', 'SessionPoolFailed', `Profile ${compiled.profile.name}: ${pool.message}`);
  return cond('True', 'SessionSandboxes', `Each session keeps one sandbox in namespace ${namespace}, claimed from the Profile's warm pool (${pool.message}); commands run in it by exec.`);
}

export async function sandboxCondition(ctx: OperatorContext, compiled: CompiledAgent): Promise<ConditionInput> {
  const s = compiled.sandbox;
  if (!s) return cond('True', 'NotUsed', 'The Profile enables neither the terminal nor the file toolset: no commands run.');
  const backend = s.backend ?? ctx.sandbox?.backend ?? 'kubernetes';
  if (backend === 'bubblewrap') return cond('True', 'Bubblewrap', 'Commands run in bubblewrap on the worker\'s machine, one namespaced process per call.');
  const namespace = s.namespace ?? compiled.agent.namespace;
  const problems = await sandboxNamespaceProblems(ctx.kc.makeApiClient(CoreV1Api), namespace, ctx.sandbox?.serviceAccountName ?? 'hermes-sandbox');
  const session = s.mode === 'session' ? sessionPart(ctx, compiled, namespace) : undefined;
  if (problems.length) return cond('False', 'SandboxDegraded', `${problems.join(' ')}${session && session.status !== 'True' ? ` ${session.message}` : ''}`);
  if (session) return session;
  return cond('True', 'PodPerCall', `Commands run in one Pod per call in namespace ${namespace}.`);
}
