// Skill controller: validates the SKILL.md front matter (the CRD already refuses names over 64 and
// descriptions over 1024 characters), flags descriptions over Hermes' advised 60 characters,
// scans the body and files for injection patterns, and stores the content as a hashed,
// versioned row in Postgres. Community and trusted skills with findings are not published.
// Two Skills of a namespace with the same spec.name: the first object name is offered, the other
// is NameConflict. Conditions: Valid, Ready. A finalizer deletes the rows when the Skill is deleted.
import { skillDescriptionAdvised, skillSchema, type Skill } from '../api/skill.js';
import { keyOf, parseKey } from '../runtime/kube.js';
import type { ReconcileResult } from '../runtime/controller.js';
import { scanContent } from '../skills/scan.js';
import { skillNameOwner } from './agent-skills.js';
import { deleteSkill, findSkill, publishSkill, skillHash } from '../skills/store.js';
import type { OperatorContext, RawObject } from './context.js';
import { prepare, releaseFinalizer, writeStatus, zodMessage, type StatusDraft } from './status.js';

export const skillConditions = ['Valid', 'Ready'] as const;
const exempt = new Set(['builtin', 'official']);

export function skillWarnings(s: Skill): string[] {
  const d = s.spec.description;
  return d.length > skillDescriptionAdvised
    ? [`description is ${d.length} characters; keep it under ${skillDescriptionAdvised} (one sentence): the skills index is injected into every session`]
    : [];
}

async function draftFor(ctx: OperatorContext, obj: RawObject): Promise<StatusDraft> {
  const parsed = skillSchema.safeParse(obj);
  if (!parsed.success) {
    const msg = zodMessage(parsed.error.issues);
    return { applied: false, conditions: [{ type: 'Valid', status: 'False', reason: 'InvalidSpec', message: msg }, { type: 'Ready', status: 'False', reason: 'InvalidSpec', message: `Fix the spec: ${msg}` }] };
  }
  const skill = parsed.data;
  const warnings = skillWarnings(skill);
  const findings = scanContent([{ file: 'SKILL.md', text: `${skill.spec.description}\n${skill.spec.body}` }, ...skill.spec.files.map((f) => ({ file: f.path, text: f.content }))]).map((f) => f.message);
  const valid = { type: 'Valid', status: 'True' as const, reason: warnings.length ? 'ValidWithWarnings' : 'Valid', message: warnings.join('; ') || 'The front matter is valid.' };
  const fields = { warnings: warnings.length ? warnings : undefined, findings: findings.length ? findings : undefined };
  if (findings.length && !exempt.has(skill.spec.trust)) {
    return { applied: false, fields, conditions: [valid, { type: 'Ready', status: 'False', reason: 'UnsafeContent',
      message: `Not offered to agents: the injection scan found ${findings.length} problem(s): ${findings.join('; ')}. Remove them (a previously published version stays active).` }] };
  }
  const { namespace, name } = skill.metadata;
  const owner = skillNameOwner(ctx.caches.skills.list(namespace), namespace, skill.spec.name);
  if (owner !== undefined && owner !== name) {
    return { applied: true, fields, conditions: [valid, { type: 'Ready', status: 'False', reason: 'NameConflict',
      message: `Skill "${owner}" in namespace ${namespace} already has spec.name "${skill.spec.name}": agents are offered that one, not this. Rename spec.name or delete one of them.` }] };
  }
  const stored = await findSkill(ctx.db, namespace, name);
  const result = stored?.hash === skillHash(skill.spec) ? stored : await publishSkill(ctx.db, { namespace, name }, skill.spec);
  if ('changed' in result && result.changed) ctx.log.info({ skill: `${namespace}/${name}`, version: result.version }, 'Published Skill version');
  return { applied: true, fields: { ...fields, hash: result.hash, version: result.version }, conditions: [valid,
    { type: 'Ready', status: 'True', reason: 'Published', message: `Version ${result.version} (${result.hash.slice(0, 12)}) is available to agents in ${namespace}.` }] };
}

export async function reconcileSkill(ctx: OperatorContext, key: string): Promise<ReconcileResult | void> {
  const { namespace, name } = parseKey(key);
  const obj = ctx.caches.skills.get(name, namespace);
  if (!obj) return;
  if (obj.metadata.deletionTimestamp) {
    const rows = await deleteSkill(ctx.db, namespace, name);
    ctx.log.info({ skill: keyOf(obj), rows }, 'Deleted Skill data from Postgres');
    return releaseFinalizer(ctx, 'skills', obj);
  }
  if (!(await prepare(ctx, 'skills', obj, skillConditions))) return;
  const draft = await draftFor(ctx, obj);
  const ready = draft.conditions.find((c) => c.type === 'Ready')!;
  if (await writeStatus(ctx, 'skills', obj, draft)) {
    ctx.log.info({ skill: key, ready: ready.status, reason: ready.reason }, 'Updated Skill status');
    await ctx.events.emit(obj, ready.status === 'True' ? 'Normal' : 'Warning', ready.reason, ready.message);
  }
}
