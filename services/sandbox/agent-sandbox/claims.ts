// A session's sandbox, found or made through agent-sandbox: one SandboxClaim per (Agent, session),
// named deterministically so every worker finds the same one. A new claim adopts a warm Sandbox
// of the Profile's SandboxWarmPool (its fresh workspace volume becomes the session's), or
// agent-sandbox cold-starts one from the template when the pool is empty. A Sandbox the operator
// suspended after idling keeps its volume: resuming it (operatingMode Running) brings up a new
// Pod on the same workspace. Every use stamps the claim's last-used-at, which the operator's
// idle and TTL sweep reads, and leases the Sandbox (inUseUntilAnnotation) before its command
// runs: that write first tests the Sandbox's operatingMode as it was found Ready, so a suspend
// written in between makes it fail, and the claim is looked at again (and resumed). Waiting for
// a claim to be bound and Ready follows the claim's watch (claim-watch.ts), not a fixed poll: a
// new session starts as soon as agent-sandbox has adopted or started its sandbox.
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type KubeConfig } from '@kubernetes/client-node';
import {
  agentKey, componentLabel, idleSecondsAnnotation, inUseUntilAnnotation, lastUsedAtAnnotation, sessionClaimComponent, sessionKey, ttlSecondsAnnotation,
} from '../../core/index.js';
import type { SandboxSession } from '../types.js';
import { apiCode, apiFailure, apiNotServed, bounded, SandboxFailure } from '../kubernetes/failures.js';
import { labelValue } from '../kubernetes/names.js';
import { ClaimWatch } from './claim-watch.js';
import {
  AGENT_SANDBOX_VERSION, CLAIM_SANDBOX_ANNOTATION, EXTENSIONS_GROUP, LAUNCH_TYPE_LABEL, plural, POD_NAME_ANNOTATION, SANDBOX_GROUP, sessionClaimName,
} from './resources.js';

/** How the session got its sandbox: a warm one claimed now, a cold start, a resume after idling, or the one it had. */
export type Launch = 'warm' | 'cold' | 'resumed' | 'running';

export interface SessionSandboxRef {
  namespace: string;
  claim: string;
  sandbox: string;
  pod: string;
  launch: Launch;
  /** Milliseconds from the request until the sandbox was Ready. */
  waitedMs: number;
}

/** agent-sandbox's CRDs are not installed: the caller falls back to a Pod per call. */
export class AgentSandboxMissing extends Error {}

export interface ClaimSettings {
  apiTimeoutMs: number;
  /** Longest wait for a claimed, cold-started or resumed sandbox to be Ready. */
  startTimeoutMs: number;
  /** Longest wait between two looks at the claim when its watch reports nothing (a broken or refused watch). */
  pollMs: number;
  /** Test seam: awaited between finding the Sandbox Ready and leasing it (a test races a suspend there). */
  beforeLease?: (sandbox: string) => Promise<void>;
}

export interface ClaimRequest {
  session: SandboxSession;
  namespace: string;
  /** The Profile's SandboxWarmPool. */
  pool: string;
  idleSeconds: number;
  ttlSeconds: number;
  /** How long the lease on the Sandbox lasts unless renewed (the command's heartbeat renews it). */
  leaseMs: number;
  signal: AbortSignal;
}

/** What a claim is stamped with on every use. */
type Stamped = Pick<ClaimRequest, 'session' | 'namespace' | 'idleSeconds' | 'ttlSeconds'>;

interface Condition { type?: string; status?: string; reason?: string; message?: string }
interface Obj {
  metadata?: { name?: string; uid?: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: string };
  spec?: { operatingMode?: string; [field: string]: unknown };
  status?: { conditions?: Condition[]; sandbox?: { name?: string } };
}

/** What waiting for a claim has seen so far. */
interface Progress {
  created: boolean;
  resumed: boolean;
  why: string;
  /** Lease writes refused because the Sandbox changed since it was read, and whether to look again at once. */
  conflicts: number;
  again: boolean;
}

