// `make chart-docs`: generates charts/hermes/values.schema.json and the values table of
// charts/hermes/README.md from charts/hermes/values.yaml — the types from the defaults (every
// object closed with additionalProperties: false, so a typo fails `helm install`), the constraints
// from the overrides below, the descriptions from each key's `# --` comment.
// `--check` writes nothing and exits 1 when either file is stale (test/integration/chart/chart-files.test.ts).
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isMap, isScalar, isSeq, parseDocument, type Pair, type YAMLMap } from 'yaml';

const chartDir = fileURLToPath(new URL('../../charts/hermes/', import.meta.url));
type Schema = Record<string, unknown>;

const stringMap: Schema = { type: 'object', additionalProperties: { type: 'string' } };
// Values that become Kubernetes names, keys and label values: refused here, naming the value, rather
// than by the apiserver halfway through an install (naming a derived object) or by a crash-looping Pod.
const dnsLabel = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const objectName: Schema = { type: 'string', maxLength: 253, pattern: `^${dnsLabel}(\\.${dnsLabel})*$` };
const optionalObjectName: Schema = { type: 'string', maxLength: 253, pattern: `^(${dnsLabel}(\\.${dnsLabel})*)?$` };
const secretKey: Schema = { type: 'string', maxLength: 253, pattern: '^[-._a-zA-Z0-9]+$' };
const labelValue = '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$';
const labelMap: Schema = { type: 'object', additionalProperties: { type: 'string', maxLength: 63, pattern: labelValue } };
const count = (minimum: number, maximum: number): Schema => ({ type: 'integer', minimum, maximum });
const quantity: Schema = { anyOf: [{ type: 'string', pattern: '^[0-9.]+[a-zA-Z]*$' }, { type: 'number', minimum: 0 }] };
const resourceList: Schema = { type: 'object', additionalProperties: false, properties: { cpu: quantity, memory: quantity, 'ephemeral-storage': quantity } };
const resources: Schema = { type: 'object', additionalProperties: false, required: ['requests', 'limits'], properties: { requests: resourceList, limits: resourceList } };
const objects: Schema = { type: 'array', items: { type: 'object' } };
const envList: Schema = { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 } } } };
// An image: never a `:latest` tag — the templates refuse one saying why (a schema `not` says only "'not' failed").
const image: Schema = { type: 'string', minLength: 1 };
const cidrs: Schema = { type: 'array', items: { type: 'string', pattern: '^[0-9a-fA-F.:]+/[0-9]{1,3}$' } };
const ports: Schema = { type: 'array', items: { type: 'integer', minimum: 1, maximum: 65535 }, minItems: 1 };
const port: Schema = { type: 'integer', minimum: 1, maximum: 65535 };
const paths: Schema = { type: 'array', items: { type: 'string', pattern: '^/' }, minItems: 1 };

