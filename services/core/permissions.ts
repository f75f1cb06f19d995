// Team mode (issue 11 point 3): what one person may do with an agent, from the Agent's
// `spec.access` (compiled into `compiled.access`). Permissions add up, as in Kubernetes RBAC:
// `default` (everyone the platform lets in) ∪ every group the person is a member of or whose chat
// they write in ∪ their `users` entries. `admin` (here or in spec.admins) may do everything.
// Two pure functions are the whole contract: `permissionsFor` (who) and `commandAllowed` /
// `toolsetAllowed` (what). Authorisation (who may talk at all) is not here: that is the platform's
// allow-all / allowlist / DM pairing, before any of this.
import { z } from 'zod';

/** One grant: each field adds to what the person may do; absent adds nothing (in `default`: no limit). */
export const compiledGrantSchema = z.object({
  /** Toolsets the model is offered in this person's turns ('*': all of the Profile's). */
  toolsets: z.array(z.string()).optional(),
  /** Slash commands (names without the slash, '*': all). /approve and /deny follow `approve` instead. */
  commands: z.array(z.string()).optional(),
  /** May answer /approve and /deny for commands waiting for a human. */
  approve: z.boolean().optional(),
  /** Everything: all toolsets and commands, approve, and the admin commands. */
  admin: z.boolean().optional(),
});
export type CompiledGrant = z.infer<typeof compiledGrantSchema>;

export const compiledAccessSchema = z.object({
  default: compiledGrantSchema,
  groups: z.array(compiledGrantSchema.extend({
    name: z.string(),
    /** People (`platform:userId`). */
    members: z.array(z.string()),
    /** Chats (`platform:chatId`): everyone writing there gets the grant, in that chat. */
    chats: z.array(z.string()),
  })),
  users: z.array(compiledGrantSchema.extend({ match: z.string() })),
});
export type CompiledAccess = z.infer<typeof compiledAccessSchema>;

export interface Permissions {
  /** 'all', or the toolsets this person's turns may offer. */
  toolsets: 'all' | readonly string[];
  /** 'all', or the slash commands (lower case, no slash) this person may use. */
  commands: 'all' | readonly string[];
  approve: boolean;
  admin: boolean;
  /** Which entries matched (`default`, `group:<name>`, `user:<match>`, `admins`), for logs and /whoami. */
  matched: readonly string[];
}

/** Everything (an agent without spec.access behaves as before team mode). */
export const ALL_PERMISSIONS: Permissions = Object.freeze({ toolsets: 'all', commands: 'all', approve: true, admin: false, matched: ['default'] });

type Union = 'all' | Set<string>;
const add = (into: Union, more: readonly string[] | undefined): Union => {
  if (into === 'all' || !more) return into;
  if (more.includes('*')) return 'all';
  for (const m of more) into.add(m.toLowerCase().replace(/^[/!]/, ''));
  return into;
};

/** Who the agent's access rules see: a platform, its user id and the chat (absent for the API: the user's own). */
export interface AccessSubject {
  platform: string;
  userId: string;
  chatId?: string;
}

/** The entries of `access` that apply to `who` writing in `chat`: default first. */
function grantsOf(access: CompiledAccess, who: string, chat: string | undefined): { label: string; grant: CompiledGrant }[] {
  const grants: { label: string; grant: CompiledGrant }[] = [{ label: 'default', grant: access.default }];
  for (const g of access.groups) {
    if (g.members.includes(who) || (chat !== undefined && g.chats.includes(chat))) grants.push({ label: `group:${g.name}`, grant: g });
  }
  for (const u of access.users) if (u.match === who) grants.push({ label: `user:${u.match}`, grant: u });
  return grants;
}

