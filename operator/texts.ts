// The Profile's prompt texts — persona and context files — resolved from where they live: inline
// in the manifest or in a ConfigMap key. The operator reads ConfigMaps from its watched cache,
// `hermes dev` from ConfigMap manifests beside the Agents; both call the same code, so a
// missing ConfigMap reads the same in `kubectl describe` and on the dev console.
import type { ConfigMapKeySelector } from './api/common.js';
import { contextFileLimits, personaMaxChars, type Profile } from './api/profile.js';

/** ConfigMaps by namespace and name: their `data` merged with `binaryData` decoded as UTF-8. */
export interface ConfigMapLookup {
  data(namespace: string, name: string): Record<string, string> | undefined;
}

/** A ConfigMap lookup over a fixed set (manifest files, tests). */
export function staticConfigMaps(maps: { namespace: string; name: string; data: Record<string, string> }[]): ConfigMapLookup {
  const byKey = new Map(maps.map((m) => [`${m.namespace}/${m.name}`, m.data]));
  return { data: (namespace, name) => byKey.get(`${namespace}/${name}`) };
}

/** `data` and `binaryData` of a ConfigMap object as one record of text. */
export function configMapText(cm: { data?: Record<string, string>; binaryData?: Record<string, string> }): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
  return Object.assign(out, cm.data ?? {});
}

export interface ProfileTexts {
  persona: string;
  contextFiles: { name: string; content: string }[];
}

/** Why a text could not be resolved: a condition reason and a message that says what to do. */
export interface TextProblem {
  reason: 'ConfigMapNotFound' | 'ConfigMapKeyMissing' | 'ConfigMapValueTooLarge' | 'ConfigMapValueHasNul';
  message: string;
}

/** Where a ConfigMap text goes: the persona, or the context file at this index. */
interface TextRef { slot: 'persona' | number; field: string; ref: ConfigMapKeySelector; maxChars: number; what: string }

/** Every ConfigMap key a Profile reads, with the field path for messages. */
export function profileTextRefs(p: Profile): TextRef[] {
  const refs: TextRef[] = [];
  if (p.spec.personaFrom) refs.push({ slot: 'persona', field: 'spec.personaFrom', ref: p.spec.personaFrom.configMapKeyRef, maxChars: personaMaxChars, what: 'the persona' });
  for (const [i, f] of (p.spec.contextFiles ?? []).entries()) {
    if (f.contentFrom) refs.push({ slot: i, field: `spec.contextFiles[${i}].contentFrom`, ref: f.contentFrom.configMapKeyRef, maxChars: contextFileLimits.chars, what: `context file ${f.name}` });
  }
  return refs;
}

type Lookup = { text: string } | { absent: true } | { problem: TextProblem };

function lookup(namespace: string, r: TextRef, maps: ConfigMapLookup): Lookup {
  const { name, key, optional } = r.ref;
  const data = maps.data(namespace, name);
  const value = data?.[key];
  if (value === undefined) {
    if (optional) return { absent: true };
    return {
      problem: data
        ? { reason: 'ConfigMapKeyMissing', message: `${r.field}: ConfigMap "${name}" has no key "${key}" in namespace ${namespace}; add it or fix configMapKeyRef.key (keys: ${Object.keys(data).sort().join(', ') || 'none'}).` }
        : { reason: 'ConfigMapNotFound', message: `${r.field}: ConfigMap "${name}" not found in namespace ${namespace}; create it: kubectl -n ${namespace} create configmap ${name} --from-file=${key}=<file>` },
    };
  }
  if (value.length > r.maxChars) {
    return { problem: { reason: 'ConfigMapValueTooLarge', message: `${r.field}: ConfigMap "${name}" key "${key}" has ${value.length} characters; ${r.what} may have at most ${r.maxChars}.` } };
  }
  // Postgres stores no NUL in the compiled revision (jsonb): every publish of the Agents failed.
  if (value.includes('\u0000')) {
    return { problem: { reason: 'ConfigMapValueHasNul', message: `${r.field}: ConfigMap "${name}" key "${key}" holds a NUL (U+0000) character at offset ${value.indexOf('\u0000')}, which Postgres cannot store; ${r.what} must be text without it.` } };
  }
  return { text: value };
}

/**
 * The persona and context files with every ConfigMap source read. An optional reference whose
 * ConfigMap or key is missing leaves its text out (persona empty → the default identity).
 */
export function resolveProfileTexts(p: Profile, maps: ConfigMapLookup): { texts: ProfileTexts } | { problem: TextProblem } {
  const read = new Map<TextRef['slot'], string | undefined>();
  for (const r of profileTextRefs(p)) {
    const found = lookup(p.metadata.namespace, r, maps);
    if ('problem' in found) return found;
    read.set(r.slot, 'text' in found ? found.text : undefined);
  }
  const persona = p.spec.personaFrom ? read.get('persona') ?? '' : p.spec.persona;
  const contextFiles = (p.spec.contextFiles ?? []).flatMap((f, i) => {
    const content = f.contentFrom ? read.get(i) : f.content;
    return content === undefined ? [] : [{ name: f.name, content }];
  });
  return { texts: { persona, contextFiles } };
}

/** The first ConfigMap reference of the Profile that does not resolve, or undefined. */
export function profileTextProblem(p: Profile, maps: ConfigMapLookup): TextProblem | undefined {
  const r = resolveProfileTexts(p, maps);
  return 'problem' in r ? r.problem : undefined;
}