function launchOf(p: Progress, sandbox: Obj): Launch {
  if (p.resumed) return 'resumed';
  if (!p.created) return 'running';
  return sandbox.metadata?.labels?.[LAUNCH_TYPE_LABEL] === 'warm' ? 'warm' : 'cold';
}

const sandboxNameOf = (claim: Obj): string | undefined => claim.status?.sandbox?.name || claim.metadata?.annotations?.[CLAIM_SANDBOX_ANNOTATION];

function unboundWhy(claim: Obj): string | undefined {
  const c = condition(claim, 'Ready');
  return c?.message ? `the claim is not bound (${c.reason ?? ''}: ${c.message})` : undefined;
}

/** Why the Sandbox cannot take a command yet; undefined when it is Ready (and not being deleted: the lease does not test that). */
function notReadyWhy(name: string, sandbox: Obj): string | undefined {
  if (sandbox.metadata?.deletionTimestamp) return `Sandbox ${name} is being deleted`;
  const ready = condition(sandbox, 'Ready');
  if (!ready) return `Sandbox ${name} reports no Ready condition yet`;
  if (ready.status === 'True') return undefined;
  return `Sandbox ${name} is not Ready (${ready.reason ?? 'no reason'}${ready.message ? `: ${ready.message}` : ''})`;
}

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
/** A JSON pointer token (RFC 6901): `~` and `/` escaped. */
const pointer = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');
const condition = (o: Obj | undefined, type: string): Condition | undefined => o?.status?.conditions?.find((c) => c.type === type);


export class Claims {
  private readonly api: CustomObjectsApi;

  constructor(private readonly kc: KubeConfig, private readonly s: ClaimSettings) {
    this.api = kc.makeApiClient(CustomObjectsApi);
  }

  private watch(namespace: string, name: string, resourceVersion: string | undefined): ClaimWatch<Obj> {
    const w = new ClaimWatch<Obj>(this.kc, namespace, name);
    w.start(resourceVersion);
    return w;
  }

  private limit<T>(p: Promise<T>, what: string): Promise<T> {
    return bounded(p, this.s.apiTimeoutMs, what);
  }

  private claimBody(r: ClaimRequest, name: string, now: Date): Record<string, unknown> {
    return {
      apiVersion: `${EXTENSIONS_GROUP}/${AGENT_SANDBOX_VERSION}`,
      kind: 'SandboxClaim',
      metadata: {
        name,
        labels: {
          [componentLabel]: sessionClaimComponent, [agentKey]: labelValue(r.session.agent), [sessionKey]: labelValue(r.session.sessionId),
          'app.kubernetes.io/managed-by': 'hermes',
        },
        annotations: this.stamps(r, now),
      },
      spec: { warmPoolRef: { name: r.pool } },
    };
  }

  private stamps(r: Stamped, now: Date): Record<string, string> {
    return {
      [agentKey]: r.session.agent, [sessionKey]: r.session.sessionId, [lastUsedAtAnnotation]: now.toISOString(),
      [idleSecondsAnnotation]: String(r.idleSeconds), [ttlSecondsAnnotation]: String(r.ttlSeconds),
    };
  }

  /** Stamps last-used-at (and the Profile's current idle and TTL) on the session's claim; undefined when it has none. */
  async touch(r: Stamped): Promise<Obj | undefined> {
    const name = sessionClaimName(r.session);
    try {
      return await this.limit(this.api.patchNamespacedCustomObject({
        group: EXTENSIONS_GROUP, version: AGENT_SANDBOX_VERSION, namespace: r.namespace, plural: plural.claims, name,
        body: { metadata: { annotations: this.stamps(r, new Date()) } },
      }, merge), `stamping SandboxClaim ${r.namespace}/${name}`) as Obj;
    } catch (err) {
      if (apiNotServed(err)) throw new AgentSandboxMissing('agent-sandbox is not installed');
      if (apiCode(err) === 404) return undefined;
      throw apiFailure(err, `stamping SandboxClaim ${r.namespace}/${name}`);
    }
  }

