// The command table and how commands are written per platform (Slack: `!word`, since Slack owns `/word`).
import { describe, expect, it } from 'vitest';
import { commandText, commandWord, COMMANDS, isSilentReply, parseCommand, unknownNoticeFor } from '../../services/core/index.js';
import { slack } from '../../services/platforms/index.js';

describe('commands', () => {
  it('parses the known commands with their arguments, and nothing else', () => {
    expect(parseCommand('/queue  do this\nand that ')).toMatchObject({ name: 'queue', args: 'do this\nand that' });
    expect(parseCommand('/STATUS')).toMatchObject({ name: 'status', args: '' });
    expect(parseCommand('/q do this')).toMatchObject({ name: 'queue', args: 'do this' }); // Hermes' alias
    expect(parseCommand('/my-skill please')).toBeUndefined(); // a skill command is a request for the model
    expect(parseCommand('status')).toBeUndefined();
    expect(parseCommand('see /status')).toBeUndefined();
  });

  it('ends a command word at a NUL or other control character as at a space (commandText)', () => {
    expect(parseCommand(commandText('/status\u0000'))).toMatchObject({ name: 'status', args: '' });
    expect(parseCommand(commandText('/status\uFFFD'))).toMatchObject({ name: 'status', args: '' });
    expect(parseCommand(commandText('/queue\u0001\u0000do it'))).toMatchObject({ name: 'queue', args: 'do it' });
    expect(commandText('!stop\u0000')).toBe('!stop ');
    expect(commandText('/kanban create buy\u0000milk')).toBe('/kanban create buy\u0000milk'); // only right after the word
    expect(commandText('hello\u0000')).toBe('hello\u0000');
    expect(parseCommand(commandText('/statusx\u0000'))).toBeUndefined();
  });

  it('has every command the issue names', () => {
    const names = COMMANDS.map((c) => c.name);
    for (const n of ['new', 'reset', 'stop', 'status', 'usage', 'approve', 'deny', 'retry', 'discard', 'compress', 'model', 'queue', 'steer', 'whoami', 'help']) expect(names).toContain(n);
  });

  it('names commands as users of the platform write them, in the unknown-turn notice too', () => {
    expect(commandWord('slack', 'retry')).toBe('!retry');
    expect(commandWord('api', 'retry')).toBe('/retry');
    expect(unknownNoticeFor('slack')).toContain('Send !retry to run it again, or !discard to drop it.');
    expect(unknownNoticeFor('api')).toContain('Send /retry to run it again, or /discard to drop it.');
  });

  it('every command written with ! on Slack reaches the agent as the / command', () => {
    const settings = { type: 'slack', credentialsSecret: 's', allowlist: ['U1'], allowAll: false, dmPairing: false, groupPolicy: 'mention' as const };
    for (const name of COMMANDS.flatMap((c) => [c.name, ...(c.aliases ?? [])])) {
      const env = { type: 'event_callback' as const, event_id: `Ev${name}`, event: { type: 'message', user: 'U1', text: `!${name} x`, channel: 'D1', channel_type: 'im', ts: '1.1' } };
      const n = slack.normaliseSlack(env, settings);
      expect(n.kind === 'message' ? n.event.text : n.kind).toBe(`/${name} x`);
    }
    expect(COMMANDS.find((c) => c.name === 'queue')?.aliases).toEqual(['q']);
  });

  it('knows the silence tokens', () => {
    for (const t of ['[SILENT]', ' NO_REPLY\n', 'SILENT', 'NO REPLY']) expect(isSilentReply(t)).toBe(true);
    for (const t of ['NO_REPLY.', 'silent', '[SILENT] but here is more']) expect(isSilentReply(t)).toBe(false);
  });
});
