// Server-side apply of the hermes.dev CRDs for `hermes dev --k8s`, as raw JSON. client-node's
// KubernetesObjectApi serializes a CustomResourceDefinition through its typed model, whose
// property names are not the wire names for `enum`, `default`, `x-kubernetes-validations`,
// `x-kubernetes-list-type`…: those were silently dropped, so the dev cluster accepted manifests
// the real CRDs refuse (busyPolicy: yolo) and applied no defaults. The body here is sent as is.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';

/** PATCHes `crd` with `application/apply-patch+yaml` (JSON is YAML), forcing ownership for `fieldManager`. */
export async function applyCrd(kc: KubeConfig, crd: KubernetesObject, fieldManager: string): Promise<void> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const url = new URL(`${cluster.server.replace(/\/$/, '')}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${encodeURIComponent(crd.metadata?.name ?? '')}`);
  url.searchParams.set('fieldManager', fieldManager);
  url.searchParams.set('force', 'true');
  const opts: RequestOptions = { headers: {} };
  await kc.applyToHTTPSOptions(opts);
  const body = JSON.stringify(crd);
  const request = url.protocol === 'http:' ? httpRequest : httpsRequest;
  await new Promise<void>((resolve, reject) => {
    const req = request(url, { ...opts, method: 'PATCH', headers: { ...opts.headers, 'content-type': 'application/apply-patch+yaml', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { if (text.length < 4_000) text += c; });
      res.on('end', () => (res.statusCode && res.statusCode < 300
        ? resolve()
        : reject(Object.assign(new Error(`applying CustomResourceDefinition ${crd.metadata?.name} answered ${res.statusCode}: ${text.slice(0, 500)}`), { code: res.statusCode, body: text }))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Whether a request failed because a CRD just installed or changed is not served yet: discovery
 * does not know the kind, the resource is 404, or its storage is (re)initializing (429, 503).
 */
export function notServedYet(err: unknown): boolean {
  const code = (err as { code?: number }).code;
  return code === 404 || code === 429 || code === 503 || /Unrecognized API version and kind/.test((err as Error).message ?? '');
}

/** Runs `fn`, again every 250 ms while it fails with {@link notServedYet}, for at most `ms`; `wrap` turns the last error into the one thrown. */
export async function whenServed<T>(fn: () => Promise<T>, wrap: (err: unknown) => Error = (err) => err as Error, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!notServedYet(err) || Date.now() > deadline) throw wrap(err);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
