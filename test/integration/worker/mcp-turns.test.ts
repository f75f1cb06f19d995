// MCP servers in real worker turns (Postgres, Redis, the fake model, a real MCP server built with
// the SDK): the Profile's server tools are offered as mcp_<server>_<tool> (the excluded one not),
// called with the header read from a Secret; a tool list change (notifications/tools/list_changed)
// rebuilds the session's stored prompt once — the next turn keeps it; a platform's narrowed
// toolsets leave a server out; a server the SSRF guard refuses offers nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { urlGuard } from '../../../services/agent/index.js';
import { createMcpDeps } from '../../../services/worker/index.js';
import type { CompiledAgent } from '../../../services/core/index.js';
import { lastUser, toldResult, toolsAsTold } from '../../support/fake-openai.js';
import { startFakeMcp, type FakeMcp } from '../../support/fake-mcp.js';
import { eventually } from '../../support/services.js';
import { createTestAgent, runTurn, useAgentSystem } from '../../support/system.js';

const TOKEN = 'Bearer mcp-secret-token-5566778899';
const now = 1_000_000;
const sys = useAgentSystem(toolsAsTold, {
  loop: { webGuard: urlGuard({ allowCidrs: ['127.0.0.1/32'] }), mcp: createMcpDeps({ now: () => now }) },
  secrets: [{ namespace: 'default', name: 'mcp', data: { token: TOKEN } }],
});

let mcp: FakeMcp;
beforeAll(async () => { mcp = await startFakeMcp(); });
afterAll(async () => { await mcp?.stop(); });

const servers = (over: Partial<NonNullable<CompiledAgent['mcpServers']>[number]> = {}): CompiledAgent['mcpServers'] =>
  [{ name: 'fake', transport: 'http', url: mcp.url, headerRefs: { authorization: { name: 'mcp', key: 'token' } }, exclude: ['private_op'], ...over }];

const offered = (content: string) => {
  const req = sys.model.requests.filter((r) => lastUser(r.body) === content).at(-1);
  return (req?.body.tools ?? []).map((t) => t.function.name).filter((n) => n.startsWith('mcp_')).sort();
};

async function storedPrompt(sessionKey: string): Promise<{ identity: string; text: string }> {
  const { rows } = await sys.rt.db.pool.query<{ identity: string; text: string }>('SELECT prompt_identity AS identity, system_prompt AS text FROM sessions WHERE session_key = $1', [sessionKey]);
  return rows[0]!;
}

