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
    .map((s) => ({ name: String((s.spec as { name?: unknown } | undefined)?.name ?? s.metadata.name), object: s.metadata.name }))
    .sort((a, b) => a.name.localeCompare(b.name) || a.object.localeCompare(b.object));
}

/** What about a Skill matters to Agents: a change re-queues the Agents of its namespace. */
export function skillSelectionFingerprint(s: RawObject): string {
  return JSON.stringify([s.metadata.labels ?? {}, (s.spec as { name?: unknown } | undefined)?.name, !!s.metadata.deletionTimestamp]);
}