  /** The session's claim (created when missing), stamped as used now; `created` says which. */
  private async claim(r: ClaimRequest): Promise<{ claim: Obj; created: boolean }> {
    const existing = await this.touch(r);
    if (existing) return { claim: existing, created: false };
    const name = sessionClaimName(r.session);
    try {
      const claim = await this.limit(this.api.createNamespacedCustomObject({
        group: EXTENSIONS_GROUP, version: AGENT_SANDBOX_VERSION, namespace: r.namespace, plural: plural.claims, body: this.claimBody(r, name, new Date()),
      }), `creating SandboxClaim ${r.namespace}/${name}`) as Obj;
      return { claim, created: true };
    } catch (err) {
      if (apiNotServed(err)) throw new AgentSandboxMissing('agent-sandbox is not installed');
      if (apiCode(err) === 409) return { claim: (await this.touch(r)) ?? {}, created: false };
      throw apiFailure(err, `creating SandboxClaim ${r.namespace}/${name}`);
    }
  }

  private async read(r: ClaimRequest, plural_: string, group: string, name: string): Promise<Obj | undefined> {
    try {
      return await this.limit(this.api.getNamespacedCustomObject({ group, version: AGENT_SANDBOX_VERSION, namespace: r.namespace, plural: plural_, name }), `reading ${plural_} ${r.namespace}/${name}`) as Obj;
    } catch (err) {
      if (apiCode(err) === 404) return undefined;
      throw apiFailure(err, `reading ${plural_} ${r.namespace}/${name}`);
    }
  }

  /**
   * The session's Ready sandbox: claimed, cold-started or resumed as needed. Throws SandboxFailure
   * (degraded) or AgentSandboxMissing. Between looks it waits for the claim's next change (a
   * watch, claim-watch.ts) or `pollMs`, whichever comes first.
   */
  async acquire(r: ClaimRequest): Promise<SessionSandboxRef> {
    const t0 = Date.now();
    const { claim: first, created } = await this.claim(r);
    const name = sessionClaimName(r.session);
    const progress: Progress = { created, resumed: false, why: 'the claim has no sandbox yet', conflicts: 0, again: false };
    let claim: Obj | undefined = first;
    // A new claim is watched from its creation on, beside the first look; an existing one (its
    // sandbox mostly running) only once a look finds it not Ready.
    let watch = created ? this.watch(r.namespace, name, first.metadata?.resourceVersion) : undefined;
    try {
      while (!r.signal.aborted) {
        if (!claim) throw new SandboxFailure(`The session's sandbox claim ${r.namespace}/${name} vanished while waiting for it. The command did not run; retry.`);
        const ref = await this.look(r, name, claim, progress);
        if (ref) return { ...ref, waitedMs: Date.now() - t0 };
        const left = this.s.startTimeoutMs - (Date.now() - t0);
        if (left < 0) {
          throw new SandboxFailure(`The session's sandbox was not ready within ${Math.round(this.s.startTimeoutMs / 1000)}s: ${progress.why}. The command did not run; retry later, or check the Profile's SandboxWarmPool and the agent-sandbox controller.`);
        }
        // From the version looked at: whatever changed since wakes the next wait at once.
        watch ??= this.watch(r.namespace, name, claim.metadata?.resourceVersion);
        if (progress.again) {
          // The claim is as it was: only its Sandbox changed under the lease. Look at that again at once.
          progress.again = false;
          continue;
        }
        claim = await watch.next(Math.min(this.s.pollMs, left + 1), r.signal) ?? await this.read(r, plural.claims, EXTENSIONS_GROUP, name);
      }
    } finally {
      watch?.close();
    }
    throw new SandboxFailure('Stopped before the session sandbox was ready.');
  }

