// The Agent's SandboxReady condition: where its commands run, and what weakens that. For the
// kubernetes backend the sandbox namespace is checked (Pod Security "restricted" enforced, the
// sandbox ServiceAccount present without a token); `mode: session` says that per-call Pods are
// used, since this version does not run agent-sandbox warm pools. Informational: a degraded
// sandbox does not make the Agent un-Ready (its commands still run isolated, or answer degraded).
import { CoreV1Api } from '@kubernetes/client-node';
import type { CompiledAgent } from '../../services/core/index.js';
import { sandboxNamespaceProblems } from '../../services/sandbox/index.js';
import type { ConditionInput } from '../runtime/conditions.js';
import type { OperatorContext } from './context.js';

export const SANDBOX_CONDITION = 'SandboxReady';

const cond = (status: ConditionInput['status'], reason: string, message: string): ConditionInput => ({ type: SANDBOX_CONDITION, status, reason, message });

export async function sandboxCondition(ctx: OperatorContext, compiled: CompiledAgent): Promise<ConditionInput> {
  const s = compiled.sandbox;
  if (!s) return cond('True', 'NotUsed', 'The Profile enables neither the terminal nor the file toolset: no commands run.');
  const backend = s.backend ?? ctx.sandbox?.backend ?? 'kubernetes';
  const session = s.mode === 'session' ? ' spec.sandbox.mode session needs agent-sandbox warm pools, which this version does not run yet: every command gets its own Pod.' : '';
  if (backend === 'bubblewrap') return cond('True', 'Bubblewrap', `Commands run in bubblewrap on the worker's machine, one namespaced process per call.${session}`);
  const namespace = s.namespace ?? compiled.agent.namespace;
  const problems = await sandboxNamespaceProblems(ctx.kc.makeApiClient(CoreV1Api), namespace, ctx.sandbox?.serviceAccountName ?? 'hermes-sandbox');
  if (problems.length) return cond('False', 'SandboxDegraded', `${problems.join(' ')}${session}`);
  if (session) return cond('False', 'SessionModeUnavailable', session.trim());
  return cond('True', 'PodPerCall', `Commands run in one Pod per call in namespace ${namespace}.`);
}
