// A Profile's spec.sandbox.namespace may name another namespace than its own only when that
// namespace takes sandboxes from other namespaces: a cluster admin labels it
// hermes.dev/sandbox-namespace=true (the chart's sandbox namespace carries it). Without this check
// anyone who may write a Profile in one namespace had the operator (mode session: template, warm
// pool, ServiceAccount) and the workers (a Pod per call) run Pods of an image they chose in any
// other namespace of the cluster.
import { CoreV1Api } from '@kubernetes/client-node';
import { kubeErrorLine } from '../../services/sandbox/index.js';
import type { OperatorContext } from './context.js';

export const SANDBOX_NAMESPACE_LABEL = 'hermes.dev/sandbox-namespace';
/** Namespaces are not watched: a refused Profile (and its Agents) look again this often, so a label added later is seen. */
export const SANDBOX_NAMESPACE_RECHECK_MS = 15_000;
/** Condition reason of a Profile (and its Agents) whose sandbox namespace does not take its sandboxes. */
export const SANDBOX_NAMESPACE_NOT_ALLOWED = 'SandboxNamespaceNotAllowed';

/** Why a Profile of `profileNamespace` may not run sandboxes in `target`, or undefined when it may. */
export async function sandboxNamespaceRefusal(ctx: OperatorContext, profileNamespace: string, target: string | undefined): Promise<string | undefined> {
  if (target === undefined || target === profileNamespace) return undefined;
  const optIn = `a cluster admin opts it in with kubectl label namespace ${target} ${SANDBOX_NAMESPACE_LABEL}=true (the chart's sandbox namespace has it), or leave spec.sandbox.namespace unset to run them in ${profileNamespace}`;
  try {
    const ns = await ctx.kc.makeApiClient(CoreV1Api).readNamespace({ name: target });
    if (ns.metadata?.labels?.[SANDBOX_NAMESPACE_LABEL] === 'true') return undefined;
    return `spec.sandbox.namespace ${target} is another namespace, which does not take sandboxes of other namespaces (no label ${SANDBOX_NAMESPACE_LABEL}=true): ${optIn}.`;
  } catch (err) {
    if ((err as { code?: unknown }).code === 404) return `spec.sandbox.namespace ${target} does not exist; once created, ${optIn}.`;
    // Not known to take them: refused until it can be read (looked at again in 15 s).
    return `spec.sandbox.namespace ${target} could not be read (${kubeErrorLine(err)}); its sandboxes run there only once it is known to take them: ${optIn}.`;
  }
}
