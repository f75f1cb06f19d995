// Reading one platform secret by reference for an inbound route (Teams' app id, the signed
// webhook's secret), with the same answers as Slack's: no secret source or an unreadable one →
// 503 (the platform retries, nothing admitted); a missing value → undefined (the route refuses
// with its one 401, and the log says which Secret key is missing). Values are never logged.
import type { FastifyRequest } from 'fastify';
import { HermesError } from '../core/index.js';
import type { PlatformSettings } from '../platforms/index.js';
import type { GatewayContext } from './context.js';

export async function readPlatformSecret(ctx: GatewayContext, request: FastifyRequest, namespace: string, settings: PlatformSettings, wanted: string | { key: string; optional: true }): Promise<string | undefined> {
  const { key, optional } = typeof wanted === 'string' ? { key: wanted, optional: false } : wanted;
  const { secrets } = ctx.deps;
  if (!secrets) throw new HermesError('HERMES_PLATFORM_SECRETS_UNAVAILABLE', 'This gateway was started without a secret source (HERMES_SECRETS_SOURCE).');
  const ref = { name: settings.credentialsSecret, key };
  let value: string | undefined;
  try {
    value = await secrets.resolve(namespace, ref);
  } catch (err) {
    request.log.warn({ err, namespace, secret: ref.name, key }, `Could not read the ${settings.type} platform secret`);
    throw new HermesError('HERMES_PLATFORM_SECRETS_UNAVAILABLE');
  }
  if (!value && !optional) request.log.warn({ namespace, secret: ref.name, key }, `The ${settings.type} platform secret key is missing: requests to this agent cannot be verified`);
  return value || undefined;
}

/** Raw JSON bodies: parsed here, not by fastify, so signatures are checked over the bytes as sent. */
export function parseRawJson(raw: Buffer, platform: string): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    throw new HermesError('HERMES_BAD_JSON', `${platform} sends a JSON object.`);
  }
}