/** The union of `grants`; in `default`, a field left out means no limit (the behaviour before team mode). */
function unionOf(grants: readonly { grant: CompiledGrant }[], defaults: CompiledGrant) {
  const sum = { toolsets: (defaults.toolsets ? new Set<string>() : 'all') as Union, commands: (defaults.commands ? new Set<string>() : 'all') as Union, approve: defaults.approve ?? true, admin: false };
  for (const { grant } of grants) {
    sum.toolsets = add(sum.toolsets, grant.toolsets);
    sum.commands = add(sum.commands, grant.commands);
    sum.approve ||= grant.approve === true;
    sum.admin ||= grant.admin === true;
  }
  return sum;
}

/** The permissions of `subject` on the agent `compiled` (pure: no I/O). */
export function permissionsFor(compiled: { access?: CompiledAccess; admins?: readonly string[] }, subject: AccessSubject): Permissions {
  const who = `${subject.platform}:${subject.userId}`;
  const inAdmins = (compiled.admins ?? []).includes(who);
  const access = compiled.access;
  if (!access) return inAdmins ? { ...ALL_PERMISSIONS, admin: true, matched: ['admins'] } : ALL_PERMISSIONS;
  const grants = grantsOf(access, who, subject.chatId === undefined ? undefined : `${subject.platform}:${subject.chatId}`);
  const sum = unionOf(grants, access.default);
  const matched = [...grants.map((g) => g.label), ...(inAdmins ? ['admins'] : [])];
  if (sum.admin || inAdmins) return { toolsets: 'all', commands: 'all', approve: true, admin: true, matched };
  const list = (u: Union) => (u === 'all' ? 'all' as const : [...u]);
  return { toolsets: list(sum.toolsets), commands: list(sum.commands), approve: sum.approve, admin: false, matched };
}

/**
 * The slash commands the `commands` lists govern (SPEC and issue 11 point 4, plus the learning,
 * curator and rollback commands). A `/name` that is none of these (a skill, say) is not a command
 * here: skills follow the toolsets. Add new built-in commands to this list.
 */
export const BUILTIN_COMMANDS: ReadonlySet<string> = new Set([
  'new', 'reset', 'stop', 'status', 'usage', 'approve', 'deny', 'retry', 'discard', 'compress', 'model', 'queue', 'steer',
  'redirect', 'whoami', 'help', 'memory', 'skills', 'curator', 'rollback', 'pairing', 'moa', 'kanban',
]);
export const isBuiltinCommand = (name: string) => BUILTIN_COMMANDS.has(name.toLowerCase().replace(/^[/!]/, ''));

/** The command name of `/name …` or `!name …` (lower case), else undefined. */
export function slashCommandName(content: string): string | undefined {
  return /^[/!]([A-Za-z][\w-]*)(?=\s|$)/.exec(content.trim())?.[1]?.toLowerCase();
}

/**
 * Whether `perms` may run the slash command `name` (with or without its slash). /approve and
 * /deny follow `approve`; every other command the `commands` list. One call at each place a
 * command is recognised.
 */
export function commandAllowed(perms: Permissions, name: string): boolean {
  const command = name.toLowerCase().replace(/^[/!]/, '');
  if (perms.admin) return true;
  if (command === 'approve' || command === 'deny') return perms.approve;
  return perms.commands === 'all' || perms.commands.includes(command);
}

/** Whether the model may be offered `toolset` in this person's turns. */
export const toolsetAllowed = (perms: Permissions, toolset: string): boolean =>
  perms.toolsets === 'all' || perms.toolsets.includes(toolset.toLowerCase());

/** What a person is told when a command is not theirs to use (never a model call). */
export const commandRefusal = (name: string) =>
  `Sorry, you may not use /${name.replace(/^[/!]/, '')} with this agent. Ask its owner if you need it.`;

const unescape = (s: string) => s.replace(/%3A/g, ':').replace(/%25/g, '%');

/**
 * The chat of a session key `agent:<ns>/<name>:<platform>:<chat type>:<chat id>[:…]` (segments
 * escaped as platformSessionKey does), for group/chat permissions in the worker.
 */
export function chatOfSessionKey(key: string): string | undefined {
  const parts = key.split(':');
  return parts.length >= 5 && parts[0] === 'agent' ? unescape(parts[4]!) : undefined;
}
