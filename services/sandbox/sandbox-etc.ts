// The sandbox's /etc: a tiny synthetic folder written by the worker, never the host's /etc.
// It names the sandbox user, localhost and how to look names up; with network it also carries
// the host's resolv.conf. Host files with no secrets (the loader cache, Debian's alternatives
// symlinks, CA certificates) are bound over empty mount points it provides.
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The sandbox user's uid/gid inside the user namespace. */
export const SANDBOX_INNER_ID = 1000;
export const SANDBOX_HOSTNAME = 'sandbox';

/** Host paths bound read-only into the synthetic /etc when present (no secrets in any of them). */
export const ETC_HOST_BINDS = ['/etc/ld.so.cache', '/etc/alternatives', '/etc/ssl/certs'] as const;
/** Host symlinks copied as symlinks (their targets live under /usr). */
const ETC_SYMLINKS = ['/etc/localtime', '/etc/os-release'] as const;

function files(network: boolean, resolvConf: string): Record<string, string> {
  const id = SANDBOX_INNER_ID;
  return {
    passwd: `root:x:0:0:root:/root:/usr/sbin/nologin\nsandbox:x:${id}:${id}:sandbox:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nsandbox:x:${id}:\nnogroup:x:65534:\n`,
    hosts: `127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t${SANDBOX_HOSTNAME}\n`,
    hostname: `${SANDBOX_HOSTNAME}\n`,
    'nsswitch.conf': `passwd: files\ngroup: files\nshadow: files\nhosts: files${network ? ' dns' : ''}\nnetworks: files\nprotocols: files\nservices: files\n`,
    ...(network ? { 'resolv.conf': resolvConf } : {}),
  };
}

function writeIfChanged(path: string, content: string): void {
  if (existsSync(path) && readFileSync(path, 'utf8') === content) return;
  writeFileSync(path, content, { mode: 0o644 });
}

/**
 * Writes (idempotently) the /etc folder for sandboxes with or without network under `dir` and
 * returns its path. The folder and its files are the worker's, world-readable, read-only inside.
 */
export function ensureSandboxEtc(dir: string, network: boolean): string {
  const etc = join(dir, network ? 'etc-network' : 'etc-offline');
  mkdirSync(etc, { recursive: true, mode: 0o755 });
  const resolvConf = network && existsSync('/etc/resolv.conf') ? readFileSync('/etc/resolv.conf', 'utf8') : '';
  for (const [name, content] of Object.entries(files(network, resolvConf))) writeIfChanged(join(etc, name), content);
  for (const host of ETC_HOST_BINDS) {
    const point = join(etc, host.slice('/etc/'.length));
    if (existsSync(point) || !existsSync(host)) continue;
    if (lstatSync(host).isDirectory()) mkdirSync(point, { recursive: true, mode: 0o755 });
    else writeIfChanged(point, '');
  }
  for (const host of ETC_SYMLINKS) {
    const link = join(etc, host.slice('/etc/'.length));
    try {
      const target = readlinkSync(host);
      if (existsSync(link) || lstatSync(link, { throwIfNoEntry: false })) {
        if (readlinkSync(link) === target) continue;
        rmSync(link);
      }
      symlinkSync(target, link);
    } catch {
      // absent, or a plain file on this host: the sandbox goes without it
    }
  }
  return etc;
}
