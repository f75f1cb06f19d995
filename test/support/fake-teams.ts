// A fake Microsoft Teams / Bot Framework at the HTTP wire level, one local server playing three
// parts, each checked as the real one checks:
//   - the Bot Framework's OpenID metadata and JWKS (GET /v1/.well-known/openidconfiguration and
//     /v1/.well-known/keys), with an RSA key of its own; `token()` signs activity tokens with it
//     (or with a key it does not publish, or with wrong claims) as the Bot Connector signs them;
//   - the Microsoft identity platform's token endpoint (POST /<tenant>/oauth2/v2.0/token): client
//     credentials checked (app id, password, tenant, scope), an opaque token that expires;
//   - the Bot Connector (POST/PUT /v3/conversations/<id>/activities[/<activity id>]): the bearer
//     token must be one it issued (401 otherwise); every call (messages and `typing` activities) is
//     recorded; it can answer 429.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';

export const BOT_FRAMEWORK_ISSUER = 'https://api.botframework.com';

export interface TeamsApp { appId: string; password: string; tenantId: string }

export interface ConnectorCall {
  method: string;
  conversationId: string;
  activityId?: string;
  body: { type?: string; text?: string; [k: string]: unknown };
  token: string | undefined;
  status: number;
}

export interface TokenOptions {
  serviceUrl: string;
  audience?: string;
  issuer?: string;
  /** Seconds from now (negative: already expired). @defaultValue 3600 */
  expiresIn?: number;
  /** Seconds from now the token becomes valid. */
  notBefore?: number;
  /** Sign with the key the metadata does not list (an unknown kid). */
  unlistedKey?: boolean;
  /** Sign with a stranger's key under the published kid (a forged signature). */
  forged?: boolean;
  /** Leave out the serviceurl claim. */
  noServiceUrl?: boolean;
}

export interface FakeTeams {
  url: string;
  openIdUrl: string;
  /** HERMES_TEAMS_LOGIN_URL: the token endpoint is `<url>/<tenant>/oauth2/v2.0/token`. */
  loginUrl: string;
  /** HERMES_TEAMS_API_URL: the connector. */
  connectorUrl: string;
  calls: ConnectorCall[];
  /** Successful message posts (not typing activities), in order. */
  posts(): ConnectorCall[];
  /** Successful `typing` activities, in order. */
  typing(): ConnectorCall[];
  /** Activities posted to these conversations answer this status and JSON body (a bot removed from the chat). */
  refusedConversations: Map<string, { status: number; body: unknown }>;
  /** Token requests: how many, and how many were refused. */
  tokenRequests: { granted: number; refused: number };
  /** Metadata and JWKS fetches. */
  keyFetches(): number;
  /** A bearer token for an inbound activity, signed as the Bot Connector signs them. */
  token(opts: TokenOptions): Promise<string>;
  /** Publishes the so far unlisted key in the JWKS (a key rotation). */
  publishUnlistedKey(): void;
  /** The next `times` connector calls (after `skip`) answer 429 with Retry-After. */
  rateLimitNext(times: number, retryAfterSeconds: number, skip?: number): void;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

async function keyPair(kid: string): Promise<{ privateKey: CryptoKey; jwk: JWK }> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  // Endorsed, as Microsoft's published keys are, for several channels of the Bot Framework, not Teams alone.
  return { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, use: 'sig', endorsements: ['msteams', 'webchat', 'directline'] } as JWK };
}

