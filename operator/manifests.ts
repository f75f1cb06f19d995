// Reading Hermes manifests from YAML files (`hermes dev`, tests): multi-document files, each
// document validated against its kind's schema with errors that name the file and the field.
// ConfigMaps are read too: Profiles may take their persona and context files from them; and
// Secrets, which `hermes dev` resolves Profile references from (HERMES_SECRETS_SOURCE=local);
// Skills and CronJobs, which `hermes dev` publishes and schedules as the operator would.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { agentSchema, type Agent } from './api/agent.js';
import { profileSchema, type Profile } from './api/profile.js';
import { skillSchema, type Skill } from './api/skill.js';
import { cronJobSchema, type CronJob } from './api/cronjob.js';
import { configMapText } from './texts.js';

export interface ManifestSet {
  agents: Agent[];
  profiles: Profile[];
  /** ConfigMaps beside the manifests (persona and context-file texts); namespace defaulted like the others. */
  configMaps: { namespace: string; name: string; data: Record<string, string> }[];
  /** Secrets beside the manifests (data decoded from base64, stringData over it). */
  secrets: { namespace: string; name: string; data: Record<string, string> }[];
  skills: Skill[];
  cronJobs: CronJob[];
  /** Other hermes.dev kinds (none today): counted, not rejected. */
  skipped: { file: string; kind: string; name: string }[];
}

/** A folder of manifests that cannot be used as it is; the message names the file and what is wrong. */
export class ManifestError extends Error {
  override readonly name = 'ManifestError';
}

function parseDoc<T>(schema: z.ZodType<T>, doc: unknown, where: string): T {
  const r = schema.safeParse(doc);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new ManifestError(`${where}: invalid manifest: ${issues}`);
}

const configMapDocSchema = z.object({
  metadata: z.object({ name: z.string().min(1), namespace: z.string().default('default') }),
  data: z.record(z.string(), z.string()).optional(),
  binaryData: z.record(z.string(), z.string()).optional(),
});

function parseConfigMap(doc: unknown, where: string): ManifestSet['configMaps'][number] {
  const cm = parseDoc(configMapDocSchema, doc, where);
  return { namespace: cm.metadata.namespace, name: cm.metadata.name, data: configMapText(cm) };
}

const secretDocSchema = z.object({
  metadata: z.object({ name: z.string().min(1), namespace: z.string().default('default') }),
  data: z.record(z.string(), z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64 (use stringData for plain text)')).optional(),
  stringData: z.record(z.string(), z.string()).optional(),
});

function parseSecret(doc: unknown, where: string): ManifestSet['secrets'][number] {
  const s = parseDoc(secretDocSchema, doc, where);
  const data = Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
  return { namespace: s.metadata.namespace, name: s.metadata.name, data: { ...data, ...s.stringData } };
}

async function yamlFiles(dir: string): Promise<string[]> {
  const found = await stat(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') throw new ManifestError(`${dir}: no such folder or file of manifests`);
    throw err;
  });
  if (!found.isDirectory()) return [dir];
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await yamlFiles(p)));
    else if (/\.ya?ml$/.test(e.name)) out.push(p);
  }
  return out.sort();
}

type Doc = { kind?: string; apiVersion?: string; metadata?: { name?: string } };

/** `kind namespace/name` of every object added so far, with where it was declared. */
type Seen = Map<string, string>;

/** Refuses a second object of one kind and name: the later one would silently replace the first. */
function once<T extends { metadata: { namespace: string; name: string } } | { namespace: string; name: string }>(seen: Seen, kind: string, where: string, obj: T): T {
  const { namespace, name } = 'metadata' in obj ? obj.metadata : obj;
  const key = `${kind} ${namespace}/${name}`;
  const first = seen.get(key);
  if (first) throw new ManifestError(`${where}: ${key} is declared twice (first in ${first}); keep one`);
  seen.set(key, where);
  return obj;
}

function addDoc(set: ManifestSet, seen: Seen, doc: Doc, file: string, where: string): void {
  const kind = doc.kind ?? '?';
  if (doc.apiVersion === 'v1' && kind === 'ConfigMap') set.configMaps.push(once(seen, kind, where, parseConfigMap(doc, where)));
  else if (doc.apiVersion === 'v1' && kind === 'Secret') set.secrets.push(once(seen, kind, where, parseSecret(doc, where)));
  else if (doc.apiVersion !== 'hermes.dev/v1alpha1') return; // the rest belongs to Kubernetes
  else if (kind === 'Agent') set.agents.push(once(seen, kind, where, parseDoc(agentSchema, doc, where)));
  else if (kind === 'Profile') set.profiles.push(once(seen, kind, where, parseDoc(profileSchema, doc, where)));
  else if (kind === 'Skill') set.skills.push(once(seen, kind, where, parseDoc(skillSchema, doc, where)));
  else if (kind === 'CronJob') set.cronJobs.push(once(seen, kind, where, parseDoc(cronJobSchema, doc, where)));
  else set.skipped.push({ file, kind, name: doc.metadata?.name ?? '?' });
}

/** Every manifest in `dir` (recursively) — or in one file, when `dir` is a file. */
export async function loadManifests(dir: string): Promise<ManifestSet> {
  const set: ManifestSet = { agents: [], profiles: [], configMaps: [], secrets: [], skills: [], cronJobs: [], skipped: [] };
  const seen: Seen = new Map();
  for (const file of await yamlFiles(dir)) {
    const docs = parseAllDocuments(await readFile(file, 'utf8'));
    for (const [i, d] of (Array.isArray(docs) ? docs : [docs]).entries()) {
      if (d.errors.length) throw new ManifestError(`${file}: YAML error: ${d.errors[0]!.message}`);
      const doc = d.toJSON() as Doc | null;
      if (doc) addDoc(set, seen, doc, file, `${file} (document ${i + 1})`);
    }
  }
  return set;
}
