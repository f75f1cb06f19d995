// File mode (`hermes dev`): the Skill and CronJob manifests of a folder written to Postgres by the
// same store functions the operator's controllers use, so `make dev` offers the skills and fires
// the CronJobs. Checked the way the controllers check them; a problem names the manifest.
import { parseDeliver, unpublishAgentsExcept, type Db } from '../services/core/index.js';
import type { Agent } from './api/agent.js';
import type { CompiledSkillRef } from './compile.js';
import { selectSkills } from './controllers/agent-skills.js';
import { cronHash, deleteSchedulesExcept, findSchedule, upsertSchedule } from './cron/store.js';
import { nextRun } from './cron/schedule.js';
import type { ManifestSet } from './manifests.js';
import { publishSkill } from './skills/store.js';

/** Publishes every Skill manifest (unchanged content writes nothing); returns `namespace/name` of each. */
export async function publishManifestSkills(db: Db, set: Pick<ManifestSet, 'skills'>): Promise<string[]> {
  const out: string[] = [];
  for (const s of set.skills) {
    await publishSkill(db, { namespace: s.metadata.namespace, name: s.metadata.name }, s.spec);
    out.push(`${s.metadata.namespace}/${s.metadata.name}`);
  }
  return out;
}

/** The Skills of the folder an Agent selects (its spec.skills.matchLabels). */
export const manifestSkillsOf = (agent: Agent, set: Pick<ManifestSet, 'skills'>): CompiledSkillRef[] =>
  selectSkills(agent, set.skills.map((s) => ({ metadata: { ...s.metadata, name: s.metadata.name, namespace: s.metadata.namespace }, spec: s.spec })));

/**
 * Stores every CronJob manifest for the scheduler (a changed definition restarts its schedule at
 * the next slot after `now`; an unchanged one keeps its place). Throws naming the CronJob when its
 * schedule, time zone, delivery target or Agent is wrong. Returns `namespace/name` of each.
 */
export async function storeManifestCronJobs(db: Db, set: Pick<ManifestSet, 'cronJobs' | 'agents'>, now = new Date()): Promise<string[]> {
  const out: string[] = [];
  for (const job of set.cronJobs) {
    const key = `${job.metadata.namespace}/${job.metadata.name}`;
    try {
      const next = nextRun(job.spec.schedule, job.spec.timeZone, now);
      parseDeliver(job.spec.deliver, key);
      if (!set.agents.some((a) => a.metadata.namespace === job.metadata.namespace && a.metadata.name === job.spec.agentRef.name)) {
        throw new Error(`Agent "${job.spec.agentRef.name}" is not among the manifests`);
      }
      if ((await findSchedule(db, job.metadata.namespace, job.metadata.name))?.hash !== cronHash(job.spec)) await upsertSchedule(db, job, next);
    } catch (err) {
      throw new Error(`CronJob ${key}: ${(err as Error).message}`, { cause: err });
    }
    out.push(key);
  }
  return out;
}

/**
 * What an earlier `hermes dev` published and this folder no longer declares, turned off so a
 * folder runs exactly what it declares: its agents stop being served (their sessions and memory
 * kept, back on once a folder declares them again) and its CronJobs are deleted with their run
 * history. `set` undefined (`--k8s`: the operator publishes) turns off everything `hermes dev`
 * published. Agents the operator published are never touched.
 */
export async function turnOffUndeclared(db: Db, set: Pick<ManifestSet, 'agents' | 'cronJobs'> | undefined): Promise<{ agents: string[]; cronJobs: string[] }> {
  const key = (o: { metadata: { namespace: string; name: string } }) => `${o.metadata.namespace}/${o.metadata.name}`;
  // Schedules first: they are found through their agent's publisher, which turning it off keeps.
  const cronJobs = await deleteSchedulesExcept(db, 'hermes-dev', set?.cronJobs.map(key) ?? []);
  const agents = await unpublishAgentsExcept(db, 'hermes-dev', set?.agents.map(key) ?? []);
  return { agents, cronJobs };
}
