import { readdirSync, readFileSync } from 'node:fs';

/**
 * PIDs of host processes whose argv contains `arg` exactly (read from /proc), so a test can
 * check a sandboxed process really is gone rather than trusting the kubelet's word for it.
 */
export function pidsWithArg(arg: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv.includes(arg)) pids.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return pids;
}
