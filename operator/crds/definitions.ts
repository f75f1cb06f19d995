// The four hermes.dev kinds as CustomResourceDefinitions: names, printer columns and the zod
// schemas they are rendered from.
import type { z } from 'zod';
import { group, version } from '../api/common.js';
import { agentSpecSchema, agentStatusSchema } from '../api/agent.js';
import { profileSpecSchema, profileSchema } from '../api/profile.js';
import { skillSpecSchema, skillStatusSchema } from '../api/skill.js';
import { cronJobSpecSchema, cronJobStatusSchema } from '../api/cronjob.js';
import { kindSchema, type JsonSchema } from './convert.js';

interface PrinterColumn { name: string; type: string; jsonPath: string; description?: string; priority?: number; format?: string }

export interface KindDefinition {
  kind: string;
  plural: string;
  shortNames: string[];
  description: string;
  spec: z.ZodType;
  status: z.ZodType;
  columns: PrinterColumn[];
}

const ready: PrinterColumn = { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status', description: 'Whether the controller applied the object.' };
const reason: PrinterColumn = { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason', priority: 1 };
const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

const profileStatusSchema = (profileSchema.shape.status as z.ZodOptional<z.ZodType>).unwrap();

export const kinds: KindDefinition[] = [
  {
    kind: 'Agent', plural: 'agents', shortNames: ['ha', 'hagent'], spec: agentSpecSchema, status: agentStatusSchema,
    description: 'Agent is one deployed Hermes agent: its Profile, chat platforms, API access, busy policy and runtime.',
    columns: [ready, { name: 'Profile', type: 'string', jsonPath: '.spec.profileRef.name' },
      { name: 'Platforms', type: 'string', jsonPath: '.status.platforms' },
      { name: 'Runtime', type: 'string', jsonPath: '.spec.runtime.mode', priority: 1 }, reason,
      { name: 'URL', type: 'string', jsonPath: '.status.url', priority: 1 }, age],
  },
  {
    kind: 'Profile', plural: 'profiles', shortNames: ['hprof'], spec: profileSpecSchema, status: profileStatusSchema,
    description: 'Profile is how a Hermes agent thinks and what it may do: model, fallbacks and persona.',
    columns: [ready, { name: 'Provider', type: 'string', jsonPath: '.spec.model.provider' },
      { name: 'Model', type: 'string', jsonPath: '.spec.model.model' }, reason, age],
  },
  {
    kind: 'Skill', plural: 'skills', shortNames: ['hskill'], spec: skillSpecSchema, status: skillStatusSchema,
    description: 'Skill is one Hermes procedural-memory document (SKILL.md front matter and body), managed by GitOps.',
    columns: [ready, { name: 'Skill', type: 'string', jsonPath: '.spec.name' },
      { name: 'Version', type: 'string', jsonPath: '.spec.version' },
      { name: 'Trust', type: 'string', jsonPath: '.spec.trust' }, reason,
      { name: 'Hash', type: 'string', jsonPath: '.status.hash', priority: 1 }, age],
  },
  {
    kind: 'CronJob', plural: 'cronjobs', shortNames: ['hcron'], spec: cronJobSpecSchema, status: cronJobStatusSchema,
    description: 'CronJob is a scheduled prompt run by a Hermes agent in a fresh session (Hermes cron).',
    columns: [ready, { name: 'Agent', type: 'string', jsonPath: '.spec.agentRef.name' },
      { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' },
      { name: 'Suspend', type: 'boolean', jsonPath: '.spec.suspend' },
      { name: 'Last', type: 'date', jsonPath: '.status.lastScheduleTime' },
      { name: 'Next', type: 'string', jsonPath: '.status.nextScheduleTime' }, reason, age],
  },
];

/** The CustomResourceDefinition object of one kind. */
export function crdFor(def: KindDefinition): Record<string, unknown> {
  const singular = def.kind.toLowerCase();
  const schema: JsonSchema = kindSchema(def.spec, def.status, def.description);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${def.plural}.${group}`, labels: { 'app.kubernetes.io/part-of': 'hermes' } },
    spec: {
      group,
      scope: 'Namespaced',
      names: { kind: def.kind, listKind: `${def.kind}List`, plural: def.plural, singular, shortNames: def.shortNames, categories: ['hermes'] },
      versions: [{
        name: version, served: true, storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: def.columns,
        schema: { openAPIV3Schema: schema },
      }],
    },
  };
}
