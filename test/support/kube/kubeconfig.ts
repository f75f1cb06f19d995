import { readFileSync, writeFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';

/** How a kubeconfig user authenticates. */
export type KubeCredentials =
  | { kind: 'cert'; certFile: string; keyFile: string }
  | { kind: 'token'; token: string };

const b64 = (file: string): string => readFileSync(file).toString('base64');

/** Writes a self-contained kubeconfig (certificates inlined) for `server` and returns its path. */
export function writeKubeconfig(path: string, server: string, caFile: string, user: string, creds: KubeCredentials): string {
  const userEntry = creds.kind === 'cert'
    ? { 'client-certificate-data': b64(creds.certFile), 'client-key-data': b64(creds.keyFile) }
    : { token: creds.token };
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'test', cluster: { server, 'certificate-authority-data': b64(caFile) } }],
    users: [{ name: user, user: userEntry }],
    contexts: [{ name: 'test', context: { cluster: 'test', user } }],
    'current-context': 'test',
  };
  writeFileSync(path, stringify(config), { mode: 0o600 });
  return path;
}

/** Loads a kubeconfig file into a client-node KubeConfig. */
export function loadKubeConfig(path: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  return kc;
}

/** `kc` with every cluster reached on 127.0.0.1:`port` instead (a TCP proxy in front of the apiserver). */
export function kubeConfigVia(kc: KubeConfig, port: number): KubeConfig {
  const via = new KubeConfig();
  via.loadFromOptions({
    clusters: kc.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${port}` })),
    users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext,
  });
  return via;
}
