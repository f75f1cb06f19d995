// What a turn's skill tools may reach: the skills this agent offers now (bound by the worker).
import type { CatalogSkill } from './catalog.js';

export interface SkillAccess {
  /** The skills offered to this agent with this turn's toolsets (read from Postgres on each call). */
  offered(): Promise<CatalogSkill[]>;
}