/** Constraints a default value cannot tell: by dotted path (`*` matches one key). */
const overrides: Record<string, Schema> = {
  'nameOverride': { type: 'string', maxLength: 63, pattern: `^(${dnsLabel})?$` },
  'fullnameOverride': { type: 'string', maxLength: 63, pattern: `^(${dnsLabel})?$` },
  'commonLabels': labelMap,
  'podAnnotations': stringMap, 'podLabels': labelMap, '*.podAnnotations': stringMap, '*.podLabels': labelMap,
  '*.serviceAccount.annotations': stringMap,
  // Pod and container securityContext: Kubernetes' own objects, checked by the apiserver.
  'podSecurityContext': { type: 'object' }, 'securityContext': { type: 'object' },
  '*.priorityClassName': { type: 'string', maxLength: 253, pattern: '^([a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$' },
  'image.tag': { type: 'string' }, // never `latest`: the hermes.image template refuses it, saying why
  'image.digest': { type: 'string', pattern: '^(sha256:[a-f0-9]{64})?$' },
  'image.pullPolicy': { type: 'string', enum: ['Always', 'IfNotPresent', 'Never'] },
  'imagePullSecrets': { type: 'array', items: { type: 'object', additionalProperties: false, required: ['name'], properties: { name: { type: 'string', minLength: 1 } } } },
  'database.existingSecret': objectName, 'database.secretKey': secretKey, 'redis.secretKey': secretKey,
  'operator.runtimeSecret': objectName, 'sandbox.serviceAccount': objectName,
  'keda.passwordSecret': optionalObjectName, 'ingress.tlsSecret': optionalObjectName, 'sandbox.runtimeClassName': optionalObjectName,
  'ingress.host': { type: 'string', maxLength: 253, pattern: `^(\\*\\.)?${dnsLabel}(\\.${dnsLabel})*$` },
  'database.cidrs': cidrs, 'redis.cidrs': cidrs, 'database.port': port, 'redis.port': port,
  'redis.existingSecret': objectName,
  'redis.queuePrefix': { type: 'string', minLength: 1 },
  'bundled.*.image': image,
  'bundled.*.storage': quantity,
  'bundled.*.resources': resources, 'migrations.resources': resources,
  '*.resources': resources,
  '*.extraEnv': envList,
  '*.nodeSelector': stringMap, '*.tolerations': objects, '*.affinity': { type: 'object' },
  '*.port': port,
  '*.replicas': count(1, 1_000),
  '*.maxUnavailable': { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'string', pattern: '^[0-9]+%$' }] },
  '*.autoscaling.minReplicas': count(1, 1_000),
  '*.autoscaling.maxReplicas': count(1, 1_000),
  '*.autoscaling.targetCPUUtilizationPercentage': { type: 'integer', minimum: 1, maximum: 100 },
  'gateway.service.type': { type: 'string', enum: ['ClusterIP', 'NodePort', 'LoadBalancer'] },
  'gateway.service.annotations': stringMap,
  'worker.turnConcurrency': count(1, 1_024),
  // HERMES_SHUTDOWN_GRACE_SECONDS must be positive: 0 or less crash-looped every worker.
  'worker.shutdownGraceSeconds': count(1, 3_600),
  'migrations.backoffLimit': count(0, 100), 'migrations.activeDeadlineSeconds': count(1, 86_400),
  'keda.pollingInterval': count(1, 3_600), 'keda.cooldownPeriod': count(0, 86_400),
  'operator.watchNamespace': { type: 'string', pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$' },
  'rbac.agentNamespaces': { type: 'array', items: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' } },
  'sandbox.backend': { type: 'string', enum: ['kubernetes', 'bubblewrap'] },
  'sandbox.image': image,
  'sandbox.namespace.name': { type: 'string', maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' },
  'sandbox.dnsNamespace': { type: 'string', maxLength: 63, pattern: `^${dnsLabel}$` },
  // HERMES_SANDBOX_DNS_SELECTOR: name=value pairs, as the worker parses it (a bare name crash-looped every worker).
  'sandbox.dnsSelector': { type: 'string', pattern: '^[A-Za-z0-9./_-]+=[A-Za-z0-9._-]+(,[A-Za-z0-9./_-]+=[A-Za-z0-9._-]+)*$' },
  'networkPolicy.kubeApiServerCidrs': cidrs, 'networkPolicy.externalCidrs': cidrs, 'networkPolicy.externalExcept': cidrs,
  'networkPolicy.kubeApiServerPorts': ports, 'networkPolicy.externalPorts': ports,
  'networkPolicy.dnsNamespaceSelector': stringMap, 'networkPolicy.dnsPodSelector': stringMap,
  'networkPolicy.gatewayFrom': objects, 'networkPolicy.metricsFrom': objects, 'networkPolicy.extraEgress': objects,
  'ingress.annotations': stringMap, 'ingress.paths': paths, 'httpRoute.paths': paths,
  'httpRoute.parentRefs': { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, namespace: { type: 'string' }, sectionName: { type: 'string' } }, additionalProperties: false } },
  'httpRoute.hostnames': { type: 'array', items: { type: 'string' } },
  'keda.listLength': { type: 'integer', minimum: 1 },
  'keda.redisAddress': { type: 'string', pattern: '^([^:/ ]+:[0-9]+)?$' },
  'metrics.serviceMonitor.interval': { type: 'string', pattern: '^[0-9]+(ms|s|m|h)$' },
  'metrics.*.labels': stringMap,
};

function override(path: string): Schema | undefined {
  if (overrides[path]) return overrides[path];
  const parts = path.split('.');
  for (const [pattern, schema] of Object.entries(overrides)) {
    const p = pattern.split('.');
    if (!p.includes('*')) continue;
    // `*` matches one key; a leading `*` may also match nothing more specific (the longest tail wins by order).
    if (p.length === parts.length && p.every((seg, i) => seg === '*' || seg === parts[i])) return schema;
  }
  return undefined;
}

