// One MCP server as a worker reaches it: a client over streamable HTTP or SSE whose every request
// goes through the guarded fetch (the SSRF guard, as the web tools), connected on first use within
// the connect timeout, its tool list kept (and re-read on notifications/tools/list_changed or a
// reconnect), calls under the call timeout and the caller's abort. A lost connection is dropped and
// re-opened on the next use, after the breaker's backoff; failures in a row open the breaker.
// Headers (from Secrets) are read at each connect; their values are masked in every error text.
// A stdio server (transport stdio) is a process in the session's sandbox, reached over the
// sandbox's line channel (sandbox-transport.ts): never a process of the worker; its env values
// (from Secrets) are masked like headers.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike, Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ErrorCode, McpError, ToolListChangedNotificationSchema, type Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { ServerBreaker, type BreakerOptions } from './breaker.js';
import { answerTooLarge } from './fetch.js';
import { redactCredentials } from './redact.js';
import { formatCallResult } from './result.js';
import { SandboxChannelTransport, type SandboxChannelOpener } from './sandbox-transport.js';

export interface McpServerSettings {
  /** The Profile's name of the server (tool names: mcp_<name>_<tool>). */
  name: string;
  transport: 'http' | 'sse' | 'stdio';
  /** http and sse: the endpoint. */
  url?: string;
  include?: readonly string[];
  exclude?: readonly string[];
  /** @defaultValue 300 000 */
  callTimeoutMs?: number;
  /** @defaultValue 60 000 */
  connectTimeoutMs?: number;
}

export interface McpConnectionDeps {
  /** The request headers, read at each connect (values from Secrets). */
  headers: () => Promise<Record<string, string>>;
  /** Every request of the transport goes through this (the SSRF-guarded fetch). */
  fetch: FetchLike;
  /**
   * stdio: starts the server process in the session's sandbox with these environment variables
   * (values from Secrets) and a line channel. Absent: a stdio server cannot be reached.
   */
  openStdio?: (env: Record<string, string>) => SandboxChannelOpener;
  /** stdio: the server's environment, read at each connect (values from Secrets). */
  env?: () => Promise<Record<string, string>>;
  now: () => number;
  breaker?: BreakerOptions;
  /** A breaker kept outside the connection (a stdio server's, across the turns of a session); else its own. */
  sharedBreaker?: ServerBreaker;
  /** The server's tool list changed (after a notification or a reconnect). */
  onToolsChanged?: () => void;
}

/** The MCP call failed; the message is redacted and says what to do. */
export class McpUnavailable extends Error {
  override name = 'McpUnavailable';
}

export const MCP_CONNECT_TIMEOUT_MS = 60_000;
export const MCP_CALL_TIMEOUT_MS = 300_000;

export class McpConnection {
  private client?: Client;
  private connecting?: Promise<Client>;
  private list: McpTool[] = [];
  private secrets: string[] = [];
  /** What the transport last reported (a stdio process's exit and stderr), named in the next error. */
  private transportError = '';
  /** Changes whenever the tool list does (a stable prompt identity otherwise). */
  listVersion = '';
  readonly breaker: ServerBreaker;
  private closed = false;
  /** Calls running now, and when the last one started or ended (the pool never closes a busy connection). */
  inFlight = 0;
  lastUsedAt = 0;

  constructor(readonly server: McpServerSettings, private readonly deps: McpConnectionDeps) {
    this.breaker = deps.sharedBreaker ?? new ServerBreaker(deps.now, deps.breaker);
  }

  get connected(): boolean {
    return this.client !== undefined;
  }

  /** Text safe to show: our header values and credential-shaped strings masked. */
  redact(text: string): string {
    return redactCredentials(text, this.secrets);
  }

  /**
   * The server's tools (the last list known while it is unreachable: the model keeps the same
   * tools and their calls say why they fail). Connects first when needed and the breaker allows.
   */
  async tools(signal?: AbortSignal): Promise<McpTool[]> {
    if (!this.client && !this.breaker.refusal()) await this.connect(signal).catch(() => undefined);
    return this.list;
  }

  /** Calls `tool` (the server's name): the result as text for the model (capped), or throws McpUnavailable / the tool's error. */
  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<{ text: string; isError: boolean }> {
    this.inFlight++;
    this.lastUsedAt = this.deps.now();
    try {
      return await this.callOnce(tool, args, signal);
    } finally {
      this.inFlight--;
      this.lastUsedAt = this.deps.now();
    }
  }

