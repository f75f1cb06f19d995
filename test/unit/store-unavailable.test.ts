// isStoreUnavailable: what counts as "Postgres is unavailable" (503 HERMES_STORE_UNAVAILABLE):
// pg and pg-pool errors only, and never an error that carries a client-side HTTP status.
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { describePostgresFailure, isStoreUnavailable } from '../../services/core/index.js';

const dbError = (code: string) => Object.assign(new pg.DatabaseError('boom', 10, 'error'), { code });
const systemError = (code: string, syscall: string) => Object.assign(new Error(`${syscall} ${code} 127.0.0.1:5432`), { code, syscall, errno: -1 });

describe('isStoreUnavailable', () => {
  it.each([
    ['the server shutting down (57P01)', dbError('57P01')],
    ['the server starting up (57P03)', dbError('57P03')],
    ['too many clients (53300)', dbError('53300')],
    ['a connection exception (08006)', dbError('08006')],
    ['a refused connect', systemError('ECONNREFUSED', 'connect')],
    ['a reset read on the driver socket', systemError('ECONNRESET', 'read')],
    ['the pool timing out', new Error('timeout exceeded when trying to connect')],
    ['a connection ended under a query', new Error('Connection terminated unexpectedly')],
    ['a client broken by a connection error', new Error('Client has encountered a connection error and is not queryable')],
  ])('is true for %s', (_what, err) => expect(isStoreUnavailable(err)).toBe(true));

  it.each([
    ['an aborted upload (fastify: ECONNRESET, statusCode 400)', Object.assign(new Error('aborted'), { code: 'ECONNRESET', statusCode: 400 })],
    ['an ECONNRESET code without a socket call behind it', Object.assign(new Error('reset'), { code: 'ECONNRESET' })],
    ['a unique violation (23505)', dbError('23505')],
    ['a NUL byte refused (22021)', dbError('22021')],
    ['a plain error', new Error('something else')],
    ['nothing', undefined],
    ['a string', 'Connection terminated'],
  ])('is false for %s', (_what, err) => expect(isStoreUnavailable(err)).toBe(false));
});

describe('describePostgresFailure', () => {
  const url = 'postgresql://hermes:s3cret@db.example:6432/hermes';
  it('names the server by host and port, never the password', () => {
    expect(describePostgresFailure(Object.assign(systemError('ECONNREFUSED', 'connect'), { port: 6432 }), url))
      .toBe('Postgres at db.example:6432 (DATABASE_URL) cannot be used: connect ECONNREFUSED 127.0.0.1:5432');
    expect(describePostgresFailure(Object.assign(new pg.DatabaseError('password authentication failed for user "hermes"', 10, 'error'), { code: '28P01' }), 'postgresql://h@db'))
      .toBe('Postgres at db:5432 (DATABASE_URL) cannot be used: password authentication failed for user "hermes"');
  });

  it('leaves other errors alone: another port (Redis), a query error, no URL', () => {
    expect(describePostgresFailure(Object.assign(systemError('ECONNREFUSED', 'connect'), { port: 6379 }), url)).toBeUndefined();
    expect(describePostgresFailure(dbError('23505'), url)).toBeUndefined();
    expect(describePostgresFailure(systemError('ECONNREFUSED', 'connect'), undefined)).toBeUndefined();
  });
});
