// `hermes operator` as a platform engineer types it (the real binary): a namespace or object name
// that Kubernetes would never accept is refused by name with exit 1, before the operator starts —
// `--namespace Bad_NS` used to start and silently watch nothing.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runHermes } from '../../support/cli.js';

// No KUBECONFIG and no database: a refused flag must stop before either is needed.
const hermes = (...args: string[]) => runHermes(args, { HOME: '/nonexistent' });

describe('hermes operator: Kubernetes names on the command line', () => {
  it('refuses each bad name by name with exit 1', async () => {
    const cases = [
      ['--namespace', 'Bad_NS'], ['-n', 'team.a'], ['--namespace', 'a'.repeat(64)], ['--lease-namespace', '-ops'],
      ['--lease-name', 'x y'], ['--runtime-secret', 'Runtime'],
    ] as const;
    const results = await Promise.all(cases.map(([flag, value]) => hermes('operator', flag, value)));
    cases.forEach(([flag, value], i) => {
      expect(results[i]!.code, `${flag} ${value}`).toBe(1);
      expect(results[i]!.stderr, `${flag} ${value}`).toContain(`argument '${value}' is invalid. expected a Kubernetes`);
    });
  });

  it('hermes skills import -n checks the namespace too: it printed a manifest with namespace Bad_NS', async () => {
    const r = await runHermes(['skills', 'import', 'examples/gitops-skill/source/release-notes', '-n', 'Bad_NS']);
    expect([r.code, r.stdout]).toEqual([1, '']);
    expect(r.stderr).toContain('argument \'Bad_NS\' is invalid. expected a Kubernetes namespace name');
    expect((await runHermes(['skills', 'import', 'examples/gitops-skill/source/release-notes', '-n', 'team-a'])).stdout).toContain('namespace: team-a');
  });

  it('hermes skills import names what a skill folder needs: a folder without SKILL.md said the raw ENOENT open …/SKILL.md', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'hermes-noskill-'));
    const file = join(empty, 'notes.txt');
    writeFileSync(file, 'x');
    const cases = [[empty, 'no SKILL.md file in this folder'], [join(empty, 'missing'), 'no such folder'], [file, 'not a folder']] as const;
    const results = await Promise.all(cases.map(([dir]) => runHermes(['skills', 'import', dir])));
    cases.forEach(([dir, said], i) => {
      const r = results[i]!;
      expect([r.code, r.stdout], dir).toEqual([2, '']);
      expect(r.stderr.trim(), dir).toBe(`${dir}: ${said} (expected a Hermes skill folder: SKILL.md (YAML front matter, then the instructions), optionally references/, templates/, scripts/, assets/)`);
    });
  });

  it('takes valid names and goes on to the next check (a cluster to talk to)', async () => {
    const r = await hermes('operator', '--namespace', 'team-a', '--lease-name', 'hermes.operator', '--runtime-secret', 'hermes-runtime');
    expect(r.stderr).not.toContain('is invalid');
    expect(r.code).not.toBe(0);
  });
});

describe('hermes operator: numbers on the command line', () => {
  // A resync past Node's longest timer (2^31 - 1 ms) fired at once, every time: the sandbox sweep
  // re-ran in a loop. These were checked only after a cluster was found, and a port or a number
  // that was not one reached the operator.
  it('refuses a bad number by flag with exit 1, before a cluster is needed', async () => {
    const cases = [
      ['--sandbox-resync-seconds', '3000000', 'a whole number of seconds from 0 to 2147483'], ['--sandbox-grace-seconds', '-5', 'a whole number of seconds from 0 to 2147483'],
      ['--workspace-ttl-seconds', '1e3', 'a whole number of seconds from 0 to'], ['--http-port', 'abc', 'a port number from 0 to 65535'], ['--http-port', '70000', 'a port number'],
    ] as const;
    const results = await Promise.all(cases.map(([flag, value]) => hermes('operator', flag, value)));
    cases.forEach(([flag, value, said], i) => {
      expect(results[i]!.code, `${flag} ${value}`).toBe(1);
      expect(results[i]!.stderr, `${flag} ${value}`).toContain(`argument '${value}' is invalid. expected ${said}`);
    });
  });
});

describe('hermes operator: a cluster config it cannot use', () => {
  it('says so in one line with exit 2 (a missing file, not YAML, no current cluster)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hermes-kubeconfig-'));
    writeFileSync(join(dir, 'broken'), 'garbage: [\n');
    writeFileSync(join(dir, 'empty'), 'apiVersion: v1\nkind: Config\n');
    const cases = [
      [join(dir, 'missing'), 'Cannot load the cluster config (KUBECONFIG='],
      [join(dir, 'broken'), 'Cannot load the cluster config (KUBECONFIG='],
      [join(dir, 'empty'), 'names no cluster'],
    ] as const;
    const results = await Promise.all(cases.map(([file]) => runHermes(['operator'], { HOME: '/nonexistent', KUBECONFIG: file, DATABASE_URL: 'postgresql://h@127.0.0.1:1/h' })));
    cases.forEach(([file, said], i) => {
      expect(results[i]!.code, file).toBe(2);
      expect(results[i]!.stderr.trim().split('\n'), file).toHaveLength(1);
      expect(results[i]!.stderr, file).toContain(said);
    });
  });
});
