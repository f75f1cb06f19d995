// File mode (`hermes dev`): the Skill and CronJob manifests of a folder written to Postgres by the
// same store functions the operator's controllers use, so `make dev` offers the skills and fires
// the CronJobs. Checked the way the controllers check them; a problem names the manifest.
import { parseDeliver, type Db } from '../services/core/index.js';
import type { Agent } from './api/agent.js';
import type { CompiledSkillRef } from './compile.js';
import { selectSkills } from './controllers/agent-skills.js';
import { cronHash, findSchedule, upsertSchedule } from './cron/store.js';
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
