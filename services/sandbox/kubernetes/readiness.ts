// Why sandboxing in a namespace is weaker or broken, for the Agent's status (the operator reports
// these as a condition): the namespace does not enforce Pod Security `restricted` (a Pod spec
// change elsewhere could then run privileged sandboxes unnoticed), or the sandbox ServiceAccount
// is missing (the backend creates it on first use; if the worker may not, every call is degraded).
import { CoreV1Api } from '@kubernetes/client-node';
import { apiCode, apiMessage } from './failures.js';

export const POD_SECURITY_ENFORCE = 'pod-security.kubernetes.io/enforce';

/** Problems with the sandbox namespace, each a sentence saying what to do; empty when none. */
export async function sandboxNamespaceProblems(core: CoreV1Api, namespace: string, serviceAccountName = 'hermes-sandbox'): Promise<string[]> {
  const problems: string[] = [];
  try {
    const ns = await core.readNamespace({ name: namespace });
    const level = ns.metadata?.labels?.[POD_SECURITY_ENFORCE];
    if (level !== 'restricted') {
      problems.push(`Namespace ${namespace} does not enforce Pod Security "restricted" (${POD_SECURITY_ENFORCE}=${level ?? 'unset'}); label it: kubectl label namespace ${namespace} ${POD_SECURITY_ENFORCE}=restricted.`);
    }
  } catch (err) {
    problems.push(`Namespace ${namespace} could not be read (${apiCode(err) ?? 'no answer'}: ${apiMessage(err)}).`);
  }
  try {
    const sa = await core.readNamespacedServiceAccount({ name: serviceAccountName, namespace });
    if (sa.automountServiceAccountToken !== false) {
      problems.push(`ServiceAccount ${namespace}/${serviceAccountName} does not set automountServiceAccountToken: false (sandbox Pods set it themselves; set it on the ServiceAccount too).`);
    }
  } catch (err) {
    problems.push(apiCode(err) === 404
      ? `ServiceAccount ${namespace}/${serviceAccountName} is missing; the worker creates it on the first sandbox call if its RBAC allows (serviceaccounts: create), else create it with automountServiceAccountToken: false.`
      : `ServiceAccount ${namespace}/${serviceAccountName} could not be read (${apiCode(err) ?? 'no answer'}: ${apiMessage(err)}).`);
  }
  return problems;
}
