// `hermes operator` as a platform engineer types it (the real binary): a namespace or object name
// that Kubernetes would never accept is refused by name with exit 1, before the operator starts —
// `--namespace Bad_NS` used to start and silently watch nothing.
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

  it('takes valid names and goes on to the next check (a cluster to talk to)', async () => {
    const r = await hermes('operator', '--namespace', 'team-a', '--lease-name', 'hermes.operator', '--runtime-secret', 'hermes-runtime');
    expect(r.stderr).not.toContain('is invalid');
    expect(r.code).not.toBe(0);
  });
});
