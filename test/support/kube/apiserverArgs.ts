import { join } from 'node:path';
import type { Pki } from './pki.js';

/** Where a kube-apiserver listens and what it stores in. */
export interface ApiserverLayout {
  dir: string;
  port: number;
  etcdUrl: string;
  pki: Pki;
  extraFlags: string[];
}

/**
 * kube-apiserver flags for a single-node, loopback-only test control plane: RBAC, client-cert
 * admin, service-account tokens, and kubelet connections by InternalIP (the test kubelet's
 * 127.0.0.1) without verifying the kubelet's serving cert (no --kubelet-certificate-authority).
 */
export function apiserverArgs(layout: ApiserverLayout): string[] {
  const { pki } = layout;
  return [
    `--etcd-servers=${layout.etcdUrl}`,
    '--etcd-prefix=/registry',
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    // No Endpoints for the kubernetes Service: the reconciler refuses loopback addresses.
    '--endpoint-reconciler-type=none',
    `--secure-port=${layout.port}`,
    `--cert-dir=${join(layout.dir, 'apiserver-certs')}`,
    `--tls-cert-file=${pki.apiserver.cert}`,
    `--tls-private-key-file=${pki.apiserver.key}`,
    `--client-ca-file=${pki.ca.cert}`,
    '--authorization-mode=RBAC',
    '--anonymous-auth=false',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${pki.serviceAccount.cert}`,
    `--service-account-signing-key-file=${pki.serviceAccount.key}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    '--allow-privileged=true',
    '--kubelet-preferred-address-types=InternalIP',
    '--profiling=false',
    '--v=1',
    ...layout.extraFlags,
  ];
}
