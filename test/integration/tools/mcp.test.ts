// The MCP client against a real MCP server built with the same SDK (test/support/fake-mcp.ts):
// streamable HTTP and SSE, tools named mcp_<server>_<tool> with include/exclude, headers sent,
// the SSRF guard in front of every request, results capped at 50 000 characters, the call
// timeout, credentials redacted from error text, a lost connection re-opened after backoff, the
// circuit breaker's cool-down (an injected clock: no real waits), tools/list_changed, and the pool.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  guardedMcpFetch, McpConnection, McpPool, mcpServerTools, mcpToolName, urlGuard, MCP_MAX_RESULT_CHARS,
  type McpServerSettings, type Tool, type UrlGuard,
} from '../../../services/agent/index.js';
import { startFakeMcp, type FakeMcp } from '../../support/fake-mcp.js';
import { eventually } from '../../support/services.js';
import { callJson, toolContext } from './helpers.js';

const TOKEN = 'Bearer mcp-token-0123456789abcdef';
const API_KEY = 'key-from-a-secret-42';

let mcp: FakeMcp;
let guard: UrlGuard;
let now = 1_000_000;
const opened: McpConnection[] = [];

beforeAll(async () => {
  mcp = await startFakeMcp();
  guard = urlGuard({ allowCidrs: ['127.0.0.1/32'] });
});
afterAll(async () => {
  await mcp.stop();
  await guard.close();
});
afterEach(async () => {
  mcp.release();
  mcp.requireAuth = undefined;
  if (!(await fetch(mcp.url, { method: 'OPTIONS' }).then(() => true, () => false))) await mcp.start();
  await Promise.all(opened.splice(0).map((c) => c.close()));
});

function connection(over: Partial<McpServerSettings> = {}, deps: { guard?: UrlGuard; onToolsChanged?: () => void; headers?: Record<string, string>; maxBytes?: number } = {}): McpConnection {
  const conn = new McpConnection({ name: 'fake', transport: 'http', url: mcp.url, ...over }, {
    headers: () => Promise.resolve(deps.headers ?? { authorization: TOKEN, 'x-api-key': API_KEY }),
    fetch: guardedMcpFetch(deps.guard ?? guard, deps.maxBytes),
    now: () => now,
    ...(deps.onToolsChanged ? { onToolsChanged: deps.onToolsChanged } : {}),
  });
  opened.push(conn);
  return conn;
}

const byName = (tools: Tool[], name: string) => tools.find((t) => t.name === name)!;
const run = async (tools: Tool[], name: string, args: Record<string, unknown> = {}) => callJson(byName(tools, name), args, toolContext());

