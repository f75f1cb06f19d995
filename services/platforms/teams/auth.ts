// Bot Framework authentication of inbound Teams activities (the "connector → bot" direction):
// the request carries `Authorization: Bearer <JWT>` signed by the Bot Framework. We check it
// against the configured OpenID metadata (HERMES_TEAMS_OPENID_URL, by default
// https://login.botframework.com/v1/.well-known/openidconfiguration), as the Bot Framework SDK does:
//   - RS256 only, a `kid` among the keys of the metadata's jwks_uri;
//   - issuer = the metadata's `issuer` (https://api.botframework.com);
//   - audience = the bot's app id (TEAMS_APP_ID);
//   - exp required, exp / nbf with TEAMS_CLOCK_SKEW_SECONDS of tolerance;
//   - then (teams/activity.ts checkActivityClaims) the token's `serviceurl` claim equals the
//     activity's serviceUrl, and the key is endorsed for the activity's channelId.
// The keys are cached (one set per metadata URL, refreshed every KEYS_MAX_AGE_MS); a token with
// an unknown kid refreshes them at most once per REFRESH_COOLDOWN_MS, so forged kids cannot make
// the gateway hammer Microsoft, and the cache never grows with what requests send.
import { decodeProtectedHeader, errors as joseErrors, importJWK, jwtVerify, type JWK, type JWTPayload, type CryptoKey } from 'jose';
import { z } from 'zod';
import type { Verified } from '../adapter.js';

/** Bot Framework SDK: 5 minutes of clock skew are tolerated on exp / nbf. */
export const TEAMS_CLOCK_SKEW_SECONDS = 300;
/** Keys and metadata are re-read at least this often (Microsoft rotates keys; the SDK refreshes daily). */
const KEYS_MAX_AGE_MS = 24 * 3_600_000;
/** An unknown kid refreshes the keys at most this often. */
const REFRESH_COOLDOWN_MS = 60_000;
/** With no keys at all, a failed fetch is retried at most this often. */
const FAILED_RETRY_MS = 5_000;
/** Bounds on what the metadata and key documents may be. */
const MAX_DOCUMENT_BYTES = 256 * 1024;
const MAX_KEYS = 64;

const metadataSchema = z.object({ issuer: z.string().min(1), jwks_uri: z.string().url() }).passthrough();
const jwkSchema = z.object({ kty: z.string(), kid: z.string().min(1).max(256), endorsements: z.array(z.string()).max(64).optional() }).passthrough();
const jwksSchema = z.object({ keys: z.array(jwkSchema).max(MAX_KEYS) });

interface SigningKey { jwk: JWK; endorsements?: string[]; key?: CryptoKey | Uint8Array }

interface KeySet { issuer: string; keys: Map<string, SigningKey>; fetchedAt: number }

export interface BotFrameworkKeysOptions {
  openIdUrl: string;
  /** Bound on each metadata / keys request. @defaultValue 10 000 */
  timeoutMs?: number;
  now?: () => number;
}

async function getJson(url: string, timeoutMs: number): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`GET ${url} answered HTTP ${res.status}`);
  const text = await res.text();
  if (text.length > MAX_DOCUMENT_BYTES) throw new Error(`GET ${url} answered more than ${MAX_DOCUMENT_BYTES} bytes`);
  return JSON.parse(text) as unknown;
}

/** The Bot Framework's signing keys for one OpenID metadata URL, cached (see the header). */
export class BotFrameworkKeys {
  private current?: KeySet;
  private pending?: Promise<KeySet>;
  private lastFetch = Number.NEGATIVE_INFINITY;
  /** How many times the keys were fetched (tests, metrics). */
  fetches = 0;

  constructor(private readonly opts: BotFrameworkKeysOptions) {}

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  private async load(): Promise<KeySet> {
    const timeout = this.opts.timeoutMs ?? 10_000;
    const meta = metadataSchema.parse(await getJson(this.opts.openIdUrl, timeout));
    const jwks = jwksSchema.parse(await getJson(meta.jwks_uri, timeout));
    const keys = new Map<string, SigningKey>();
    for (const k of jwks.keys) keys.set(k.kid, { jwk: k as JWK, ...(k.endorsements ? { endorsements: k.endorsements } : {}) });
    this.fetches++;
    return { issuer: meta.issuer, keys, fetchedAt: this.now() };
  }