  /**
   * Leases the Sandbox as it was read: a JSON patch that first tests its uid and its
   * operatingMode, so a suspend written since fails it (422), and a Sandbox gone fails it (404):
   * false then. Unlike a resourceVersion, the test lets agent-sandbox's own metadata and status
   * writes pass — it makes several to a warm Sandbox right after binding it.
   */
  private async lease(r: ClaimRequest, sandbox: Obj, name: string): Promise<boolean> {
    await this.s.beforeLease?.(name);
    const until = new Date(Date.now() + r.leaseMs).toISOString();
    const annotate = sandbox.metadata?.annotations
      ? { op: 'add', path: `/metadata/annotations/${pointer(inUseUntilAnnotation)}`, value: until }
      : { op: 'add', path: '/metadata/annotations', value: { [inUseUntilAnnotation]: until } };
    try {
      await this.limit(this.api.patchNamespacedCustomObject({
        group: SANDBOX_GROUP, version: AGENT_SANDBOX_VERSION, namespace: r.namespace, plural: plural.sandboxes, name,
        body: [
          { op: 'test', path: '/metadata/uid', value: sandbox.metadata?.uid },
          // agent-sandbox's CRD defaults it (Running), so it is always there to test.
          { op: 'test', path: '/spec/operatingMode', value: sandbox.spec?.operatingMode ?? 'Running' },
          annotate,
        ],
      }, jsonPatch), `leasing Sandbox ${r.namespace}/${name}`);
      return true;
    } catch (err) {
      if (apiCode(err) === 422 || apiCode(err) === 409 || apiCode(err) === 404) return false;
      throw apiFailure(err, `leasing Sandbox ${r.namespace}/${name}`);
    }
  }

  /** Extends the lease of a Sandbox whose command still runs (it cannot have been suspended under a live lease). */
  async renew(namespace: string, sandbox: string, leaseMs: number): Promise<void> {
    await this.limit(this.api.patchNamespacedCustomObject({
      group: SANDBOX_GROUP, version: AGENT_SANDBOX_VERSION, namespace, plural: plural.sandboxes, name: sandbox,
      body: { metadata: { annotations: { [inUseUntilAnnotation]: new Date(Date.now() + leaseMs).toISOString() } } },
    }, merge), `renewing the lease on Sandbox ${namespace}/${sandbox}`);
  }

  private async resume(r: ClaimRequest, sandbox: string): Promise<void> {
    await this.limit(this.api.patchNamespacedCustomObject({
      group: SANDBOX_GROUP, version: AGENT_SANDBOX_VERSION, namespace: r.namespace, plural: plural.sandboxes, name: sandbox,
      body: { spec: { operatingMode: 'Running' } },
    }, merge), `resuming Sandbox ${r.namespace}/${sandbox}`);
  }

  /** One look at the claim and its Sandbox: the ref once Ready; resumes a suspended Sandbox on the way. */
  private async look(r: ClaimRequest, name: string, claim: Obj, progress: Progress): Promise<Omit<SessionSandboxRef, 'waitedMs'> | undefined> {
    if (claim.metadata?.deletionTimestamp) {
      throw new SandboxFailure(`The session's sandbox claim ${r.namespace}/${name} is being deleted (its workspace expired). Retry in a moment: a fresh sandbox will be claimed.`);
    }
    const sandboxName = sandboxNameOf(claim);
    if (!sandboxName) {
      progress.why = unboundWhy(claim) ?? progress.why;
      return undefined;
    }
    const sandbox = await this.read(r, plural.sandboxes, SANDBOX_GROUP, sandboxName);
    if (!sandbox) return undefined;
    if (sandbox.spec?.operatingMode === 'Suspended') {
      await this.resume(r, sandboxName);
      progress.resumed = true;
      return undefined;
    }
    const notReady = notReadyWhy(sandboxName, sandbox);
    if (notReady) {
      progress.why = notReady;
      return undefined;
    }
    if (!(await this.lease(r, sandbox, sandboxName))) {
      progress.why = `Sandbox ${sandboxName} changed while it was being leased (suspended by the idle sweep?)`;
      // A suspend (or a spec write) alone may leave the claim as it was: look again without
      // waiting for it, a few times in a row.
      progress.conflicts++;
      progress.again = progress.conflicts <= 3;
      return undefined;
    }
    return {
      namespace: r.namespace, claim: name, sandbox: sandboxName,
      pod: sandbox.metadata?.annotations?.[POD_NAME_ANNOTATION] || sandboxName, launch: launchOf(progress, sandbox),
    };
  }
}