describe('MCP client: tools', () => {
  it('lists the server\'s tools as mcp_<server>_<tool> in toolset mcp-<server>, with its JSON Schema, and calls them with the headers', async () => {
    const tools = await mcpServerTools(connection());
    expect(tools.map((t) => t.name)).toEqual(['mcp_fake_big', 'mcp_fake_echo', 'mcp_fake_leak', 'mcp_fake_private_op', 'mcp_fake_slow']);
    const echo = byName(tools, 'mcp_fake_echo');
    expect(echo.toolset).toBe('mcp-fake');
    expect(echo.description).toBe('[MCP fake] Echo the text back.');
    expect(echo.parameters).toMatchObject({ type: 'object', properties: { text: { type: 'string' } }, required: ['text'] });
    expect(await run(tools, 'mcp_fake_echo', { text: 'hello' })).toEqual({ result: 'echo: hello' });
    const post = mcp.seen.filter((r) => r.method === 'POST').at(-1)!;
    expect(post.headers.authorization).toBe(TOKEN);
    expect(post.headers['x-api-key']).toBe(API_KEY);
  });

  it('offers only the included tools, minus the excluded ones', async () => {
    const tools = await mcpServerTools(connection({ include: ['echo', 'private_op', 'big'], exclude: ['private_op'] }));
    expect(tools.map((t) => t.name)).toEqual(['mcp_fake_big', 'mcp_fake_echo']);
    const all = await mcpServerTools(connection({ name: 'other', exclude: ['private_op', 'leak'] }));
    expect(all.map((t) => t.name)).toEqual(['mcp_other_big', 'mcp_other_echo', 'mcp_other_slow']);
  });

  it('speaks the older HTTP+SSE transport too', async () => {
    const tools = await mcpServerTools(connection({ transport: 'sse', url: mcp.sseUrl }));
    expect(await run(tools, 'mcp_fake_echo', { text: 'over sse' })).toEqual({ result: 'echo: over sse' });
    expect(mcp.seen.some((r) => r.method === 'GET' && r.path === '/sse')).toBe(true);
  });

  it('caps a result at 50 000 characters with a notice', async () => {
    const tools = await mcpServerTools(connection());
    const { result } = await run(tools, 'mcp_fake_big', { chars: 70_000 }) as { result: string };
    expect(result.startsWith('x'.repeat(MCP_MAX_RESULT_CHARS))).toBe(true);
    expect(result.slice(MCP_MAX_RESULT_CHARS)).toMatch(/^\n\[truncated: the MCP result had 70,000 characters; the first 50,000 are shown/);
    expect(result.replace(/[^x]/g, '').length).toBe(MCP_MAX_RESULT_CHARS);
  });

  it('reads an answer only up to the byte limit, over streamable HTTP and SSE: a huge one fails the call, not the worker\'s memory', async () => {
    // The SDK buffers an answer whole before the 50 000-character cap applies: a server streaming
    // 400 MB took a worker to 2 GB. Here the limit is 100 000 bytes and the answer 200 000 characters.
    for (const over of [{}, { name: 'fakesse', transport: 'sse' as const, url: mcp.sseUrl }]) {
      const tools = await mcpServerTools(connection(over, { maxBytes: 100_000 }));
      const prefix = over.name ? 'mcp_fakesse' : 'mcp_fake';
      const out = await run(tools, `${prefix}_big`, { chars: 200_000 });
      expect(out.error).toMatch(/^MCP server fake(sse)? failed: .*the MCP server's answer is larger than 100,000 bytes/);
      // An answer under the limit still comes through whole (after the reconnect the failure asks for).
      now += 60_000;
      expect(await run(tools, `${prefix}_big`, { chars: 50_000 })).toEqual({ result: 'x'.repeat(50_000) });
    }
  });

  it('keeps names the model APIs accept: over-long ones are cut with a hash', () => {
    const long = mcpToolName('server', 'a'.repeat(80));
    expect(long.length).toBe(64);
    expect(long).not.toBe(mcpToolName('server', `${'a'.repeat(79)}b`));
    expect(mcpToolName('my-srv', 'do.thing/now')).toBe('mcp_my-srv_do_thing_now');
  });
});

describe('MCP client: the SSRF guard', () => {
  it('refuses a server on a loopback address unless the install allows the range: no request reaches it', async () => {
    const strict = urlGuard({ allowCidrs: [] });
    try {
      const seen = mcp.seen.length;
      const conn = connection({}, { guard: strict });
      expect(await mcpServerTools(conn)).toEqual([]);
      now += 1_000;
      const err = await conn.call('echo', { text: 'x' }, new AbortController().signal).then(() => new Error("the call succeeded"), (e: unknown) => e as Error);
      expect(err.message).toMatch(/MCP server fake could not be reached: .*127\.0\.0\.1 is a loopback address/);
      expect(mcp.seen.length).toBe(seen);
    } finally {
      await strict.close();
    }
  });
});

describe('MCP client: failures', () => {
  it('ends a call at the call timeout with a clear error', async () => {
    const tools = await mcpServerTools(connection({ callTimeoutMs: 300 }));
    const out = await run(tools, 'mcp_fake_slow');
    expect(out.error).toBe('MCP server fake did not answer within 0.3 s');
    // The server is told to stop the call (notifications/cancelled), not left to finish it for nobody.
    await eventually(() => mcp.methods.includes('notifications/cancelled') || undefined, 'the server got notifications/cancelled');
  });

  it('redacts the credentials it sent from a tool\'s error and from a refused connect', async () => {
    const tools = await mcpServerTools(connection());
    const out = await run(tools, 'mcp_fake_leak') as { error: string };
    expect(out.error).toMatch(/^upstream refused the credentials \[REDACTED\] \(x-api-key \[REDACTED\]\)$/);
    expect(out.error).not.toContain('mcp-token-0123456789abcdef');
    expect(out.error).not.toContain(API_KEY);

    mcp.requireAuth = 'Bearer the-right-one';
    const refused = connection({ name: 'authz' }, { headers: { authorization: 'Token wrong-but-secret-9876' } });
    expect(await mcpServerTools(refused)).toEqual([]);
    now += 1_000;
    const err = await refused.call('echo', {}, new AbortController().signal).then(() => new Error("the call succeeded"), (e: unknown) => e as Error);
    expect(err.message).toMatch(/^MCP server authz could not be reached: .*invalid credentials: \[REDACTED\]$/);
    expect(err.message).not.toContain('wrong-but-secret-9876');
    expect(mcp.seen.at(-1)!.headers.authorization).toBe('Token wrong-but-secret-9876'); // it was sent: the error text is what is masked
  });

  it('drops a lost connection and re-opens it on a later call, after the backoff', async () => {
    const conn = connection();
    const tools = await mcpServerTools(conn);
    expect(await run(tools, 'mcp_fake_echo', { text: 'one' })).toEqual({ result: 'echo: one' });
    await mcp.stop();
    const lost = await run(tools, 'mcp_fake_echo', { text: 'two' }) as { error: string };
    expect(lost.error).toMatch(/^MCP server fake failed: .*; it is reconnected on the next call$/);
    expect(conn.connected).toBe(false);
    await mcp.start();
    const seen = mcp.seen.length;
    expect((await run(tools, 'mcp_fake_echo', { text: 'three' })).error).toMatch(/reconnecting after a failure, next attempt in 1 s/);
    expect(mcp.seen.length).toBe(seen); // the backoff holds: nothing was sent
    now += 1_000;
    expect(await run(tools, 'mcp_fake_echo', { text: 'four' })).toEqual({ result: 'echo: four' });
    expect(conn.connected).toBe(true);
  });

  it('opens the circuit after 3 failures in a row: nothing is tried during the cool-down, then it recovers', async () => {
    const conn = connection();
    await mcpServerTools(conn);
    await mcp.stop();
    const signal = new AbortController().signal;
    const fail = () => conn.call('echo', { text: 'x' }, signal).catch((e: unknown) => (e as Error).message);
    expect(await fail()).toMatch(/failed/); // 1: the call on the dropped server
    now += 1_000;
    expect(await fail()).toMatch(/could not be reached/); // 2: reconnect refused
    now += 2_000;
    expect(await fail()).toMatch(/could not be reached/); // 3: the circuit opens
    expect(conn.breaker.open).toBe(true);
    await mcp.start();
    const seen = mcp.seen.length;
    now += 30_000;
    expect(await fail()).toMatch(/failed 3 times in a row; its circuit breaker is open for another 30 s/);
    expect(mcp.seen.length).toBe(seen);
    now += 30_000;
    expect(await conn.call('echo', { text: 'back' }, signal)).toEqual({ text: 'echo: back', isError: false });
    expect(conn.breaker.open).toBe(false);
  });
});

describe('MCP client: tool list changes', () => {
  it('re-reads the list on notifications/tools/list_changed and reports the change once', async () => {
    let changes = 0;
    const conn = connection({}, { onToolsChanged: () => { changes++; } });
    const before = await mcpServerTools(conn);
    const version = conn.listVersion;
    mcp.addTool({ name: 'weather', description: 'The weather.', reply: 'sunny' });
    const after = await eventually(async () => {
      const tools = await mcpServerTools(conn);
      return tools.length > before.length ? tools : undefined;
    }, 'the new tool listed');
    expect(after.map((t) => t.name)).toContain('mcp_fake_weather');
    expect(await run(after, 'mcp_fake_weather')).toEqual({ result: 'sunny' });
    expect(conn.listVersion).not.toBe(version);
    expect(changes).toBe(1);
  });
});

describe('MCP connection pool', () => {
  it('is bounded (the least recently used connection is closed) and closes idle connections', async () => {
    const pool = new McpPool({ now: () => now, max: 2, idleMs: 60_000, sweepEveryMs: 0 });
    try {
      const a = pool.get('a', () => connection({ name: 'a' }));
      await mcpServerTools(a);
      const b = pool.get('b', () => connection({ name: 'b' }));
      expect(pool.get('a', () => connection({ name: 'never' }))).toBe(a); // a is now the most recent
      pool.get('c', () => connection({ name: 'c' }));
      expect(pool.size).toBe(2);
      await expect(b.call('echo', {}, new AbortController().signal)).rejects.toThrow(/no longer configured/);
      expect(a.connected).toBe(true);
      // A call running holds the connection past the idle time; after it, the idle clock restarts.
      const tools = await mcpServerTools(a);
      const slowCalls = mcp.calls.filter((c) => c === 'slow').length;
      const slow = run(tools, 'mcp_a_slow');
      await eventually(() => mcp.calls.filter((c) => c === 'slow').length > slowCalls, 'the slow call running on the server');
      expect(a.inFlight).toBe(1);
      now += 60_000;
      await pool.sweep();
      expect(pool.size).toBe(1);
      mcp.release();
      expect(await slow).toEqual({ result: 'slow done' });
      now += 59_000;
      await pool.sweep();
      expect(pool.size).toBe(1);
      now += 1_000;
      await pool.sweep();
      expect(pool.size).toBe(0);
      expect(a.connected).toBe(false);
    } finally {
      await pool.close();
    }
  });
});
