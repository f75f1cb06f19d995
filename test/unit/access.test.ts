// Team mode's pure rules (core/permissions.ts) and the manifest fields behind them: spec.access
// and spec.api.keys (bound user / trusted backend) compile into the revision; grants add up.
import { describe, expect, it } from 'vitest';
import { agentSchema, compileAgent, profileSchema, staticConfigMaps } from '../../operator/index.js';
import { commandAllowed, compiledAgentSchema, isBuiltinCommand, permissionsFor, sha256, slashCommandName, toolsetAllowed, type CompiledAccess } from '../../services/core/index.js';

const access: CompiledAccess = {
  default: { toolsets: ['web'], commands: ['new', 'stop'], approve: false },
  groups: [
    { name: 'sre', members: ['slack:UALICE'], chats: [], toolsets: ['terminal'], approve: true },
    { name: 'incidents', members: [], chats: ['slack:CINC'], commands: ['*'] },
  ],
  users: [{ match: 'slack:UBOSS', admin: true }],
};

describe('permissionsFor', () => {
  it('gives everyone else the default only', () => {
    const p = permissionsFor({ access }, { platform: 'slack', userId: 'UBOB', chatId: 'DBOB' });
    expect(p).toMatchObject({ toolsets: ['web'], commands: ['new', 'stop'], approve: false, admin: false, matched: ['default'] });
    expect(toolsetAllowed(p, 'terminal')).toBe(false);
    expect(commandAllowed(p, '/stop')).toBe(true);
    expect(commandAllowed(p, 'usage')).toBe(false);
    expect(commandAllowed(p, 'approve')).toBe(false);
  });

  it('adds a group\'s grant to its members, and a chat group\'s to whoever writes there (only there)', () => {
    const alice = permissionsFor({ access }, { platform: 'slack', userId: 'UALICE', chatId: 'DALICE' });
    expect(toolsetAllowed(alice, 'terminal') && toolsetAllowed(alice, 'web')).toBe(true);
    expect(commandAllowed(alice, 'approve')).toBe(true);
    expect(commandAllowed(alice, 'usage')).toBe(false);
    const inIncidents = permissionsFor({ access }, { platform: 'slack', userId: 'UBOB', chatId: 'CINC' });
    expect(commandAllowed(inIncidents, 'usage')).toBe(true);
    expect(inIncidents.matched).toEqual(['default', 'group:incidents']);
    // The same chat id on another platform is another chat.
    expect(commandAllowed(permissionsFor({ access }, { platform: 'telegram', userId: 'UBOB', chatId: 'CINC' }), 'usage')).toBe(false);
  });

  it('lets admins (access users or spec.admins) do everything', () => {
    const boss = permissionsFor({ access }, { platform: 'slack', userId: 'UBOSS' });
    expect(boss).toMatchObject({ toolsets: 'all', commands: 'all', approve: true, admin: true });
    expect(permissionsFor({ access, admins: ['slack:UROOT'] }, { platform: 'slack', userId: 'UROOT' }).admin).toBe(true);
  });

  it('without spec.access, allows everything (as before team mode); a default field left out means no limit', () => {
    const p = permissionsFor({}, { platform: 'api', userId: 'x' });
    expect(p).toMatchObject({ toolsets: 'all', commands: 'all', approve: true, admin: false });
    const open = permissionsFor({ access: { default: { commands: ['new'] }, groups: [], users: [] } }, { platform: 'api', userId: 'x' });
    expect(open.toolsets).toBe('all');
    expect(commandAllowed(open, 'approve')).toBe(true);
    expect(commandAllowed(open, 'usage')).toBe(false);
  });

  it('recognises slash commands (and !commands), but not skills, as built-in commands', () => {
    expect(slashCommandName('/Usage now')).toBe('usage');
    expect(slashCommandName('!stop')).toBe('stop');
    expect(slashCommandName('no command')).toBeUndefined();
    expect(isBuiltinCommand('approve')).toBe(true);
    expect(isBuiltinCommand('my-skill')).toBe(false);
  });
});

describe('Agent manifest → compiled access and API keys', () => {
  const profile = profileSchema.parse({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Profile', metadata: { name: 'p', namespace: 'ns' }, spec: { model: { provider: 'openai', model: 'gpt-4o' } } });
  const sources = { secrets: { value: async (_ns: string, ref: { key: string }) => `secret-${ref.key}` }, configMaps: staticConfigMaps([]) };
  const manifest = (spec: Record<string, unknown>) => ({ apiVersion: 'hermes.dev/v1alpha1', kind: 'Agent', metadata: { name: 'a', namespace: 'ns' }, spec: { profileRef: { name: 'p' }, ...spec } });

  it('compiles bound and trusted keys with their hashes; keys with neither stay plain (speak for themselves)', async () => {
    const agent = agentSchema.parse(manifest({ api: { keys: [{ env: 'K1', user: 'alice' }, { env: 'K2', trustedBackend: true }, { env: 'K3' }] } }));
    const compiled = compiledAgentSchema.parse(await compileAgent(agent, profile, sources));
    expect(compiled.api.keySha256).toEqual([sha256('secret-K1'), sha256('secret-K2'), sha256('secret-K3')]);
    expect(compiled.api.keys).toEqual([{ sha256: sha256('secret-K1'), user: 'alice' }, { sha256: sha256('secret-K2'), trustedBackend: true }, { sha256: sha256('secret-K3') }]);
    const plain = await compileAgent(agentSchema.parse(manifest({ api: { keys: [{ env: 'K3' }] } })), profile, sources);
    expect(plain.api.keys).toBeUndefined();
  });

  it('refuses a key that is both bound and a trusted backend, and a principal without its platform', () => {
    expect(agentSchema.safeParse(manifest({ api: { keys: [{ env: 'K1', user: 'alice', trustedBackend: true }] } })).success).toBe(false);
    expect(agentSchema.safeParse(manifest({ access: { users: [{ match: 'U123', admin: true }] } })).success).toBe(false);
  });

  it('compiles spec.access', async () => {
    const agent = agentSchema.parse(manifest({ access: { default: { toolsets: ['web'] }, groups: [{ name: 'sre', members: ['slack:U1'], approve: true }], users: [{ match: 'slack:U2', admin: true }] } }));
    const compiled = compiledAgentSchema.parse(await compileAgent(agent, profile, sources));
    expect(compiled.access).toEqual({
      default: { toolsets: ['web'] },
      groups: [{ name: 'sre', members: ['slack:U1'], chats: [], approve: true }],
      users: [{ match: 'slack:U2', admin: true }],
    });
  });
});
