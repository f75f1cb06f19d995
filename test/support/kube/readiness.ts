// Readiness probes of the test kubelet: an `httpGet` readinessProbe of a Pod that keeps the host
// network (its port is the host's) is polled, and the Pod's Ready condition follows it — false
// until the first success, false again after `failureThreshold` failures in a row — so a
// Deployment's rolling update waits for new Pods as it would on a real node. Probes run every
// `periodMs` (not `periodSeconds`: the test plane compresses time). Other probes (exec, tcpSocket,
// a Pod in its own network namespace) are not run: such Pods are Ready once running, as before.
import type { V1Container, V1Probe } from '@kubernetes/client-node';

/** A probe the test kubelet can run: GET `url`. */
export interface HttpProbe {
  url: string;
  failureThreshold: number;
}

/** The readiness probe of `container`, if it is one the test kubelet runs (httpGet, host network). */
export function httpReadinessProbe(container: V1Container, hostNetwork: boolean): HttpProbe | undefined {
  const probe: V1Probe | undefined = container.readinessProbe;
  const get = probe?.httpGet;
  if (!get || !hostNetwork) return undefined;
  const port = typeof get.port === 'number' || /^\d+$/.test(String(get.port))
    ? Number(get.port)
    : container.ports?.find((p) => p.name === get.port)?.containerPort;
  if (port === undefined) return undefined;
  const scheme = (get.scheme ?? 'HTTP').toLowerCase();
  return { url: `${scheme}://${get.host ?? '127.0.0.1'}:${port}${get.path ?? '/'}`, failureThreshold: probe?.failureThreshold ?? 3 };
}

/** One probe: a 2xx or 3xx answer within two seconds. */
export async function probeOnce(probe: HttpProbe): Promise<boolean> {
  try {
    const res = await fetch(probe.url, { redirect: 'manual', signal: AbortSignal.timeout(2_000) });
    await res.body?.cancel();
    return res.status >= 200 && res.status < 400;
  } catch {
    return false;
  }
}

/**
 * Polls `probe` every `periodMs`, calling `onChange(ready)` on each transition (first: to ready).
 * Returns a function that stops polling.
 */
export function watchReadiness(probe: HttpProbe, periodMs: number, onChange: (ready: boolean) => void): () => void {
  let ready = false;
  let failures = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const tick = async (): Promise<void> => {
    const ok = await probeOnce(probe);
    if (stopped) return;
    failures = ok ? 0 : failures + 1;
    if (ok && !ready) { ready = true; onChange(true); }
    if (!ok && ready && failures >= probe.failureThreshold) { ready = false; onChange(false); }
    timer = setTimeout(() => void tick(), periodMs);
  };
  timer = setTimeout(() => void tick(), 0);
  return () => { stopped = true; clearTimeout(timer); };
}
