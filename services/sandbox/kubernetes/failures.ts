// What went wrong with the cluster, as a `degraded` reason with a retry hint. A call is degraded
// when the backend could not run (or could not finish watching) the command; the hint tells the
// model whether retrying can help, and — when the command may have started — to look before
// running it again (the backend never re-runs a command on its own).

/**
 * The HTTP status of a client-node ApiException, or of a WebSocket upgrade the server answered
 * with a status instead (`pods/exec`: see upgradeRefusal); undefined for network errors and others.
 */
export function apiCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : upgradeRefusal(err);
}

/**
 * The status the server answered a WebSocket upgrade with (client-node's `Exec` rejects with the
 * `ws` ErrorEvent "Unexpected server response: 409", which is not an Error and carries no code):
 * the exec was refused before it started, so nothing ran. Undefined for any other failure.
 */
export function upgradeRefusal(err: unknown): number | undefined {
  const m = /^Unexpected server response: (\d{3})\b/.exec(eventMessage(err) ?? '');
  return m ? Number(m[1]) : undefined;
}

/** The message of an Error, or of an ErrorEvent-like object (`message`, else `error.message`). */
function eventMessage(err: unknown): string | undefined {
  if (err instanceof Error) return err.message;
  const e = err as { message?: unknown; error?: { message?: unknown } } | null;
  if (typeof e?.message === 'string' && e.message) return e.message;
  return typeof e?.error?.message === 'string' ? e.error.message : undefined;
}

/**
 * A 404 that names the resource type, not an object: the apiserver does not serve that API
 * (its CRD is not installed). A missing object answers 404 with a NotFound Status instead.
 */
export function apiNotServed(err: unknown): boolean {
  if (apiCode(err) !== 404) return false;
  // client-node's message carries the body, parsed or not (JSON.stringify'd).
  return /could not find the requested resource|404 page not found/i.test(`${apiMessage(err)} ${(err as Error).message ?? ''}`);
}

/** The body of a failed call's answer, parsed when it is JSON (client-node keeps it as text for an unknown status). */
function apiBody(err: unknown): unknown {
  const body = (err as { body?: unknown } | null)?.body;
  if (typeof body !== 'string') return body;
  try { return JSON.parse(body); } catch { return body; }
}

/** The apiserver's Status message of a failed call, else the error's own message. */
export function apiMessage(err: unknown): string {
  const parsed = apiBody(err);
  const message = (parsed as { message?: unknown } | null)?.message;
  if (typeof message === 'string') return message;
  if (typeof parsed === 'string' && parsed) return parsed.slice(0, 500);
  const own = eventMessage(err);
  return own !== undefined ? own.split('\n')[0] ?? own : String(err);
}

/**
 * A failed cluster call in one line, for logs: `the kube-apiserver answered 429 (TooManyRequests):
 * Too many requests, please try again later.` for an ApiException (whose own message is the raw
 * body and every response header, over several lines), else the error's first line.
 */
export function kubeErrorLine(err: unknown): string {
  const code = apiCode(err);
  const message = apiMessage(err).replace(/\s+/g, ' ').trim().slice(0, 500);
  if (code === undefined) return message;
  const reason = (apiBody(err) as { reason?: unknown } | null | undefined)?.reason;
  return `the kube-apiserver answered ${code}${typeof reason === 'string' && reason ? ` (${reason})` : ''}: ${message}`;
}

const MAY_HAVE_RUN = ' The command may have started: check /workspace before running it again.';

/** A failure the call reports as `degraded`. */
export class SandboxFailure extends Error {
  override name = 'SandboxFailure';
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** Why a call to the apiserver failed, as a degraded reason (`doing`: "creating the sandbox Pod"). */
export function apiFailure(err: unknown, doing: string, mayHaveRun = false): SandboxFailure {
  if (err instanceof SandboxFailure) return err;
  const code = apiCode(err);
  const message = apiMessage(err);
  const tail = mayHaveRun ? MAY_HAVE_RUN : '';
  if (code === 403 && /quota/i.test(message)) {
    return new SandboxFailure(`ResourceQuota refused ${doing}: ${message}. Retry after other sandboxes of the namespace finish, or ask the cluster admin to raise the quota.${tail}`);
  }
  if (code === 409 && upgradeRefusal(err) !== undefined) {
    return new SandboxFailure(`The sandbox's container refused ${doing} (409: it is still starting, or has exited): ${message}. The command did not run; retry in a moment.`);
  }
  if (code === 403) return new SandboxFailure(`The cluster refused ${doing} (403): ${message}. Retrying will not help until the worker's RBAC or the namespace's admission policy allows it.${tail}`);
  if (code === 422 || code === 400) return new SandboxFailure(`The cluster rejected ${doing} (${code}): ${message}. Fix the Profile's spec.sandbox settings; retrying will not help.${tail}`);
  if (code === 404) return new SandboxFailure(`Not found while ${doing}: ${message}. The namespace may not exist; retrying will not help until it does.${tail}`);
  if (code !== undefined) return new SandboxFailure(`The Kubernetes API failed ${doing} (${code}): ${message}. Retry in a moment.${tail}`);
  return new SandboxFailure(`The Kubernetes API is unreachable (${message}) while ${doing}. Retry in a moment.${tail}`);
}

/** Container waiting reasons that will not fix themselves soon: the call is degraded at once. */
const HOPELESS_WAITING = new Set([
  'ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull', 'CreateContainerConfigError',
  'CreateContainerError', 'RunContainerError', 'PreCreateHookError', 'PreStartHookError',
]);

export const isHopelessWaiting = (reason: string | undefined): boolean => reason !== undefined && HOPELESS_WAITING.has(reason);

export function waitingFailure(image: string, reason: string, message: string | undefined): SandboxFailure {
  const what = /Image/i.test(reason)
    ? `The sandbox image ${image} cannot be pulled (${reason}${message ? `: ${message}` : ''}). Fix spec.sandbox.image or the registry; retrying will not help until then.`
    : `The sandbox container could not be created (${reason}${message ? `: ${message}` : ''}). Retrying will not help until the cause is fixed.`;
  return new SandboxFailure(what);
}

/**
 * `p`, or a rejection after `ms` (a half-open connection to the apiserver must not hang a call;
 * client-node sets no timeout of its own). The request itself is left to end on its own.
 */
export function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${Math.round(ms / 1000)}s to ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