describe('MCP servers in worker turns', () => {
  it('offers the server\'s tools, calls them with the Secret\'s header, and rebuilds the stored prompt once when the tool list changes', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'mcp-user' }, mcpServers: servers() });
    const sessionKey = `${agentId}:u`;
    const say = (content: string) => runTurn(sys.rt, { agentId, sessionKey, content });

    const echo = `tool mcp_fake_echo ${JSON.stringify({ text: 'from a turn' })}`;
    expect(toldResult((await say(echo)).reply)).toEqual({ result: 'echo: from a turn' });
    expect(offered(echo)).toEqual(['mcp_fake_big', 'mcp_fake_echo', 'mcp_fake_leak', 'mcp_fake_slow']);
    expect(mcp.seen.filter((r) => r.method === 'POST').every((r) => r.headers.authorization === TOKEN)).toBe(true);
    const first = await storedPrompt(sessionKey);

    await say('hello');
    expect(await storedPrompt(sessionKey)).toEqual(first); // same tools: the stored prompt is reused

    const lists = mcp.methods.filter((m) => m === 'tools/list').length;
    mcp.addTool({ name: 'weather', description: 'The weather.', reply: 'sunny' });
    await eventually(() => mcp.methods.filter((m) => m === 'tools/list').length > lists, 'the worker re-read the tool list');
    // The fake sees the request before the worker has the answer: a turn in another session (the
    // connection is the agent's, shared by its sessions) shows when the worker offers the new tool.
    let probes = 0;
    await eventually(async () => {
      const probe = `probe ${++probes}`;
      await runTurn(sys.rt, { agentId, sessionKey: `${agentId}:probe`, content: probe });
      return offered(probe).includes('mcp_fake_weather') || undefined;
    }, 'the worker offers the new tool');
    const weather = 'tool mcp_fake_weather {}';
    expect(toldResult((await say(weather)).reply)).toEqual({ result: 'sunny' });
    expect(offered(weather)).toContain('mcp_fake_weather');
    const rebuilt = await storedPrompt(sessionKey);
    expect(rebuilt.identity).not.toBe(first.identity);

    await say('and again');
    expect(await storedPrompt(sessionKey)).toEqual(rebuilt); // rebuilt once, not every turn
    // The leaky tool's error reaches the model masked.
    const leak = toldResult((await say('tool mcp_fake_leak {}')).reply);
    expect(leak.error).toMatch(/credentials \[REDACTED\]/);
    expect(JSON.stringify(leak)).not.toContain('mcp-secret-token');
  });

  it('gives tools that would share a name distinct names, so each call reaches its own tool', async () => {
    // "get.item" and "get_item" (one server), and server "dup_get"'s "item" all came out as
    // mcp_dup_get_item: the model got three tools of one name and every call ran the last one.
    const dup = await startFakeMcp();
    try {
      for (const [name, reply] of [['get.item', 'from get.item'], ['get_item', 'from get_item'], ['item', 'from item']] as const) dup.addTool({ name, description: reply, reply });
      const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
        agent: { namespace: 'default', name: 'mcp-dup' },
        mcpServers: [{ name: 'dup', transport: 'http', url: dup.url, include: ['get.item', 'get_item'] }, { name: 'dup_get', transport: 'http', url: dup.url, include: ['item'] }],
      });
      const sessionKey = `${agentId}:u`;
      await runTurn(sys.rt, { agentId, sessionKey, content: 'list' });
      const tools = sys.model.requests.filter((r) => lastUser(r.body) === 'list').at(-1)!.body.tools!.filter((t) => t.function.name.startsWith('mcp_'));
      const names = tools.map((t) => t.function.name);
      expect(new Set(names).size).toBe(3);
      for (const t of tools) {
        expect(t.function.name).toMatch(/^mcp_dup_get_item_[0-9a-f]{8}$/);
        const reply = (await runTurn(sys.rt, { agentId, sessionKey, content: `tool ${t.function.name} {}` })).reply;
        expect(toldResult(reply)).toEqual({ result: t.function.description!.replace(/^\[MCP [a-z_]+\] /, '') });
      }
      expect(dup.calls.sort()).toEqual(['get.item', 'get_item', 'item']);
    } finally {
      await dup.stop();
    }
  });

  it('leaves the server out where the platform narrows the toolsets (the signed webhook\'s default set)', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'mcp-narrowed' }, mcpServers: servers(),
    });
    const msg = `tool mcp_fake_echo ${JSON.stringify({ text: 'narrowed' })}`;
    const calls = mcp.calls.length;
    await runTurn(sys.rt, { agentId, sessionKey: `${agentId}:w`, content: msg, platform: 'webhook' });
    expect(offered(msg)).toEqual([]);
    expect(mcp.calls.length).toBe(calls);
  });

  it('offers nothing from a server the SSRF guard refuses (a metadata address), and the turn still answers', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'mcp-metadata' }, mcpServers: servers({ name: 'meta', url: 'http://169.254.169.254/mcp' }),
    });
    const msg = 'tool mcp_meta_echo {}';
    const { reply } = await runTurn(sys.rt, { agentId, sessionKey: `${agentId}:u`, content: msg });
    expect(offered(msg)).toEqual([]);
    expect(reply).toMatch(/Unknown tool|mcp_meta_echo/);
  });
});
