import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A PEM certificate and its PEM private key, on disk. */
export interface CertFiles {
  cert: string;
  key: string;
}

/** Everything the control plane and its clients need to trust and authenticate each other. */
export interface Pki {
  dir: string;
  ca: CertFiles;
  /** kube-apiserver's serving certificate (127.0.0.1, localhost, kubernetes.default...). */
  apiserver: CertFiles;
  /** Client certificate for CN=admin, O=system:masters. */
  admin: CertFiles;
  /** Service-account token signing key pair (`key` private, `cert` is the public key). */
  serviceAccount: CertFiles;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function leafConfig(subject: string, usage: 'serverAuth' | 'clientAuth', sans: string[]): string {
  const dn = subject.split('/').filter(Boolean).join('\n');
  const san = sans.length > 0 ? `subjectAltName = ${sans.join(', ')}\n` : '';
  return `[req]\nprompt = no\ndistinguished_name = dn\nx509_extensions = ext\n[dn]\n${dn}\n` +
    `[ext]\nbasicConstraints = critical, CA:FALSE\nkeyUsage = critical, digitalSignature, keyEncipherment\n` +
    `extendedKeyUsage = ${usage}\n${san}`;
}

/** Issues a leaf certificate signed by `ca` (OpenSSL 3 `req -x509 -CA`). */
export function issueCert(dir: string, name: string, ca: CertFiles, subject: string, usage: 'serverAuth' | 'clientAuth', sans: string[] = [], days = 7): CertFiles {
  const files = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  const config = join(dir, `${name}.cnf`);
  writeFileSync(config, leafConfig(subject, usage, sans));
  openssl(['req', '-x509', ...EC, '-keyout', files.key, '-out', files.cert, '-days', String(days),
    '-config', config, '-CA', ca.cert, '-CAkey', ca.key]);
  return files;
}

/** Where {@link generatePki} puts each file under `dir`. */
export function pkiPaths(dir: string): Pki {
  const pair = (name: string): CertFiles => ({ cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) });
  return {
    dir, ca: pair('ca'), apiserver: pair('apiserver'), admin: pair('admin'),
    serviceAccount: { key: join(dir, 'sa.key'), cert: join(dir, 'sa.pub') },
  };
}

/**
 * Generates a CA, serving/client certificates and service-account keys with the openssl CLI.
 * @param days validity. @defaultValue 7 (tests); the dev control plane asks for longer.
 */
export function generatePki(dir: string, days = 7): Pki {
  const pki = pkiPaths(dir);
  const { ca, serviceAccount } = pki;
  openssl(['req', '-x509', ...EC, '-keyout', ca.key, '-out', ca.cert, '-days', String(days), '-subj', '/CN=hermes-test-ca']);
  issueCert(dir, 'apiserver', ca, '/CN=kube-apiserver', 'serverAuth', [
    'IP:127.0.0.1', 'IP:10.0.0.1', 'DNS:localhost', 'DNS:kubernetes', 'DNS:kubernetes.default',
    'DNS:kubernetes.default.svc', 'DNS:kubernetes.default.svc.cluster.local',
  ], days);
  issueCert(dir, 'admin', ca, '/O=system:masters/CN=admin', 'clientAuth', [], days);
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', serviceAccount.key]);
  openssl(['pkey', '-in', serviceAccount.key, '-pubout', '-out', serviceAccount.cert]);
  return pki;
}