export interface Row { key: string; type: string; default: string; description: string }

function describe(pair: Pair, inherited: string | undefined): string {
  // The comment above a map's first key is kept on the map itself.
  const comment = (pair.key as { commentBefore?: string }).commentBefore ?? inherited ?? '';
  const lines = comment.split('\n').map((l) => l.trim());
  const start = lines.findIndex((l) => l.startsWith('-- '));
  return start < 0 ? '' : lines.slice(start).join(' ').slice(3).trim();
}

function typeOf(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** The schema of one value that is not a group of keys, and its row of the README table. */
function leaf(path: string, value: unknown, fixed: Schema | undefined, description: string, rows: Row[]): Schema {
  const json: unknown = isMap(value) || isSeq(value) || isScalar(value) ? value.toJSON() : null;
  const schema: Schema = { ...(fixed ?? { type: typeOf(json) }), description };
  if (!fixed && isSeq(value)) schema.items = { type: typeOf((json as unknown[])[0] ?? '') };
  const type = fixed?.type ?? (fixed?.anyOf ? 'string or number' : typeOf(json));
  rows.push({ key: path, type: String(type), default: JSON.stringify(json), description });
  return schema;
}

function build(map: YAMLMap, prefix: string, rows: Row[], problems: string[]): Schema {
  const properties: Record<string, Schema> = {};
  for (const [index, pair] of (map.items as Pair[]).entries()) {
    const key = String(isScalar(pair.key) ? pair.key.value : pair.key);
    const path = prefix ? `${prefix}.${key}` : key;
    const description = describe(pair, index === 0 ? map.commentBefore ?? undefined : undefined);
    const value = pair.value;
    const fixed = override(path);
    if (isMap(value) && !fixed && value.items.length > 0) {
      if (description) problems.push(`${path}: a group of keys takes a plain comment, not "# --"`);
      properties[key] = build(value, path, rows, problems);
      continue;
    }
    const leafSchema = leaf(path, value, fixed, description, rows);
    if (!description) problems.push(`${path}: no "# --" comment describes it`);
    properties[key] = leafSchema;
  }
  return { type: 'object', additionalProperties: false, properties };
}

export function render(): { schema: string; readme: string; problems: string[] } {
  const doc = parseDocument(readFileSync(`${chartDir}values.yaml`, 'utf8'));
  const rows: Row[] = [];
  const problems: string[] = [];
  const root = build(doc.contents as YAMLMap, '', rows, problems);
  const schema = JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', title: 'Values of the Hermes chart (generated by `make chart-docs` from values.yaml)', ...root }, null, 2) + '\n';
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const table = ['| Key | Type | Default | Description |', '|---|---|---|---|', ...rows.map((r) => `| \`${r.key}\` | ${r.type} | \`${esc(r.default)}\` | ${esc(r.description)} |`)].join('\n');
  const readmePath = `${chartDir}README.md`;
  const readme = readFileSync(readmePath, 'utf8');
  const begin = '<!-- values-table:begin (generated by `make chart-docs`; do not edit) -->';
  const end = '<!-- values-table:end -->';
  const i = readme.indexOf(begin);
  const j = readme.indexOf(end);
  if (i < 0 || j < i) throw new Error(`charts/hermes/README.md lacks the markers ${begin} … ${end}`);
  return { schema, readme: `${readme.slice(0, i + begin.length)}\n${table}\n${readme.slice(j)}`, problems };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const out = render();
  if (out.problems.length > 0) {
    process.stderr.write(`charts/hermes/values.yaml:\n  ${out.problems.join('\n  ')}\n`);
    process.exit(1);
  }
  const files: [string, string][] = [[`${chartDir}values.schema.json`, out.schema], [`${chartDir}README.md`, out.readme]];
  if (process.argv.includes('--check')) {
    const stale = files.filter(([path, content]) => { try { return readFileSync(path, 'utf8') !== content; } catch { return true; } }).map(([p]) => p);
    if (stale.length > 0) { process.stderr.write(`stale: ${stale.join(', ')}; run make chart-docs\n`); process.exit(1); }
  } else {
    for (const [path, content] of files) writeFileSync(path, content);
    process.stderr.write('chart-docs: wrote charts/hermes/values.schema.json and the values table of charts/hermes/README.md\n');
  }
}
