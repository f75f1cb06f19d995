// The web toolset in real worker turns (Postgres, Redis, the fake model): web_search reaches the
// Profile's provider with the key read from a Secret; web_extract has a long page summarised by the
// turn's model (a model call recorded as task web_extract) and a short one passed whole; an agent
// without a search provider is not offered web_search; an env: key is never sent to a Profile url.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { urlGuard } from '../../../services/agent/index.js';
import { lastUser, toldResult, toolsAsTold, type ChatRequestBody } from '../../support/fake-openai.js';
import { startWebPair, testResolver, type FakeServer } from '../../support/fake-web.js';
import { createTestAgent, runTurn, useAgentSystem } from '../../support/system.js';

const KEY = 'tvly-from-a-secret';
const ENV_KEY = 'tvly-from-the-environment';
const isSummary = (b: ChatRequestBody) => b.messages[0]?.role === 'system' && b.messages[0].content.startsWith('You condense a web page');

let pub: FakeServer;
let priv: FakeServer;
const dns = testResolver();
const sys = useAgentSystem(
  (b) => (isSummary(b) ? { text: `PAGE DIGEST (${lastUser(b).length} chars read)` } : toolsAsTold(b)),
  {
    loop: { webGuard: urlGuard({ allowCidrs: ['127.0.0.2/32'], resolve: dns.resolve }) },
    secrets: [{ namespace: 'default', name: 'search', data: { key: KEY } }],
    env: { TAVILY_KEY: ENV_KEY },
  },
);

const at = (path: string) => `http://public.test:${pub.port}${path}`;

beforeAll(async () => {
  ({ pub, priv } = await startWebPair());
  pub.routes.set('/tavily/search', (r, res) => {
    if (r.headers.authorization !== `Bearer ${KEY}`) return void res.writeHead(401).end('{"detail":"Unauthorized"}');
    const body = JSON.parse(r.body) as { query: string };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results: [{ title: `Found: ${body.query}`, url: 'https://t.example/a', content: 'snippet' }] }));
  });
  pub.routes.set('/long', (_r, res) => res.writeHead(200, { 'content-type': 'text/html' })
    .end(`<html><head><title>Long read</title></head><body><article>${Array.from({ length: 60 }, (_, i) => `<p>Section ${i} explains one more detail of the topic at some length.</p>`).join('')}</article></body></html>`));
  pub.routes.set('/short', (_r, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('short and sweet'));
  pub.routes.set('/to-private', (_r, res) => res.writeHead(302, { location: `http://internal.test:${pub.port}/` }).end());
});

afterAll(async () => {
  await pub?.close();
  await priv?.close();
});

const toolNamesOffered = (content: string) => {
  const req = sys.model.requests.find((r) => lastUser(r.body) === content && !isSummary(r.body));
  return (req?.body.tools ?? []).map((t) => t.function.name).filter((n) => n.startsWith('web_')).sort();
};

describe('web tools in worker turns', () => {
  it('searches through the Profile\'s provider with the key from a Secret; summarises a long page as task web_extract; passes a short one whole; blocks a redirect to a private address', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'webby' }, toolsets: ['web'],
      web: { search: { provider: 'tavily', url: at('/tavily'), apiKeyRef: { name: 'search', key: 'key' } }, maxChars: 2_000, summariseAboveChars: 1_000 },
    });
    const say = (content: string) => runTurn(sys.rt, { agentId, sessionKey: `${agentId}:u`, content });

    const searchMsg = `tool web_search ${JSON.stringify({ query: 'tide tables', limit: 3 })}`;
    expect(toldResult((await say(searchMsg)).reply)).toEqual({ query: 'tide tables', results: [{ title: 'Found: tide tables', url: 'https://t.example/a', snippet: 'snippet' }] });
    expect(toolNamesOffered(searchMsg)).toEqual(['web_extract', 'web_search']);

    const { a, reply } = await say(`tool web_extract ${JSON.stringify({ urls: [at('/long'), at('/short'), at('/to-private')] })}`);
    const [long, short, blocked] = toldResult(reply).results as Record<string, unknown>[];
    expect(long).toMatchObject({ summarised: true, title: 'Long read', content: expect.stringMatching(/^PAGE DIGEST \(\d+ chars read\)$/) });
    expect(short).toMatchObject({ content: 'short and sweet' });
    expect(short!.summarised).toBeUndefined();
    expect(blocked!.error).toMatch(/^blocked: .*127\.0\.0\.1 is a loopback address/);
    const summaryCall = sys.model.requests.find((r) => isSummary(r.body))!;
    expect(lastUser(summaryCall.body)).toMatch(/Section 59 explains/);
    const { rows } = await sys.rt.db.pool.query<{ task: string }>('SELECT task FROM model_call_usage WHERE admission_id = $1 ORDER BY task', [a.id]);
    expect(rows.map((r) => r.task)).toEqual(['turn', 'turn', 'web_extract']);
    expect(priv.seen).toEqual([]);
  });

  it('does not offer web_search to an agent whose Profile names no provider', async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, { agent: { namespace: 'default', name: 'no-search' }, toolsets: ['web'] });
    const msg = `tool web_search ${JSON.stringify({ query: 'x' })}`;
    const { reply } = await runTurn(sys.rt, { agentId, sessionKey: `${agentId}:u`, content: msg });
    expect(toolNamesOffered(msg)).toEqual(['web_extract']);
    expect(reply).toMatch(/web_search/); // the loop answers the call of an unknown tool
    expect(reply).not.toMatch(/Found:/);
  });

  it('never sends an env: key to a url the Profile chose', async () => {
    pub.seen.length = 0;
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, {
      agent: { namespace: 'default', name: 'env-key' }, toolsets: ['web'],
      web: { search: { provider: 'tavily', url: at('/tavily'), apiKeyRef: { name: '', key: 'TAVILY_KEY' } } },
    });
    const { reply } = await runTurn(sys.rt, { agentId, sessionKey: `${agentId}:u`, content: `tool web_search ${JSON.stringify({ query: 'leak?' })}` });
    expect(toldResult(reply).error).toMatch(/comes from the environment \(env: TAVILY_KEY\) and is only sent to tavily's public API/);
    expect(reply).not.toContain(ENV_KEY);
    expect(pub.seen).toEqual([]);
  });
});