  private async callOnce(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<{ text: string; isError: boolean }> {
    const client = await this.connect(signal);
    const timeout = this.server.callTimeoutMs ?? MCP_CALL_TIMEOUT_MS;
    try {
      const res = await client.callTool({ name: tool, arguments: args }, undefined, { timeout, signal });
      this.breaker.succeeded();
      return formatCallResult(res);
    } catch (err) {
      signal.throwIfAborted();
      if (err instanceof McpError && err.code !== ErrorCode.RequestTimeout && err.code !== ErrorCode.ConnectionClosed) {
        // The server answered with a protocol error (unknown tool, bad arguments): it is up.
        throw new McpUnavailable(this.redact(`MCP server ${this.server.name} refused the call: ${err.message}`));
      }
      const timedOut = err instanceof McpError && err.code === ErrorCode.RequestTimeout;
      const closed = err instanceof McpError && err.code === ErrorCode.ConnectionClosed && this.transportError;
      const why = timedOut ? `did not answer within ${timeout / 1_000} s` : `failed: ${closed ? this.transportError : messageOf(err)}`;
      // A call that timed out is one failed call, not a lost connection: the SDK is sending the
      // server notifications/cancelled over it, which closing it now would cut off. Only a server
      // that keeps timing out (its breaker opens) is dropped and reconnected later.
      if (timedOut) {
        this.breaker.failed(this.redact(why));
        if (this.breaker.open) this.drop();
      } else this.lost(why);
      throw new McpUnavailable(this.redact(`MCP server ${this.server.name} ${why}${timedOut ? '' : '; it is reconnected on the next call'}`));
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    await client?.close().catch(() => undefined);
  }

  /** Drops the connection after a failure (the next use reconnects, after the breaker's backoff). */
  private lost(why: string): void {
    this.breaker.failed(this.redact(why));
    this.drop();
  }

  private drop(): void {
    const client = this.client;
    this.client = undefined;
    void client?.close().catch(() => undefined);
  }

  private connect(signal?: AbortSignal): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    if (this.closed) return Promise.reject(new McpUnavailable(`MCP server ${this.server.name} is no longer configured`));
    const refusal = this.breaker.refusal();
    if (refusal) return Promise.reject(new McpUnavailable(this.redact(`MCP server ${this.server.name} is unavailable: ${refusal}`)));
    this.connecting ??= this.open(signal).finally(() => { this.connecting = undefined; });
    return this.connecting;
  }

  private async open(signal?: AbortSignal): Promise<Client> {
    const timeout = this.server.connectTimeoutMs ?? MCP_CONNECT_TIMEOUT_MS;
    const client = new Client({ name: 'hermes-operator', version: '1.0.0' });
    try {
      const stdio = this.server.transport === 'stdio';
      const values = stdio ? await (this.deps.env?.() ?? Promise.resolve({})) : await this.deps.headers();
      this.secrets = Object.values(values);
      this.transportError = '';
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => { void this.refreshTools(client); });
      client.onerror = (e) => {
        // An event stream cut at the byte limit leaves its request waiting for an answer that is
        // gone (the SDK reports the stream, not the request): close, so the call (or connect) fails now.
        const tooLarge = answerTooLarge(e.message);
        this.transportError = this.redact(tooLarge ?? e.message);
        if (!tooLarge) return;
        if (this.client === client) this.client = undefined;
        void client.close().catch(() => undefined);
      };
      await client.connect(stdio ? this.stdioTransport(values) : this.transport(values), { timeout, ...(signal ? { signal } : {}) });
      await this.readTools(client, timeout);
    } catch (err) {
      await client.close().catch(() => undefined);
      const timedOut = err instanceof McpError && err.code === ErrorCode.RequestTimeout;
      const why = timedOut ? `did not connect within ${timeout / 1_000} s` : `could not be reached: ${this.transportError || messageOf(err)}`;
      if (!signal?.aborted) this.breaker.failed(this.redact(why));
      throw new McpUnavailable(this.redact(`MCP server ${this.server.name} ${why}`));
    }
    this.breaker.succeeded();
    client.onclose = () => { if (this.client === client) this.client = undefined; };
    this.client = client;
    return client;
  }

  private stdioTransport(env: Record<string, string>): Transport {
    if (!this.deps.openStdio) throw new Error('stdio servers run only in the session\'s sandbox, and this turn has none');
    return new SandboxChannelTransport(this.deps.openStdio(env));
  }

  private transport(headers: Record<string, string>): Transport {
    if (!this.server.url) throw new Error('no url');
    const url = new URL(this.server.url);
    const opts = { fetch: this.deps.fetch, requestInit: { headers } };
    return this.server.transport === 'sse' ? new SSEClientTransport(url, opts) : new StreamableHTTPClientTransport(url, opts);
  }

  private async readTools(client: Client, timeout: number): Promise<void> {
    const all: McpTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const res = await client.listTools(cursor ? { cursor } : undefined, { timeout });
      all.push(...res.tools);
      cursor = res.nextCursor;
      if (!cursor) break;
    }
    all.sort((a, b) => a.name.localeCompare(b.name));
    const version = JSON.stringify(all.map((t) => [t.name, t.description ?? '', t.inputSchema]));
    this.list = all;
    if (version !== this.listVersion) {
      const first = this.listVersion === '';
      this.listVersion = version;
      if (!first) this.deps.onToolsChanged?.();
    }
  }

  private async refreshTools(client: Client): Promise<void> {
    await this.readTools(client, this.server.connectTimeoutMs ?? MCP_CONNECT_TIMEOUT_MS).catch((err: unknown) => {
      if (this.client === client) this.lost(`re-reading its tool list failed: ${messageOf(err)}`);
    });
  }
}

function messageOf(err: unknown): string {
  let e: unknown = err;
  const parts: string[] = [];
  for (let i = 0; e && i < 4; i++, e = (e as { cause?: unknown }).cause) {
    const m = (e as { code?: string; message?: string });
    parts.push(`${m.code && typeof m.code === 'string' ? `${m.code} ` : ''}${m.message ?? String(e)}`);
  }
  return parts.join(': ').slice(0, 1_000);
}
