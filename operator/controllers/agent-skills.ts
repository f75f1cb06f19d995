// The Skills an Agent offers: Skill objects in the Agent's namespace whose labels match
// `spec.skills.matchLabels`, sorted so the compiled revision is stable. Only the selection is
// compiled; the content version is read from Postgres at load time, so publishing a new version
// of a Skill does not recompile every Agent.
import type { Agent } from '../api/agent.js';
import type { CompiledSkillRef } from '../compile.js';
import type { OperatorContext, RawObject } from './context.js';

export function selectedSkills(ctx: OperatorContext, agent: Agent): CompiledSkillRef[] {
  return selectSkills(agent, ctx.caches.skills.list(agent.metadata.namespace));
}

/** The selection among `skills` (objects of the Agent's namespace; `hermes dev` passes its Skill manifests). */
export function selectSkills(agent: Agent, skills: readonly Pick<RawObject, 'metadata' | 'spec'>[]): CompiledSkillRef[] {
  if (!agent.spec.skills.enabled) return [];
  const want = Object.entries(agent.spec.skills.matchLabels ?? {});
  return skills.filter((s) => s.metadata.namespace === agent.metadata.namespace)
    .filter((s) => !s.metadata.deletionTimestamp && want.every(([k, v]) => s.metadata.labels?.[k] === v))
    .map((s) => ({ name: skillNameOf(s), object: s.metadata.name }))
    .sort((a, b) => a.name.localeCompare(b.name) || a.object.localeCompare(b.object))
    // One Skill per name: of two with the same spec.name, the first object name wins (the other's status says so).
    .filter((s, i, all) => i === 0 || all[i - 1]!.name !== s.name);
}

/** The name a Skill is offered under (spec.name; the object's name when absent). */
export const skillNameOf = (s: Pick<RawObject, 'metadata' | 'spec'>): string => String((s.spec as { name?: unknown } | undefined)?.name ?? s.metadata.name);

/**
 * The Skill object of `namespace` that agents are offered under `name` among `skills`: the first
 * object name, as {@link selectSkills} keeps it. Skills being deleted do not count.
 */
export function skillNameOwner(skills: readonly Pick<RawObject, 'metadata' | 'spec'>[], namespace: string, name: string): string | undefined {
  return skills.filter((s) => s.metadata.namespace === namespace && !s.metadata.deletionTimestamp && skillNameOf(s) === name)
    .map((s) => s.metadata.name).sort((a, b) => a.localeCompare(b))[0];
}

/** What about a Skill matters to Agents: a change re-queues the Agents of its namespace. */
export function skillSelectionFingerprint(s: RawObject): string {
  return JSON.stringify([s.metadata.labels ?? {}, (s.spec as { name?: unknown } | undefined)?.name, !!s.metadata.deletionTimestamp]);
}
