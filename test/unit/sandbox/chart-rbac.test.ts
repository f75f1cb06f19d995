// The chart grants the workers exactly what the kubernetes sandbox backend asks for (its rules are
// data in services/sandbox/kubernetes/rbac.ts; kubernetes-rbac.test.ts runs the backend as a
// ServiceAccount with just those): a rule the backend adds must reach the chart too.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { sandboxClusterRules, sandboxNamespacedRules } from '../../../services/sandbox/index.js';

type Role = { kind: string; metadata: { name: string }; rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[] };
const roles = parseAllDocuments(readFileSync(new URL('../../../charts/hermes/templates/worker-rbac.yaml', import.meta.url), 'utf8')).map((d) => d.toJSON() as Role);
const role = (name: string) => roles.find((r) => r.kind === 'ClusterRole' && r.metadata.name === name)!;
const norm = (rules: readonly { apiGroups?: string[]; resources?: string[]; verbs: string[] }[]) => rules.map((r) => ({ apiGroups: r.apiGroups ?? [], resources: r.resources ?? [], verbs: [...r.verbs].sort() }));

describe('the chart\'s worker RBAC', () => {
  it('holds Secret get and every namespaced rule of the kubernetes sandbox, nothing more', () => {
    expect(norm(role('hermes-worker').rules)).toEqual(norm([{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }, ...sandboxNamespacedRules]));
  });

  it('has the optional Node read of the sandbox in a ClusterRole of its own', () => {
    expect(norm(role('hermes-worker-nodes').rules)).toEqual(norm(sandboxClusterRules));
  });
});
