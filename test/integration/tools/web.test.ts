// The web toolset against real local servers: the SSRF guard's every refusal path (literal
// addresses, schemes, credentials, internal names, DNS failure, redirects to private addresses,
// too many redirects, DNS rebinding), headers dropped on cross-origin redirects, HTML → Markdown,
// PDF → text, the byte cap and deadline, the three search providers, and web_extract's summary rule.
// The guard allows 127.0.0.2/32 as if it were public; the private server on 127.0.0.1 (same port)
// counts every request that should never have reached it.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  addressRefusal, guardedFetch, pageText, UrlRefused, urlGuard, webAccess, webExtractTool, webSearch, webSearchTool,
  type SearchSettings, type UrlGuard, type WebAccess,
} from '../../../services/agent/index.js';
import { startWebPair, testResolver, tinyPdf, type FakeServer } from '../../support/fake-web.js';
import { callJson, toolContext } from './helpers.js';

let pub: FakeServer;
let priv: FakeServer;
let guard: UrlGuard;
let dns: ReturnType<typeof testResolver>;
const limits = { maxBytes: 1_000_000, timeoutMs: 5_000 };
const signal = () => new AbortController().signal;
const at = (host: string, path: string) => `http://${host}:${pub.port}${path}`;

beforeAll(async () => {
  ({ pub, priv } = await startWebPair());
  dns = testResolver();
  guard = urlGuard({ allowCidrs: ['127.0.0.2/32'], resolve: dns.resolve });
  // The private server answers anything (so a leak would succeed, not 404).
  priv.routes.set('/', (_r, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('internal secrets'));
  priv.routes.set('/latest/meta-data', (_r, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('iam credentials'));
  pub.routes.set('/hello', (_r, res) => res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('hello from the public web'));
  pub.routes.set('/to-loopback', (_r, res) => res.writeHead(302, { location: `http://127.0.0.1:${pub.port}/` }).end());
  pub.routes.set('/to-internal', (_r, res) => res.writeHead(301, { location: `http://internal.test:${pub.port}/latest/meta-data` }).end());
  pub.routes.set('/to-metadata', (_r, res) => res.writeHead(307, { location: 'http://169.254.169.254/latest/meta-data' }).end());
  pub.routes.set('/to-file', (_r, res) => res.writeHead(302, { location: 'file:///etc/passwd' }).end());
  for (let i = 0; i < 10; i++) pub.routes.set(`/hop/${i}`, (r, res) => {
    const left = Number(new URL(r.url, 'http://x').searchParams.get('n'));
    res.writeHead(302, { location: left > 1 ? `/hop/${i + 1}?n=${left - 1}` : '/hello' }).end();
  });
  pub.routes.set('/cross', (_r, res) => res.writeHead(307, { location: at('other.test', '/landing') }).end());
  pub.routes.set('/same', (_r, res) => res.writeHead(302, { location: '/landing' }).end());
  pub.routes.set('/landing', (_r, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('landed'));
});

afterAll(async () => {
  await guard.close();
  await pub.close();
  await priv.close();
});

afterEach(() => {
  // Whatever a test tried, the private server never saw a request (the control test resets it).
  expect(priv.seen).toEqual([]);
});

async function refused(url: string, g: UrlGuard = guard): Promise<UrlRefused> {
  const err = await guardedFetch(g, url, limits, signal()).then(() => undefined, (e: unknown) => e);
  expect(err, url).toBeInstanceOf(UrlRefused);
  return err as UrlRefused;
}

describe('SSRF guard: addresses', () => {
  it('passes only global unicast (and the allowed range); judges IPv4-mapped IPv6 as its IPv4', () => {
    const none: never[] = [];
    expect(addressRefusal('93.184.216.34', none)).toBeUndefined();
    expect(addressRefusal('2606:4700::1111', none)).toBeUndefined();
    for (const a of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '255.255.255.255', '224.0.0.1',
      '::1', '::', 'fe80::1', 'fd00::1', 'fc00::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '64:ff9b::a00:1', '2002:a00:1::1', 'ff02::1',
      // IPv4-compatible (deprecated ::/96) and other space outside 2000::/3: web_extract tried to connect to [::127.0.0.1]
      '::127.0.0.1', '::a00:1', '1::1', '4000::1']) {
      expect(addressRefusal(a, none), a).toMatch(/only public addresses/);
    }
    expect(addressRefusal('not-an-ip', none)).toMatch(/not an IP address/);
  });

  it('refuses literal loopback, private, link-local (metadata), ULA, IPv4-mapped and CGNAT URLs before any connection', async () => {
    for (const host of ['127.0.0.1', '10.0.0.1', '192.168.0.10', '172.20.0.1', '169.254.169.254', '[fd00::1]', '[::ffff:127.0.0.1]', '[::1]', '100.64.0.7', '0.0.0.0', '2130706433', '0x7f.1']) {
      const err = await refused(`http://${host}:${pub.port}/`);
      expect(err.reason, host).toMatch(/(loopback|private|linkLocal|uniqueLocal|carrierGradeNat|unspecified) address/);
    }
  });

  it('refuses other schemes and URLs with credentials', async () => {
    for (const url of ['file:///etc/passwd', 'ftp://public.test/x', 'gopher://public.test:70/', 'data:text/plain,hi', 'javascript:alert(1)']) {
      expect((await refused(url)).reason, url).toMatch(/only http and https/);
    }
    expect((await refused(at('user:pw@public.test', '/hello'))).reason).toMatch(/credentials/);
    expect((await refused('not a url')).reason).toMatch(/not a valid absolute URL/);
  });

  it('refuses internal names without resolving them', async () => {
    const before = dns.asked.length;
    for (const host of ['localhost', 'LOCALHOST.', 'app.localhost', 'metadata.google.internal', 'metadata', 'instance-data.ec2.internal']) {
      expect((await refused(`http://${host}:${pub.port}/`)).reason, host).toMatch(/internal name/);
    }
    expect(dns.asked.length).toBe(before);
  });

  it('refuses names resolving to private, link-local or mixed addresses at connect time', async () => {
    expect((await refused(at('internal.test', '/'))).reason).toMatch(/127\.0\.0\.1 is a loopback address/);
    expect((await refused(at('ten.test', '/'))).reason).toMatch(/10\.0\.0\.1 is a private address/);
    expect((await refused(at('metadata-ish.test', '/'))).reason).toMatch(/169\.254\.169\.254 is a linkLocal address/);
    expect((await refused(at('mixed.test', '/'))).reason).toMatch(/127\.0\.0\.1 is a loopback/);
  });

  it('fails closed when the name does not resolve (error or no address)', async () => {
    expect((await refused(at('nowhere.test', '/'))).reason).toMatch(/does not resolve.*fail closed/);
    expect((await refused(at('empty.test', '/'))).reason).toMatch(/does not resolve/);
  });

  it('fetches a public name through the guard', async () => {
    const page = await guardedFetch(guard, at('public.test', '/hello'), limits, signal());
    expect(page.status).toBe(200);
    expect(page.body.toString()).toBe('hello from the public web');
    expect(page.url).toBe(at('public.test', '/hello'));
  });
});

describe('SSRF guard: redirects and rebinding', () => {
  it('re-checks every redirect hop: to a loopback literal, to an internal name, to the metadata address, to file:', async () => {
    expect((await refused(at('public.test', '/to-loopback'))).reason).toMatch(/loopback/);
    expect((await refused(at('public.test', '/to-internal'))).reason).toMatch(/loopback/);
    expect((await refused(at('public.test', '/to-metadata'))).reason).toMatch(/linkLocal/);
    expect((await refused(at('public.test', '/to-file'))).reason).toMatch(/only http and https/);
    expect(pub.seen.filter((r) => r.url.startsWith('/to-')).length).toBe(4);
  });

  it('follows at most 5 redirects', async () => {
    const five = await guardedFetch(guard, at('public.test', '/hop/0?n=5'), limits, signal());
    expect(five.body.toString()).toBe('hello from the public web');
    expect((await refused(at('public.test', '/hop/0?n=6'))).reason).toMatch(/more than 5 redirects/);
  });

  it('closes DNS rebinding: the address checked is the address connected to, so the private server is never reached', async () => {
    const fresh = urlGuard({ allowCidrs: ['127.0.0.2/32'], resolve: dns.resolve }, { pipelining: 0, keepAliveTimeout: 1 });
    try {
      const outcomes: string[] = [];
      for (let i = 0; i < 6; i++) {
        // Each request opens a new connection (the server closes it), so each one resolves anew.
        const r = await guardedFetch(fresh, at('rebind.test', '/hello'), limits, signal(), { headers: { connection: 'close' } })
          .then((p) => p.body.toString(), (e: unknown) => (e instanceof UrlRefused ? 'refused' : `error: ${String(e)}`));
        outcomes.push(r);
      }
      expect(outcomes).toContain('hello from the public web');
      expect(outcomes).toContain('refused');
      expect(outcomes.every((o) => o === 'hello from the public web' || o === 'refused')).toBe(true);
    } finally {
      await fresh.close();
    }
  });

  it('(control) the private server does count what reaches it: a guard that allows 127.0.0.1 gets through', async () => {
    const open = urlGuard({ allowCidrs: ['127.0.0.0/8'], resolve: dns.resolve });
    try {
      const page = await guardedFetch(open, at('public.test', '/to-internal'), limits, signal());
      expect(page.body.toString()).toBe('iam credentials');
      expect(priv.seen.length).toBe(1);
    } finally {
      priv.seen.length = 0;
      await open.close();
    }
  });

  it('drops request headers (a provider key) on a cross-origin redirect, keeps them on a same-origin one', async () => {
    pub.seen.length = 0;
    await guardedFetch(guard, at('public.test', '/cross'), limits, signal(), { headers: { authorization: 'Bearer sk-provider-key' } });
    const landing = pub.seen.find((r) => r.url === '/landing')!;
    expect(landing.headers.host).toBe(`other.test:${pub.port}`);
    expect(landing.headers.authorization).toBeUndefined();
    pub.seen.length = 0;
    await guardedFetch(guard, at('public.test', '/same'), limits, signal(), { headers: { authorization: 'Bearer sk-provider-key' } });
    expect(pub.seen.find((r) => r.url === '/landing')!.headers.authorization).toBe('Bearer sk-provider-key');
  });
});

describe('page extraction', () => {
  const article = `<!doctype html><html><head><title>Tide tables</title><script>window.steal = document.cookie</script><style>p{color:red}</style></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>How tides work</h1>
${Array.from({ length: 6 }, (_, i) => `<p>Paragraph ${i}: the moon's gravity pulls the oceans into two bulges, and the Earth turns beneath them, giving most coasts two high tides a day.</p>`).join('\n')}
<ul><li>Spring tides</li><li>Neap tides</li></ul><script>alert('x')</script></article>
<footer>© Coast Inc</footer></body></html>`;

  beforeAll(() => {
    pub.routes.set('/article', (_r, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(article));
    pub.routes.set('/doc.pdf', (_r, res) => res.writeHead(200, { 'content-type': 'application/pdf' }).end(tinyPdf('Quarterly report: revenue grew 12 percent')));
    pub.routes.set('/image', (_r, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.from([0x89, 0x50, 0x4e, 0x47])));
    pub.routes.set('/big', (_r, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(200_000)));
    pub.routes.set('/big.pdf', (_r, res) => res.writeHead(200, { 'content-type': 'application/pdf' }).end(Buffer.concat([tinyPdf('big'), Buffer.alloc(5_000, 32)])));
    pub.routes.set('/slow', (_r, res) => { res.writeHead(200, { 'content-type': 'text/plain' }); res.write('start'); });
  });

  const access = (over: Partial<Parameters<typeof webAccess>[0]> = {}) => webAccess({ guard, limits, maxChars: 20_000, summariseAboveChars: 5_000, ...over });

  it('turns HTML into Markdown of the article, without scripts, styles or navigation', async () => {
    const page = await access().extract(at('public.test', '/article'), signal());
    expect(page.kind).toBe('html');
    expect(page.title).toMatch(/Tide tables|How tides work/);
    expect(page.content).toMatch(/Paragraph 0: the moon's gravity pulls the oceans/);
    expect(page.content).toMatch(/^-\s+Spring tides$/m);
    expect(page.content).not.toMatch(/steal|cookie|alert|color:red/);
    expect(page.content).not.toMatch(/Coast Inc|About/);
  });

  it('turns a PDF into text', async () => {
    const page = await access().extract(at('public.test', '/doc.pdf'), signal());
    expect(page.kind).toBe('pdf');
    expect(page.content).toMatch(/Quarterly report: revenue grew 12 percent/);
  });

  it('refuses an unsupported content type with the type in the message', async () => {
    await expect(access().extract(at('public.test', '/image'), signal())).rejects.toThrow(/content of type "image\/png" cannot be read as text/);
    await expect(pageText({ url: 'u', status: 200, contentType: 'application/octet-stream', body: Buffer.from([0, 1, 2]), truncated: false })).rejects.toThrow(/application\/octet-stream/);
  });

  it('reads at most the byte cap: text is cut and marked, a PDF over the cap is refused', async () => {
    const capped = access({ limits: { ...limits, maxBytes: 1_000 } });
    const page = await capped.extract(at('public.test', '/big'), signal());
    expect(page.content.length).toBe(1_000);
    expect(page.truncated).toBe(true);
    await expect(capped.extract(at('public.test', '/big.pdf'), signal())).rejects.toThrow(/larger than the download limit/);
  });

  it('gives up at the deadline, and says why a fetch failed', async () => {
    // /slow never finishes its body: only the 0.3 s deadline can end this fetch (no wall-clock check needed).
    await expect(guardedFetch(guard, at('public.test', '/slow'), { ...limits, timeoutMs: 300 }, signal())).rejects.toThrow(/slow did not answer within 0.3 s/);
    // Nothing listens on a port just freed (127.0.0.2 is allowed, so the connection is tried and refused by the OS).
    const gone = await new Promise<number>((resolve) => { const s = createServer().listen(0, '127.0.0.2', () => { const p = (s.address() as AddressInfo).port; s.close(() => resolve(p)); }); });
    await expect(guardedFetch(guard, `http://127.0.0.2:${gone}/`, limits, signal())).rejects.toThrow(new RegExp(`could not fetch http://127\\.0\\.0\\.2:${gone}/: ECONNREFUSED`));
    // The caller's own abort (a /stop) passes as it is.
    const stop = new AbortController();
    const pending = guardedFetch(guard, at('public.test', '/slow'), limits, stop.signal);
    setTimeout(() => stop.abort(new Error('stopped by /stop')), 50);
    await expect(pending).rejects.toThrow(/stopped by \/stop/);
  });

  it('reads a hostile page off the event loop and gives up on it at the deadline', async () => {
    // 3 000 nested <div>s (36 KB) keep Readability busy for many minutes; on the event loop that
    // froze the whole worker (every other turn, lease and heartbeat). Now the worker's timers run
    // while the page is read, and the read ends at the deadline with a reason.
    const depth = 3_000;
    pub.routes.set('/nested', (_r, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><body>${'<div>'.repeat(depth)}deep${'</div>'.repeat(depth)}</body></html>`));
    let ticks = 0;
    const ticker = setInterval(() => { ticks++; }, 20);
    try {
      const tight = access({ limits: { ...limits, timeoutMs: 1_500 } });
      await expect(tight.extract(at('public.test', '/nested'), signal())).rejects.toThrow(/could not be read within 1.5 s \(too large or too deeply nested\)/);
      expect(ticks).toBeGreaterThan(0);
      // The caller's abort (a /stop) ends the read too, with its own reason.
      const stop = new AbortController();
      const pending = access().extract(at('public.test', '/nested'), stop.signal);
      setTimeout(() => stop.abort(new Error('stopped by /stop')), 300);
      await expect(pending).rejects.toThrow(/stopped by \/stop/);
      // At most two pages are read at once per process (each reader may take a core and 512 MB):
      // a third waits for a free reader, and its deadline starts only when it is read.
      const order: string[] = [];
      const note = (name: string) => (v: unknown) => { order.push(name); return v; };
      await Promise.all([
        tight.extract(at('public.test', '/nested'), signal()).catch(note('nested 1')),
        tight.extract(at('public.test', '/nested'), signal()).catch(note('nested 2')),
        new Promise((r) => setTimeout(r, 200)).then(() => tight.extract(at('public.test', '/hello'), signal())).then(note('hello')),
      ]);
      expect(order.at(-1)).toBe('hello');
    } finally {
      clearInterval(ticker);
    }
  }, 30_000);
});

describe('web_extract tool', () => {
  const long = `<html><head><title>Long read</title></head><body><article>${Array.from({ length: 80 }, (_, i) => `<p>Section ${i} explains one more detail of the topic at some length, so the page grows long.</p>`).join('')}</article></body></html>`;
  beforeAll(() => {
    pub.routes.set('/long', (_r, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(long));
  });

  function withSummary(): { web: WebAccess; calls: { text: string; url: string }[] } {
    const calls: { text: string; url: string }[] = [];
    const web = webAccess({
      guard, limits, maxChars: 2_000, summariseAboveChars: 1_000,
      summarise: (text, page) => { calls.push({ text, url: page.url }); return Promise.resolve(`SUMMARY of ${page.title ?? page.url}`); },
    });
    return { web, calls };
  }

  it('summarises a page above the limit, passes a short one whole, and reports blocked URLs per URL', async () => {
    const { web, calls } = withSummary();
    const out = await callJson(webExtractTool, { urls: [at('public.test', '/long'), at('public.test', '/hello'), 'http://169.254.169.254/latest/meta-data'] }, toolContext({ web }));
    const [longPage, short, blocked] = out.results as Record<string, unknown>[];
    expect(longPage).toMatchObject({ summarised: true, content: 'SUMMARY of Long read' });
    expect((longPage!.chars as number) > 1_000).toBe(true);
    expect(calls.length).toBe(1);
    expect(calls[0]!.text).toMatch(/Section 79 explains/);
    expect(short).toMatchObject({ content: 'hello from the public web', kind: 'text' });
    expect(short!.summarised).toBeUndefined();
    expect(blocked).toMatchObject({ url: 'http://169.254.169.254/latest/meta-data' });
    expect(blocked!.error).toMatch(/^blocked: .*linkLocal/);
  });

  it('cuts a long page at maxChars when no summary can be had', async () => {
    const web = webAccess({ guard, limits, maxChars: 1_500, summariseAboveChars: 1_000 });
    const out = await callJson(webExtractTool, { urls: [at('public.test', '/long')] }, toolContext({ web }));
    const [page] = out.results as Record<string, unknown>[];
    expect((page!.content as string).length).toBe(1_500);
    expect(page!.note).toMatch(/cut at 1500 characters/);
    const failing = webAccess({ guard, limits, maxChars: 1_500, summariseAboveChars: 1_000, summarise: () => Promise.reject(new Error('spend cap reached')) });
    const [again] = (await callJson(webExtractTool, { urls: [at('public.test', '/long')] }, toolContext({ web: failing }))).results as Record<string, unknown>[];
    expect(again!.note).toMatch(/summary unavailable \(spend cap reached\); cut at 1500/);
  });

  it('takes at most 5 URLs and refuses without web access', async () => {
    const { web } = withSummary();
    const six = await webExtractTool.schema.safeParseAsync({ urls: Array.from({ length: 6 }, () => at('public.test', '/hello')) });
    expect(six.success).toBe(false);
    expect(await callJson(webExtractTool, { urls: [at('public.test', '/hello')] }, toolContext())).toMatchObject({ error: expect.stringMatching(/not configured/) });
    expect((await callJson(webExtractTool, { urls: [at('public.test', '/hello')] }, toolContext({ web }))).results).toHaveLength(1);
  });
});

describe('search providers', () => {
  const KEY = 'tvly-secret-key-123';
  beforeAll(() => {
    pub.routes.set('/searxng/search', (r, res) => {
      const q = new URL(r.url, 'http://x').searchParams;
      if (q.get('format') !== 'json') return void res.writeHead(400).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results: [
        { title: `About ${q.get('q')}`, url: 'https://a.example/1', content: 'first' },
        { title: 'Two', url: 'https://a.example/2', content: 'second' },
        { title: 'Three', url: 'https://a.example/3', content: 'third' },
      ] }));
    });
    pub.routes.set('/tavily/search', (r, res) => {
      if (r.method !== 'POST' || r.headers.authorization !== `Bearer ${KEY}`) return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"detail":"Unauthorized"}');
      const body = JSON.parse(r.body) as { query: string; max_results: number };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results: [{ title: `T: ${body.query}`, url: 'https://t.example', content: `max ${body.max_results}` }] }));
    });
    pub.routes.set('/brave/res/v1/web/search', (r, res) => {
      if (r.headers['x-subscription-token'] !== KEY) return void res.writeHead(401).end('{"error":"invalid token"}');
      const q = new URL(r.url, 'http://x').searchParams;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ web: { results: [{ title: `B: ${q.get('q')}`, url: 'https://b.example', description: `count ${q.get('count')}` }] } }));
    });
  });

  const http = (url: string, request?: Parameters<typeof guardedFetch>[4]) => guardedFetch(guard, url, limits, signal(), request);
  const search = (s: SearchSettings, query = 'tides', limit = 2) => webSearch(s, http, query, limit);

  it('SearXNG: the JSON API, limited to `limit` results', async () => {
    const results = await search({ provider: 'searxng', url: at('public.test', '/searxng') });
    expect(results).toEqual([{ title: 'About tides', url: 'https://a.example/1', snippet: 'first' }, { title: 'Two', url: 'https://a.example/2', snippet: 'second' }]);
    await expect(search({ provider: 'searxng' })).rejects.toThrow(/needs a url/);
  });

  it('Tavily: POST with the bearer key; Brave: the X-Subscription-Token key', async () => {
    expect(await search({ provider: 'tavily', url: at('public.test', '/tavily'), apiKey: KEY }, 'moon', 3)).toEqual([{ title: 'T: moon', url: 'https://t.example', snippet: 'max 3' }]);
    expect(await search({ provider: 'brave', url: at('public.test', '/brave'), apiKey: KEY }, 'sun', 4)).toEqual([{ title: 'B: sun', url: 'https://b.example', snippet: 'count 4' }]);
    await expect(search({ provider: 'brave', url: at('public.test', '/brave') })).rejects.toThrow(/needs an API key/);
  });

  it('a refused key is a clear error that does not contain the key', async () => {
    for (const provider of ['tavily', 'brave'] as const) {
      const err = await search({ provider, url: at('public.test', `/${provider}`), apiKey: 'wrong-key-abc' }).then(() => undefined, (e: unknown) => e as Error);
      expect(err?.message).toMatch(/refused the API key \(HTTP 401\)/);
      expect(err?.message).not.toContain('wrong-key-abc');
    }
  });

  it('the provider URL passes the guard too', async () => {
    await expect(search({ provider: 'searxng', url: 'http://10.0.0.5:8080' })).rejects.toBeInstanceOf(UrlRefused);
  });

  it('web_search tool: results as JSON; errors as the error text', async () => {
    const web = webAccess({ guard, limits, maxChars: 20_000, summariseAboveChars: 5_000, search: () => Promise.resolve({ provider: 'searxng', url: at('public.test', '/searxng') }) });
    const out = await callJson(webSearchTool, { query: 'tides', limit: 1 }, toolContext({ web }));
    expect(out).toEqual({ query: 'tides', results: [{ title: 'About tides', url: 'https://a.example/1', snippet: 'first' }] });
    const noSearch = webAccess({ guard, limits, maxChars: 20_000, summariseAboveChars: 5_000 });
    expect((await callJson(webSearchTool, { query: 'x' }, toolContext({ web: noSearch }))).error).toMatch(/no search provider/);
  });
});
