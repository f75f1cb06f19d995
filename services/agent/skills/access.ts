// What a turn's skill tools may reach: the skills this agent offers now, and its own learned
// skills to write (bound by the worker to the agent and the session — never named by the model).
import type { CatalogSkill } from './catalog.js';
import type { LearnedSkillStore } from './learned.js';
import type { StagingStore } from '../learning/staging.js';

export interface SkillManageAccess {
  store: LearnedSkillStore;
  agentId: string;
  /** The session the writes come from (their provenance); null for an admin's approval without one. */
  sessionId: string | null;
  /** Every skill of the agent before requirements (who owns a name). */
  all(): Promise<CatalogSkill[]>;
  /** Present when writes wait for an admin (write approval): they are staged here instead. */
  approval?: StagingStore;
}

export interface SkillAccess {
  /** The skills offered to this agent with this turn's toolsets (read from Postgres on each call). */
  offered(): Promise<CatalogSkill[]>;
  /** Writing learned skills (skill_manage); absent = refused. */
  manage?: SkillManageAccess;
  /** Records that the agent loaded a skill (the curator counts use of learned skills). */
  used?(skill: CatalogSkill): Promise<void>;
}