  /** One fetch at a time; a failure leaves the previous set in place (and is thrown). */
  private refresh(): Promise<KeySet> {
    this.pending ??= (async () => {
      this.lastFetch = this.now();
      try {
        this.current = await this.load();
        return this.current;
      } finally {
        this.pending = undefined;
      }
    })();
    return this.pending;
  }

  /** The current key set, refreshed when old, or when `kid` is unknown and the cooldown has passed. Throws when nothing can be fetched. */
  async forKid(kid: string): Promise<{ issuer: string; key?: SigningKey }> {
    let set = this.current;
    const now = this.now();
    // Without any keys, a failed fetch is retried at most every FAILED_RETRY_MS (requests meanwhile get the 503).
    if (!set && !this.pending && now - this.lastFetch < FAILED_RETRY_MS) throw new Error('the Bot Framework keys could not be fetched a moment ago');
    if (!set || now - set.fetchedAt > KEYS_MAX_AGE_MS) set = await this.refresh();
    else if (!set.keys.has(kid) && now - this.lastFetch > REFRESH_COOLDOWN_MS) set = await this.refresh();
    return { issuer: set.issuer, ...(set.keys.has(kid) ? { key: set.keys.get(kid)! } : {}) };
  }
}

export interface TeamsClaims extends JWTPayload {
  serviceurl?: string;
  serviceUrl?: string;
}

export type TeamsVerified = { ok: true; claims: TeamsClaims; endorsements?: string[] } | Extract<Verified, { ok: false }>;

const bearer = (header: string | string[] | undefined) => (typeof header === 'string' ? /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(header)?.[1] : undefined);

/** Whether the header is shaped like a bearer JWT at all: cheap, before any lookup. */
export const hasBearerToken = (header: string | string[] | undefined) => bearer(header) !== undefined;

/** What a jose failure means, in words for the log. */
function reasonOf(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'the token has expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `the token's "${err.claim}" claim is not acceptable (${err.reason})`;
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'the token signature does not verify';
  if (err instanceof joseErrors.JOSEError) return `the token is not acceptable (${err.code})`;
  throw err;
}

/**
 * Verifies the bearer token of an inbound activity for the bot `appId`. Throws only when the keys
 * cannot be fetched (the gateway answers 503 and the Bot Framework retries).
 */
export async function verifyTeamsToken(keys: BotFrameworkKeys, header: string | string[] | undefined, appId: string, nowMs: number): Promise<TeamsVerified> {
  const token = bearer(header);
  if (!token) return { ok: false, reason: 'no "Authorization: Bearer <JWT>" header' };
  let kid: string | undefined;
  try {
    const h = decodeProtectedHeader(token);
    if (h.alg !== 'RS256') return { ok: false, reason: `the token is signed with ${String(h.alg)}, not RS256` };
    // jose types kid as a string but does not check it: a number or an object here must be a refusal, not a throw (a 503).
    kid = typeof h.kid === 'string' ? h.kid : undefined;
  } catch {
    return { ok: false, reason: 'the token header is not readable' };
  }
  if (!kid) return { ok: false, reason: 'the token names no signing key (kid) as a string' };
  const { issuer, key } = await keys.forKid(kid);
  if (!key) return { ok: false, reason: `the token is signed with a key the OpenID metadata does not list (kid ${kid.slice(0, 64)})` };
  try {
    key.key ??= await importJWK(key.jwk, 'RS256');
    const { payload } = await jwtVerify<TeamsClaims>(token, key.key, {
      algorithms: ['RS256'], issuer, audience: appId, clockTolerance: TEAMS_CLOCK_SKEW_SECONDS, currentDate: new Date(nowMs), requiredClaims: ['exp'],
    });
    return { ok: true, claims: payload, ...(key.endorsements ? { endorsements: key.endorsements } : {}) };
  } catch (err) {
    return { ok: false, reason: reasonOf(err) };
  }
}
