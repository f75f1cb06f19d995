// The MCP stdio transport over a sandbox line channel (sandbox/types.ts SandboxChannel): the
// server process runs inside the session's sandbox — never in the worker — and its standard input
// and output carry one JSON-RPC message per line, as MCP's stdio transport frames them. Its
// standard error is kept by the channel (capped) and named when the process ends unexpectedly.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { MAX_TIMEOUT_SECONDS, type ExecResult, type SandboxChannel, type SessionSandbox } from '../../sandbox/index.js';
import { shq } from '../tools/shell-quote.js';

/** Starts the server process with a line channel; every line it writes goes to `onLine`. */
export type SandboxChannelOpener = (onLine: (line: string) => void) => Promise<SandboxChannel>;

/** Why the process ended, for the error the pending request gets (its stderr tail included). */
export function channelEnded(r: ExecResult, stderr: string): string {
  const how = r.status === 'ok' ? `exited with code ${r.exitCode}` : r.status === 'timeout' ? 'was stopped at the sandbox\'s time limit'
    : r.status === 'interrupted' ? 'was stopped' : `could not run in the sandbox: ${r.reason ?? 'unknown reason'}`;
  const tail = stderr.trim().slice(-500);
  return `the stdio server process ${how}${tail ? ` (stderr: ${tail})` : ''}`;
}

export class SandboxChannelTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private channel?: SandboxChannel;
  private closed = false;

  constructor(private readonly open: SandboxChannelOpener) {}

  async start(): Promise<void> {
    if (this.channel) throw new Error('SandboxChannelTransport already started');
    const channel = this.channel = await this.open((line) => this.receive(line));
    void channel.done.then((r) => {
      if (!this.closed) this.onerror?.(new Error(channelEnded(r, channel.output().text)));
      this.finish();
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (!this.channel || this.closed) return Promise.reject(new Error('the stdio server process is not running'));
    this.channel.send(JSON.stringify(message));
    return Promise.resolve();
  }

  close(): Promise<void> {
    if (this.channel && !this.closed) {
      this.closed = true;
      // MCP's stdio shutdown: close the server's stdin; the sandbox kills what is left.
      this.channel.end();
      this.channel.kill();
    }
    this.finish();
    return Promise.resolve();
  }

  private receive(line: string): void {
    if (!line.trim()) return;
    try {
      this.onmessage?.(JSONRPCMessageSchema.parse(JSON.parse(line)));
    } catch (err) {
      this.onerror?.(new Error(`the stdio server wrote a line that is not a JSON-RPC message: ${(err as Error).message.slice(0, 200)}`));
    }
  }

  private finished = false;
  private finish(): void {
    this.closed = true;
    if (this.finished) return;
    this.finished = true;
    this.onclose?.();
  }
}

/**
 * A stdio server's process as a sandbox channel of `sandbox` (the session's): `command` with
 * `args`, each one shell word, run by the sandbox's shell with `exec` (the server is the
 * process, no shell stays behind). It lives until the connection closes or `signal` ends it,
 * at most the sandbox's longest foreground time (600 s); after that the next call reconnects.
 */
export function sandboxStdioOpener(sandbox: SessionSandbox, server: { command: string; args?: readonly string[] }, signal: AbortSignal,
  env: Record<string, string>): SandboxChannelOpener {
  const open = sandbox.open?.bind(sandbox);
  const line = ['exec', shq(server.command, 'the command'), ...(server.args ?? []).map((a) => shq(a, 'an argument'))].join(' ');
  return (onLine) => {
    if (!open) return Promise.reject(new Error(`the ${sandbox.backend} sandbox has no channel for a stdio server`));
    return open({ command: line, env, timeoutMs: MAX_TIMEOUT_SECONDS * 1_000, maxOutputChars: STDERR_KEPT, onLine }, signal);
  };
}

/** How much of a stdio server's stderr is kept (its last lines name why it ended). */
const STDERR_KEPT = 16_000;