export async function startFakeTeams(app: TeamsApp): Promise<FakeTeams> {
  const [main, unlisted, stranger] = await Promise.all([keyPair('main-key'), keyPair('rotated-key'), keyPair('main-key')]);
  const published: JWK[] = [main.jwk];
  const calls: ConnectorCall[] = [];
  const refusedConversations: FakeTeams['refusedConversations'] = new Map();
  const issued = new Set<string>();
  const tokenRequests = { granted: 0, refused: 0 };
  let fetches = 0;
  let limited = { times: 0, retryAfter: 1, skip: 0 };
  let url = '';

  const json = (res: import('node:http').ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      const raw = await readBody(req);
      if (req.method === 'GET' && path === '/v1/.well-known/openidconfiguration') {
        fetches++;
        return json(res, 200, { issuer: BOT_FRAMEWORK_ISSUER, authorization_endpoint: `${url}/v1/authorize`, jwks_uri: `${url}/v1/.well-known/keys`, id_token_signing_alg_values_supported: ['RS256'], token_endpoint_auth_methods_supported: ['private_key_jwt'] });
      }
      if (req.method === 'GET' && path === '/v1/.well-known/keys') return json(res, 200, { keys: published });
      const tokenPath = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(path);
      if (req.method === 'POST' && tokenPath) {
        const form = new URLSearchParams(raw);
        const ok = tokenPath[1] === app.tenantId && form.get('grant_type') === 'client_credentials' && form.get('client_id') === app.appId
          && form.get('client_secret') === app.password && form.get('scope') === 'https://api.botframework.com/.default';
        if (!ok) {
          tokenRequests.refused++;
          return json(res, 401, { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.' });
        }
        tokenRequests.granted++;
        const token = `fake-teams-token-${randomUUID()}`;
        issued.add(token);
        return json(res, 200, { token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: token });
      }
      const conn = /^\/v3\/conversations\/([^/]+)\/activities(?:\/([^/]+))?$/.exec(path);
      if (conn && (req.method === 'POST' || req.method === 'PUT')) {
        const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
        const call = (status: number): ConnectorCall => ({
          method: req.method!, conversationId: decodeURIComponent(conn[1]!), ...(conn[2] ? { activityId: decodeURIComponent(conn[2]) } : {}),
          body: raw ? (JSON.parse(raw) as ConnectorCall['body']) : {}, token, status,
        });
        if (limited.times > 0 && limited.skip > 0) limited.skip--;
        else if (limited.times > 0) {
          limited.times--;
          calls.push(call(429));
          return json(res, 429, { error: { code: 'TooManyRequests' } }, { 'retry-after': String(limited.retryAfter) });
        }
        if (!token || !issued.has(token)) {
          calls.push(call(401));
          return json(res, 401, { message: 'Authorization has been denied for this request.' });
        }
        const refusal = refusedConversations.get(decodeURIComponent(conn[1]!));
        if (refusal) {
          calls.push(call(refusal.status));
          return json(res, refusal.status, refusal.body);
        }
        calls.push(call(200));
        return json(res, req.method === 'POST' ? 201 : 200, { id: conn[2] ? decodeURIComponent(conn[2]) : `1:${randomUUID()}` });
      }
      json(res, 404, { error: 'not found' });
    })().catch((err: unknown) => { res.writeHead(500).end(String(err)); });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    openIdUrl: `${url}/v1/.well-known/openidconfiguration`,
    loginUrl: url,
    connectorUrl: url,
    calls,
    refusedConversations,
    posts: () => calls.filter((c) => c.method === 'POST' && c.status === 200 && c.body.type !== 'typing'),
    typing: () => calls.filter((c) => c.method === 'POST' && c.status === 200 && c.body.type === 'typing'),
    tokenRequests,
    keyFetches: () => fetches,
    async token(o) {
      const now = Math.floor(Date.now() / 1000);
      const signer = o.unlistedKey ? unlisted : o.forged ? stranger : main;
      let jwt = new SignJWT({ ...(o.noServiceUrl ? {} : { serviceurl: o.serviceUrl }), nbf: now + (o.notBefore ?? -60) })
        .setProtectedHeader({ alg: 'RS256', kid: signer.jwk.kid!, typ: 'JWT', x5t: signer.jwk.kid! })
        .setIssuer(o.issuer ?? BOT_FRAMEWORK_ISSUER)
        .setAudience(o.audience ?? app.appId)
        .setIssuedAt(now - 60)
        .setExpirationTime(now + (o.expiresIn ?? 3600));
      jwt = jwt.setJti(randomUUID());
      return jwt.sign(signer.privateKey);
    },
    publishUnlistedKey: () => { published.push(unlisted.jwk); },
    rateLimitNext: (times, retryAfterSeconds, skip = 0) => { limited = { times, retryAfter: retryAfterSeconds, skip }; },
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

let seq = 0;

export interface ActivityInput {
  /** personal (a DM), groupChat or channel. */
  chat: 'personal' | 'groupChat' | 'channel';
  conversationId: string;
  from: { id: string; aadObjectId?: string; name?: string };
  text: string;
  /** Mention the bot (`<at>Hermes</at>` in the text and a mention entity). */
  mentionBot?: boolean;
  id?: string;
  type?: string;
  serviceUrl: string;
  /** The bot's channel account id (`28:<app id>`). */
  botId: string;
}

/** An activity as the Bot Connector posts it to the messaging endpoint. */
export function teamsActivity(a: ActivityInput): { body: Record<string, unknown>; id: string } {
  const id = a.id ?? `${1_800_000_000_000 + ++seq}`;
  const mention = '<at>Hermes</at>';
  return {
    id,
    body: {
      type: a.type ?? 'message',
      id,
      timestamp: new Date().toISOString(),
      serviceUrl: a.serviceUrl,
      channelId: 'msteams',
      from: { id: a.from.id, name: a.from.name ?? 'A User', ...(a.from.aadObjectId ? { aadObjectId: a.from.aadObjectId } : {}) },
      conversation: { id: a.conversationId, conversationType: a.chat, tenantId: 'tenant-1', ...(a.chat !== 'personal' ? { isGroup: true } : {}) },
      recipient: { id: a.botId, name: 'Hermes' },
      text: a.mentionBot ? `${mention} ${a.text}` : a.text,
      textFormat: 'plain',
      entities: [
        ...(a.mentionBot ? [{ type: 'mention', text: mention, mentioned: { id: a.botId, name: 'Hermes' } }] : []),
        { type: 'clientInfo', locale: 'en-US', country: 'US', platform: 'Web' },
      ],
      channelData: { tenant: { id: 'tenant-1' } },
      locale: 'en-US',
    },
  };
}
