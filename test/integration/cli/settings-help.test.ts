// `hermes gateway --help` (and worker, dev, operator) as an operator reads it before writing a
// Deployment: the settings were listed only under `hermes --help`, all of them together, and each
// long-running command's help showed nothing but -h. Now each lists the settings it reads, each
// line generated from the one schema in services/core/config.ts. The operator's help lacked what it
// reads outside that schema (KUBECONFIG, POD_NAME, POD_NAMESPACE): now listed from clusterSettings.
import { describe, expect, it } from 'vitest';
import { clusterSettings, configSchema } from '../../../services/core/config.js';
import { runHermes } from '../../support/cli.js';

/** The setting names a help text lists, with their descriptions. */
function listedSettings(help: string): Map<string, string> {
  const after = help.split(/\nSettings \(environment variables\) that hermes \w+ reads:\n/)[1] ?? '';
  return new Map([...after.matchAll(/^ {2}([A-Z][A-Z0-9_]+) +(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
}

describe('hermes <long-running command> --help lists the settings that command reads', () => {
  it('gateway, worker, dev and operator each list theirs, from the schema', async () => {
    const [gateway, worker, dev, operator] = await Promise.all(['gateway', 'worker', 'dev', 'operator'].map((c) => runHermes([c, '--help'])));
    for (const r of [gateway, worker, dev, operator]) expect(r!.code).toBe(0);
    const g = listedSettings(gateway!.stdout), w = listedSettings(worker!.stdout), d = listedSettings(dev!.stdout), o = listedSettings(operator!.stdout);
    // Each line is the schema's own description.
    for (const listed of [g, w, d, o]) {
      for (const [name, doc] of listed) expect(doc, name).toBe(clusterSettings[name]?.description ?? configSchema.shape[name as keyof typeof configSchema.shape].description);
    }
    expect([...g.keys()]).toEqual(expect.arrayContaining(['DATABASE_URL', 'REDIS_URL', 'HERMES_PORT', 'HERMES_HOST', 'HERMES_ADMIN_TOKEN', 'HERMES_REPLY_WAIT_SECONDS', 'HERMES_KANBAN_DISPATCH']));
    expect(g.has('HERMES_WORKER_PORT') || g.has('HERMES_TURN_CONCURRENCY') || g.has('HERMES_SANDBOX_IMAGE')).toBe(false);
    expect([...w.keys()]).toEqual(expect.arrayContaining(['DATABASE_URL', 'REDIS_URL', 'HERMES_WORKER_PORT', 'HERMES_TURN_CONCURRENCY', 'HERMES_SECRETS_SOURCE', 'HERMES_SANDBOX_IMAGE', 'HERMES_SHUTDOWN_GRACE_SECONDS']));
    expect(w.has('HERMES_PORT') || w.has('HERMES_ADMIN_TOKEN') || w.has('HERMES_DEV_MANIFESTS')).toBe(false);
    expect([...o.keys()]).toEqual(expect.arrayContaining(['DATABASE_URL', 'HERMES_LOG_LEVEL', 'KUBECONFIG', 'POD_NAME', 'POD_NAMESPACE']));
    expect(g.has('KUBECONFIG') && w.has('KUBECONFIG') && !g.has('POD_NAME') && !w.has('POD_NAMESPACE')).toBe(true);
    expect(o.has('HERMES_PORT') || o.has('HERMES_WORKER_PORT')).toBe(false);
    // hermes dev runs a gateway and a worker: theirs, and its own.
    expect([...d.keys()]).toEqual(expect.arrayContaining([...g.keys(), ...w.keys(), 'HERMES_DEV_MANIFESTS', 'HERMES_DEV_API_KEY']));
    expect(g.has('HERMES_DEV_MANIFESTS') || w.has('HERMES_DEV_API_KEY')).toBe(false);
    // Every setting is read by some long-running command.
    expect(new Set([...g.keys(), ...w.keys(), ...d.keys(), ...o.keys()])).toEqual(new Set([...Object.keys(configSchema.shape), ...Object.keys(clusterSettings)]));
  });
});
