// What the chart is built from stays in step: its crds/ equal the repository's crds/ (make crds
// writes both), values.schema.json and the README values table are what `make chart-docs`
// generates from values.yaml, and every key of values.yaml carries its `# --` description.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { render } from '../../../hack/chart/docs.js';
import { chartDir } from '../../support/chart.js';
import { repoRoot } from '../../support/kube/binaries.js';

describe('the chart files', () => {
  it('ship CRDs identical to crds/ (run make crds when this fails)', () => {
    const ours = readdirSync(join(repoRoot, 'crds')).filter((f) => f.endsWith('.yaml')).sort();
    expect(readdirSync(join(chartDir, 'crds')).sort()).toEqual(ours);
    for (const f of ours) expect(readFileSync(join(chartDir, 'crds', f), 'utf8'), `charts/hermes/crds/${f}`).toBe(readFileSync(join(repoRoot, 'crds', f), 'utf8'));
  });

  it('document every value, and the schema and README table are current (run make chart-docs when this fails)', () => {
    const out = render();
    expect(out.problems).toEqual([]);
    expect(readFileSync(join(chartDir, 'values.schema.json'), 'utf8'), 'values.schema.json is stale').toBe(out.schema);
    expect(readFileSync(join(chartDir, 'README.md'), 'utf8'), 'the README values table is stale').toBe(out.readme);
  });

  it('close every object of the schema, so typos are refused', () => {
    const schema = JSON.parse(readFileSync(join(chartDir, 'values.schema.json'), 'utf8'));
    const open: string[] = [];
    type Node = { type?: string; properties?: Record<string, Node>; additionalProperties?: unknown };
    const walk = (s: Node, path: string) => {
      if (s.type === 'object' && s.properties) {
        if (s.additionalProperties !== false) open.push(path);
        for (const [k, v] of Object.entries(s.properties)) walk(v, `${path}.${k}`);
      }
    };
    walk(schema, '');
    expect(open).toEqual([]);
    expect(schema.additionalProperties).toBe(false);
  });
});
