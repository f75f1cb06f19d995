// Kubernetes names given on the command line (`hermes operator`, `hermes skills import`), checked
// when the flag is read: a typo (`Bad_NS`) would otherwise watch nothing, or print a manifest
// the apiserver refuses. Light on purpose: no Kubernetes client.
import { InvalidArgumentError } from 'commander';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A namespace name (an RFC 1123 label). */
export function namespaceName(v: string): string {
  if (!DNS_LABEL.test(v)) throw new InvalidArgumentError('expected a Kubernetes namespace name: lowercase letters, digits and \'-\', at most 63.');
  return v;
}

/** An object name (a Lease, a Secret: an RFC 1123 subdomain). */
export function objectName(v: string): string {
  if (!DNS_SUBDOMAIN.test(v)) throw new InvalidArgumentError('expected a Kubernetes object name: lowercase letters, digits, \'-\' and \'.\', at most 253.');
  return v;
}
