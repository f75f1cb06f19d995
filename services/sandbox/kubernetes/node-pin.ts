// Later Pods of a session go to the Node its ReadWriteOnce volume was last used on (recorded on
// the PVC, annotation hermes.dev/node): a Pod elsewhere would wait for the volume to detach and
// attach again, or fail with a multi-attach error. The pin is dropped when that Node is gone,
// cordoned or not Ready — then the Pod goes anywhere, and the Node it lands on is recorded.
import { CoreV1Api, type V1Node } from '@kubernetes/client-node';
import { apiCode } from './failures.js';

/** True when new Pods can run on `node`. */
export function acceptsPods(node: V1Node): boolean {
  if (node.spec?.unschedulable || node.metadata?.deletionTimestamp) return false;
  return node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
}

/**
 * The Node to pin the session's next Pod to: `recorded` while it accepts Pods. When the worker
 * may not read Nodes (RBAC), the recorded Node is kept as is.
 */
export async function pinnedNode(core: CoreV1Api, recorded: string | undefined): Promise<string | undefined> {
  if (!recorded) return undefined;
  try {
    return acceptsPods(await core.readNode({ name: recorded })) ? recorded : undefined;
  } catch (err) {
    if (apiCode(err) === 404) return undefined;
    return recorded;
  }
}

