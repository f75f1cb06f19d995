// zod → Kubernetes structural schema. zod 4 renders OpenAPI 3.0 JSON Schema; Kubernetes wants a
// subset: every node typed, no $ref/anyOf for our shapes, no `additionalProperties: false` next
// to `properties`, unknown maps marked `x-kubernetes-preserve-unknown-fields`, and no JS-only
// integer bounds.
import { z } from 'zod';
import { noNulPattern, objectNameRule } from '../api/common.js';

export type JsonSchema = Record<string, unknown> & {
  type?: string;
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  additionalProperties?: JsonSchema | boolean;
};

const jsLimits = new Set([Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]);

function dropJsBounds(s: JsonSchema): void {
  for (const k of ['minimum', 'maximum'] as const) if (typeof s[k] === 'number' && jsLimits.has(s[k])) delete s[k];
}

function mapValues(s: JsonSchema): void {
  const ap = s.additionalProperties;
  if (ap === undefined) return;
  if (s.properties || ap === false) delete s.additionalProperties;
  else if (ap === true || (typeof ap === 'object' && Object.keys(ap).length === 0)) {
    delete s.additionalProperties;
    s['x-kubernetes-preserve-unknown-fields'] = true;
  } else s.additionalProperties = structural(ap);
}

/** Makes one zod-rendered JSON Schema node (and its children) structural. Throws on shapes it cannot express. */
export function structural(input: JsonSchema): JsonSchema {
  const s: JsonSchema = { ...input };
  for (const bad of ['$ref', 'anyOf', 'oneOf', 'allOf', 'not', 'const']) {
    if (bad in s) throw new Error(`CRD schema: "${bad}" is not supported here: ${JSON.stringify(input).slice(0, 200)}`);
  }
  delete s.$schema;
  delete s.id;
  if (!s.type && !s['x-kubernetes-preserve-unknown-fields']) throw new Error(`CRD schema: node without a type: ${JSON.stringify(input).slice(0, 200)}`);
  dropJsBounds(s);
  if (s.properties) s.properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, structural(v)]));
  if (s.items) s.items = structural(s.items);
  mapValues(s);
  return s;
}

/** Why this one node has no bound, or undefined. */
function missingBound(s: JsonSchema): string | undefined {
  if (s.type === 'string' && s.maxLength === undefined && s.enum === undefined) return 'string without maxLength';
  if (s.type === 'array' && s.maxItems === undefined) return 'list without maxItems';
  if (s.type === 'object' && !s.properties && s.maxProperties === undefined) return 'map without maxProperties';
  if ((s.type === 'integer' || s.type === 'number') && s.maximum === undefined) return 'number without maximum';
  return undefined;
}

/**
 * The paths of a spec whose strings, lists, maps or numbers have no bound (maxLength — an enum bounds
 * itself —, maxItems, maxProperties, maximum). The apiserver stores what the schema lets through (a
 * 300 KB model name was accepted; any number up to int64, past the Postgres integers, timers and
 * provider fields that read it) and estimates a CEL rule's cost from these bounds, so every one needs
 * a bound.
 */
export function unboundedPaths(s: JsonSchema, path = 'spec'): string[] {
  const out: string[] = [];
  const missing = missingBound(s);
  if (missing) out.push(`${path} (${missing})`);
  for (const [k, v] of Object.entries(s.properties ?? {})) out.push(...unboundedPaths(v, `${path}.${k}`));
  if (s.items) out.push(...unboundedPaths(s.items, `${path}[]`));
  if (typeof s.additionalProperties === 'object') out.push(...unboundedPaths(s.additionalProperties, `${path}.*`));
  return out;
}

/**
 * Adds {@link noNulPattern} to every spec string the schema does not pin otherwise (a pattern of its
 * own, an enum, a URI format): Postgres stores no NUL, so the apiserver refuses it at apply.
 */
export function refuseNul(s: JsonSchema): JsonSchema {
  const out: JsonSchema = { ...s };
  if (out.type === 'string' && out.pattern === undefined && out.enum === undefined && out.format === undefined) out.pattern = noNulPattern;
  if (out.properties) out.properties = Object.fromEntries(Object.entries(out.properties).map(([k, v]) => [k, refuseNul(v)]));
  if (out.items) out.items = refuseNul(out.items);
  if (typeof out.additionalProperties === 'object') out.additionalProperties = refuseNul(out.additionalProperties);
  return out;
}

/** The openAPIV3Schema of a kind: apiVersion/kind/metadata as Kubernetes owns them, spec and status from zod. */
export function kindSchema(spec: z.ZodType, status: z.ZodType, description: string): JsonSchema {
  const render = (t: z.ZodType) => structural(z.toJSONSchema(t, { target: 'openapi-3.0', io: 'input', unrepresentable: 'throw' }) as JsonSchema);
  const specSchema = refuseNul(render(spec));
  const unbounded = unboundedPaths(specSchema);
  if (unbounded.length > 0) throw new Error(`CRD schema: unbounded fields (give each a .max() in operator/api): ${unbounded.join(', ')}`);
  return {
    type: 'object',
    description,
    required: ['spec'],
    'x-kubernetes-validations': [{ ...objectNameRule }],
    properties: {
      apiVersion: { type: 'string', description: 'APIVersion defines the versioned schema of this representation of an object.' },
      kind: { type: 'string', description: 'Kind is a string value representing the REST resource this object represents.' },
      metadata: { type: 'object' },
      spec: specSchema,
      status: render(status),
    },
  };
}
