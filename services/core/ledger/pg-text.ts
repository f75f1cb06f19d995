// Text that Postgres will store. A `text` column refuses U+0000 (22021) and `jsonb` also refuses
// the escape of a lone UTF-16 surrogate; a model reply, a tool's output (`cat` of a binary) or a
// tool call's arguments can carry either. At the ledger boundary such characters become U+FFFD,
// so the answer is kept (with a visible replacement) instead of failing the transaction that
// ends the turn. Request input never gets here with NUL: the gateway refuses it with a 400.

import { HermesError } from '../errors.js';

declare global {
  // ES2024, available in Node 20; the project's lib is ES2023.
  interface String {
    isWellFormed(): boolean;
    toWellFormed(): string;
  }
}

/**
 * An identity (session key, user or chat id, dedupe id) Postgres cannot store: a NUL. Refused
 * with a 400, not replaced as text is — two ids that differ only there must not become one
 * person. No platform sends one.
 */
export function pgId(what: string, id: string): string {
  if (id.includes('\u0000')) throw new HermesError('HERMES_BAD_REQUEST', `The ${what} holds a NUL (U+0000) character.`);
  return id;
}

/** `s` with NUL and unpaired surrogates replaced by U+FFFD. */
export function pgText(s: string): string {
  const whole = s.isWellFormed() ? s : s.toWellFormed();
  return whole.includes('\u0000') ? whole.replaceAll('\u0000', '\uFFFD') : whole;
}

function storable(v: unknown): unknown {
  if (typeof v === 'string') return pgText(v);
  if (Array.isArray(v)) return v.map(storable);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [pgText(k), storable(x)]));
  return v;
}

/** `v` as JSON for a jsonb column (null for null/undefined), every string and key made storable. */
export function pgJson(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  return JSON.stringify(storable(v));
}
