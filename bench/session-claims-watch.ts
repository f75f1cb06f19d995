// An observer beside the session backend: one watch on the namespace's SandboxClaims records when
// each claim appeared and when agent-sandbox first reported it Ready with a Sandbox bound. The
// difference is agent-sandbox's own time (adopting a warm Sandbox, or creating Sandbox → Pod →
// Ready); the backend's wait for its claim (hermes_sandbox_claim_seconds) adds its own requests
// and its poll interval on top. Timestamps are this process's clock, taken as events arrive.
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { AGENT_SANDBOX_VERSION, agentSandboxPlural, EXTENSIONS_GROUP } from '../services/sandbox/index.js';

interface ClaimObj {
  metadata?: { name?: string };
  status?: { conditions?: { type?: string; status?: string }[]; sandbox?: { name?: string } };
}

export interface ClaimsWatch {
  /** Milliseconds from the claim's ADDED event to its first Ready event; undefined when not seen (yet). */
  readyAfterMs(claim: string): number | undefined;
  stop(): void;
}

const bound = (c: ClaimObj): boolean =>
  !!c.status?.sandbox?.name && c.status.conditions?.some((x) => x.type === 'Ready' && x.status === 'True') === true;

export async function watchClaims(kc: KubeConfig, namespace: string): Promise<ClaimsWatch> {
  const added = new Map<string, number>();
  const ready = new Map<string, number>();
  let broken: unknown;
  const path = `/apis/${EXTENSIONS_GROUP}/${AGENT_SANDBOX_VERSION}/namespaces/${namespace}/${agentSandboxPlural.claims}`;
  const ctl = await new Watch(kc).watch(path, {}, (type: string, claim: ClaimObj) => {
    const name = claim.metadata?.name ?? '';
    const now = performance.now();
    if (type === 'ADDED' && !added.has(name)) added.set(name, now);
    if (bound(claim) && !ready.has(name)) ready.set(name, now);
  }, (err: unknown) => { broken ??= err; });
  return {
    readyAfterMs(claim) {
      if (broken) throw new Error(`the SandboxClaim watch broke: ${String(broken)}`);
      const a = added.get(claim);
      const r = ready.get(claim);
      return a === undefined || r === undefined ? undefined : r - a;
    },
    stop: () => ctl.abort(),
  };
}
