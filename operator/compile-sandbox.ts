// Profile `spec.sandbox` and `spec.approvals` → their compiled form. A Profile that enables the
// terminal or file toolsets without a sandbox block gets the defaults (so the tools have a place to
// run); one without such toolsets and without the blocks compiles to neither (unchanged revisions).
import type { CompiledAgent } from '../services/core/index.js';
import type { Profile } from './api/profile.js';
import { parseAllowEntry } from '../services/sandbox/index.js';
import { approvalsSpecSchema, durationSeconds, sandboxSpecSchema } from './api/sandbox.js';
import { CompileError } from './compile-error.js';

/** Toolsets whose tools run commands in the sandbox. */
export const SANDBOX_TOOLSETS: readonly string[] = ['terminal', 'file', 'code_execution'];

type Compiled = Pick<CompiledAgent, 'sandbox' | 'approvals'>;
type SandboxSpec = NonNullable<Profile['spec']['sandbox']>;

/** Only the optional fields that are set (compiled config leaves absent fields absent). */
const present = <T extends object>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

function sandboxOf(s: SandboxSpec): NonNullable<Compiled['sandbox']> {
  for (const [i, entry] of s.network.allow.entries()) {
    const parsed = parseAllowEntry(entry);
    if (typeof parsed === 'string') throw new CompileError('InvalidProfile', `spec.sandbox.network.allow[${i}]: ${parsed}`);
  }
  return {
    ...present({ backend: s.backend, image: s.image, namespace: s.namespace, runtimeClassName: s.runtimeClassName, warmPool: s.warmPool, idleTimeoutSeconds: s.idleTimeoutSeconds }),
    ...(s.resources ? { resources: present(s.resources) as Record<string, Record<string, string>> } : {}),
    mode: s.mode,
    timeoutSeconds: s.timeoutSeconds,
    workspace: { size: s.workspace.size, ttlSeconds: durationSeconds(s.workspace.ttl) },
    network: { egress: s.network.egress, allow: s.network.allow },
  };
}

export function compileSandbox(spec: Profile['spec']): Compiled {
  const needs = spec.sandbox !== undefined || (spec.toolsets ?? []).some((t) => SANDBOX_TOOLSETS.includes(t));
  const out: Compiled = {};
  if (needs) out.sandbox = sandboxOf(spec.sandbox ?? sandboxSpecSchema.parse({}));
  const a = spec.approvals ?? (needs ? approvalsSpecSchema.parse({}) : undefined);
  if (a) out.approvals = { mode: a.mode, deny: a.deny, allow: a.allow, timeoutSeconds: a.timeoutSeconds };
  return out;
}
