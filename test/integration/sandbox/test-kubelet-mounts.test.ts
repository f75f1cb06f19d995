// The test kubelet's containers mount as a container runtime does: parents before children, so a
// Pod's emptyDir at /tmp does not hide a read-only path below it (the install test maps the chart's
// image to the checkout; a checkout cloned under /tmp must stay visible in a Pod that mounts /tmp).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startSandbox } from '../../support/kube/sandbox.js';

const root = mkdtempSync(join(tmpdir(), 'kubelet-mounts-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

it('keeps a read-only path under /tmp visible when the Pod mounts an emptyDir at /tmp', async () => {
  const checkout = join(root, 'checkout');
  const emptyDir = join(root, 'empty-dir');
  mkdirSync(checkout);
  mkdirSync(emptyDir);
  writeFileSync(join(checkout, 'marker'), 'the checkout');
  const logFile = join(root, 'log');
  const sandbox = startSandbox({
    argv: ['/bin/sh', '-c', `cat ${join(checkout, 'marker')} && echo written > /tmp/out`],
    env: {}, hostname: 'mounts', workingDir: '/', workdirSource: join(root, 'workdir'), network: false, logFile,
    // The image's read-only paths first, the Pod's volumes after — as startPodProcess lists them.
    binds: [{ source: checkout, target: checkout, readOnly: true }, { source: emptyDir, target: '/tmp', readOnly: false }],
  });
  expect(await sandbox.exited, readFileSync(logFile, 'utf8')).toBe(0);
  expect(readFileSync(logFile, 'utf8')).toContain('the checkout');
  expect(readFileSync(join(emptyDir, 'out'), 'utf8')).toBe('written\n');
});
