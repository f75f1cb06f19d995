// The Teams sender against the fake Bot Framework over HTTP: the token cached across sends, the
// credentials the token endpoint refuses, the https rule for an activity's serviceUrl, splitting,
// edits and a 429 on the first piece.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RateLimited, teams } from '../../../services/platforms/index.js';
import { startFakeTeams, type FakeTeams } from '../../support/fake-teams.js';

const app = { appId: 'app-sender', password: 'pw-sender', tenantId: 'tenant-s' };
let fake: FakeTeams;
const never = () => new AbortController().signal;

beforeAll(async () => { fake = await startFakeTeams(app); });
afterAll(async () => { await fake?.close(); });

const target = (conversationId: string, serviceUrl = 'https://smba.trafficmanager.net/amer/') => ({ kind: 'teams', serviceUrl, conversationId });

describe('TeamsSender', () => {
  it('gets one token for many sends, splits long replies and edits what it sent', async () => {
    const tokens = new teams.TeamsTokens({ loginUrl: fake.loginUrl });
    const sender = new teams.TeamsSender({ credentials: app, tokens, apiUrl: fake.connectorUrl });
    const granted = fake.tokenRequests.granted;
    const [sent] = await sender.send(target('a:s1'), 'working…', never());
    await sender.edit(target('a:s1'), sent!, 'done', never());
    await sender.send(target('a:s2'), `${'a'.repeat(7_990)} ${'b'.repeat(100)}`, never());
    expect(fake.tokenRequests.granted - granted).toBe(1);
    expect(fake.calls.filter((c) => c.conversationId === 'a:s1').map((c) => [c.method, c.body.text, c.status])).toEqual([['POST', 'working…', 200], ['PUT', 'done', 200]]);
    expect(fake.calls.filter((c) => c.conversationId === 'a:s2').map((c) => (c.body.text ?? '')[0])).toEqual(['a', 'b']);
  });

  it('a 429 on the first piece is RateLimited with the connector\'s Retry-After, nothing sent', async () => {
    const sender = new teams.TeamsSender({ credentials: app, tokens: new teams.TeamsTokens({ loginUrl: fake.loginUrl }), apiUrl: fake.connectorUrl });
    fake.rateLimitNext(1, 9);
    const err = await sender.send(target('a:s3'), 'x', never()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimited);
    expect((err as RateLimited).retryAfterSeconds).toBe(9);
  });

  it('refuses wrong credentials (naming the keys, not the password) and never sends the token to a plain-http serviceUrl', async () => {
    const refused = fake.tokenRequests.refused;
    const wrong = new teams.TeamsSender({ credentials: { ...app, password: 'nope-secret' }, tokens: new teams.TeamsTokens({ loginUrl: fake.loginUrl }), apiUrl: fake.connectorUrl });
    const err = (await wrong.send(target('a:s4'), 'x', never()).catch((e: unknown) => e)) as Error;
    expect(err.message).toMatch(/TEAMS_APP_PASSWORD/);
    expect(err.message).not.toContain('nope-secret');
    expect(fake.tokenRequests.refused - refused).toBe(1);
    const direct = new teams.TeamsSender({ credentials: app, tokens: new teams.TeamsTokens({ loginUrl: fake.loginUrl }) });
    await expect(direct.send(target('a:s5', fake.connectorUrl), 'x', never())).rejects.toThrow(/not https/);
    expect(fake.calls.filter((c) => c.conversationId === 'a:s5')).toHaveLength(0);
  });
});
