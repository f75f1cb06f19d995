// The MCP client's pure parts: tool names and filters, credential redaction, the breaker's
// backoff and cool-down (an injected clock), result formatting and the prompt identity's tool
// fingerprint (a changed MCP tool list changes the identity; no MCP tools leave it as it was).
import { describe, expect, it } from 'vitest';
import { capMcpText, formatCallResult, mcpToolName, mcpToolset, promptIdentity, redactCredentials, ServerBreaker, toolWanted } from '../../../services/agent/index.js';
import type { CompiledAgent } from '../../../services/core/index.js';

describe('MCP names and filters', () => {
  it('names tools mcp_<server>_<tool> in toolset mcp-<server>', () => {
    expect(mcpToolName('github', 'search_issues')).toBe('mcp_github_search_issues');
    expect(mcpToolset('github')).toBe('mcp-github');
  });

  it('include is an allow-list, exclude wins over it', () => {
    expect(toolWanted({}, 'a')).toBe(true);
    expect(toolWanted({ include: ['a'] }, 'b')).toBe(false);
    expect(toolWanted({ include: ['a', 'b'], exclude: ['b'] }, 'b')).toBe(false);
    expect(toolWanted({ exclude: ['b'] }, 'a')).toBe(true);
  });
});

describe('credential redaction', () => {
  it('masks the values we sent (and a bearer token alone) and credential-shaped strings', () => {
    const text = 'denied for Bearer abcdef123456 and key s3cr3t-key-value; token abcdef123456 at https://u:p@x.example/?api_key=zzz9 ghp_0123456789abcdefXYZ';
    const out = redactCredentials(text, ['Bearer abcdef123456', 's3cr3t-key-value']);
    expect(out).not.toMatch(/abcdef123456|s3cr3t-key-value|zzz9|u:p@|ghp_0123/);
    expect(out).toContain('api_key=[REDACTED]');
  });

  it('leaves ordinary text alone', () => {
    expect(redactCredentials('the file was not found', ['Bearer abcdef123456'])).toBe('the file was not found');
  });
});

describe('the per-server breaker', () => {
  it('backs off 1 s, 2 s, then opens for 60 s (doubling), and closes on success', () => {
    let now = 0;
    const b = new ServerBreaker(() => now);
    expect(b.refusal()).toBeUndefined();
    b.failed('ECONNREFUSED');
    expect(b.refusal()).toMatch(/next attempt in 1 s \(last error: ECONNREFUSED\)/);
    now += 1_000;
    expect(b.refusal()).toBeUndefined();
    b.failed('ECONNREFUSED');
    expect(b.refusal()).toMatch(/next attempt in 2 s/);
    now += 2_000;
    b.failed('ECONNREFUSED');
    expect(b.open).toBe(true);
    expect(b.refusal()).toMatch(/failed 3 times in a row; its circuit breaker is open for another 60 s/);
    now += 60_000;
    expect(b.refusal()).toBeUndefined();
    b.failed('still down');
    expect(b.refusal()).toMatch(/open for another 120 s/);
    now += 120_000;
    b.succeeded();
    expect(b.open).toBe(false);
    expect(b.refusal()).toBeUndefined();
  });
});

describe('MCP results', () => {
  it('joins text parts, names images, shows resources, falls back to structured content', () => {
    expect(formatCallResult({ content: [{ type: 'text', text: 'a' }, { type: 'image', mimeType: 'image/png', data: 'AAAA' }, { type: 'resource', resource: { uri: 'file:///x', text: 'inline' } }] }))
      .toEqual({ text: 'a\n[image image/png, 3 bytes, not shown]\ninline', isError: false });
    expect(formatCallResult({ content: [], structuredContent: { n: 1 } })).toEqual({ text: '{"n":1}', isError: false });
    expect(formatCallResult({ content: [{ type: 'text', text: 'bad' }], isError: true })).toEqual({ text: 'bad', isError: true });
  });

  it('caps at 50 000 characters', () => {
    expect(capMcpText('x'.repeat(50_000))).toBe('x'.repeat(50_000));
    expect(capMcpText('x'.repeat(50_001))).toMatch(/^x{50000}\n\[truncated: the MCP result had 50,001 characters/);
  });
});

describe('prompt identity and MCP tools', () => {
  const agent = { model: { provider: 'openai', model: 'm' } } as CompiledAgent;
  it('changes with the MCP tools\' fingerprint and stays as before without one', () => {
    const base = promptIdentity({ agent, toolNames: ['get_time'] });
    expect(promptIdentity({ agent, toolNames: ['get_time'], toolsVersion: 'a' })).not.toBe(base);
    expect(promptIdentity({ agent, toolNames: ['get_time'], toolsVersion: 'a' })).not.toBe(promptIdentity({ agent, toolNames: ['get_time'], toolsVersion: 'b' }));
    expect(promptIdentity({ agent, toolNames: ['get_time'] })).toBe(base);
  });
});
