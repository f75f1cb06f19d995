// The learning loop on the command line, for an agent's owners: `hermes memory history|restore|
// forget`, `hermes skills history|restore|export` (learned skills) and `hermes review` (writes
// staged by write approval). Every command names the agent as NAMESPACE/NAME and talks to
// Postgres (DATABASE_URL); nothing here needs the gateway or a worker.
import { mkdir, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { Argument, Command, InvalidArgumentError } from 'commander';
import { stringify } from 'yaml';
import type { Db } from '../core/index.js';
// The stores' own modules, not the agent package's index (model SDKs, tools, MCP): ≈ 1.5 s less
// at every start of `hermes memory|skills|review`.
import { pgLearnedSkills } from '../agent/skills/learned.js';
import { skillMdText } from '../agent/skills/skill-md.js';
import { pgMemoryStore, type MemoryScope } from '../agent/memory/store.js';
import { apiVersion } from '../../operator/api/common.js';
import { objectNameFor } from '../../operator/skills/import.js';
import { parseLearningCommand, reviewLearningWrite } from '../worker/learning-commands.js';
import { UsageError, wholeNumber, withAgent } from './cli-db.js';

/** The store a command means: the agent's MEMORY, or the USER of `platform:id`. */
async function scopeOf(db: Db, agentId: string, user: string | undefined): Promise<MemoryScope> {
  if (!user) return { agentId, target: 'memory' };
  const sep = user.indexOf(':');
  if (sep < 1) throw new UsageError(`--user is PLATFORM:ID, e.g. slack:U012ALICE or api:alice (got "${user}")`);
  const { rows } = await db.pool.query<{ id: string }>('SELECT id FROM users WHERE agent_id = $1 AND platform = $2 AND platform_user_id = $3', [agentId, user.slice(0, sep), user.slice(sep + 1)]);
  if (!rows[0]) throw new UsageError(`${user} has never talked to this agent`);
  return { agentId, target: 'user', userId: rows[0].id };
}

const when = (d: Date) => d.toISOString().replace('.000Z', 'Z');
const userOption = ['-u, --user <platform:id>', 'the USER profile of this person (default: the agent\'s MEMORY notes)'] as const;

const memoryCommand = new Command('memory').description('The agent\'s bounded memory (MEMORY notes, USER profiles): history, restore, forget.');

memoryCommand.command('history').description('Every stored revision of a memory store, newest first.')
  .argument('<agent>', 'NAMESPACE/NAME').option(...userOption)
  .action((ref: string, opts: { user?: string }) => withAgent(ref, async (db, agent) => {
    const rows = await pgMemoryStore(db).history(await scopeOf(db, agent.agentId, opts.user));
    if (!rows.length) return void console.log('No revisions.');
    for (const r of rows) {
      console.log(`revision ${r.revision}  ${when(r.createdAt)}  ${r.entries.length} entr${r.entries.length === 1 ? 'y' : 'ies'}${r.authorSessionId ? `  session ${r.authorSessionId}` : ''}`);
      for (const e of r.entries) console.log(`  § ${e.replace(/\n/g, '\n    ')}`);
    }
  }));

memoryCommand.command('restore').description('Make an earlier revision current again (as a new revision; new sessions see it).')
  .argument('<agent>', 'NAMESPACE/NAME').argument('<revision>', 'the revision to restore (a number from `hermes memory history`)', wholeNumber(1)).option(...userOption)
  .action((ref: string, n: number, opts: { user?: string }) => withAgent(ref, async (db, agent) => {
    const restored = await pgMemoryStore(db).restore(await scopeOf(db, agent.agentId, opts.user), n);
    if (!restored.ok) throw new UsageError(`cannot restore: ${restored.error}`);
    console.log(`Restored revision ${n} as revision ${restored.revision}.`);
  }));

memoryCommand.command('forget').description('Empty a memory store for new sessions at once; with --purge also delete every stored revision (and staged write), so nothing can be restored.')
  .argument('<agent>', 'NAMESPACE/NAME').option(...userOption).option('--purge', 'delete the stored revisions too (the right to be forgotten)')
  .action((ref: string, opts: { user?: string; purge?: boolean }) => withAgent(ref, async (db, agent) => {
    const deleted = await pgMemoryStore(db).forget(await scopeOf(db, agent.agentId, opts.user), opts.purge === true);
    console.log(opts.purge ? `Forgotten: ${deleted} stored revision(s) deleted; nothing is left to restore.` : 'Emptied for new sessions; earlier revisions are kept (use --purge to delete them).');
  }));

const skillsHistory = new Command('history').description('Every version of one of the agent\'s learned skills, newest first, with its provenance.')
  .argument('<agent>', 'NAMESPACE/NAME').argument('<skill>', 'the learned skill\'s name')
  .action((ref: string, skill: string) => withAgent(ref, async (db, agent) => {
    const versions = await pgLearnedSkills(db).history(agent.agentId, skill);
    if (!versions.length) throw new UsageError(`${ref} has no learned skill named ${skill}`);
    for (const v of versions) {
      console.log(`version ${v.version}  ${when(v.createdAt)}  ${v.deleted ? 'deleted' : v.content?.description ?? ''}  by ${v.author ?? '?'}${v.sourceSessionId ? ` in session ${v.sourceSessionId}` : ''}  sha256:${v.hash.slice(0, 12)}`);
    }
  }));

const skillsRestore = new Command('restore').description('Make an earlier version of a learned skill current again.')
  .argument('<agent>', 'NAMESPACE/NAME').argument('<skill>', 'the learned skill\'s name').argument('<version>', 'from `hermes skills history`')
  .action((ref: string, skill: string, version: string) => withAgent(ref, async (db, agent) => {
    const store = pgLearnedSkills(db);
    const wanted = (await store.history(agent.agentId, skill)).find((v) => v.version === Number(version));
    if (!wanted) throw new UsageError(`${skill} has no version ${version}`);
    const written = await store.change(agent.agentId, skill, null, () => (wanted.deleted ? null : wanted.content!), `cli:${userInfo().username}`);
    if (!written.ok) throw new UsageError(written.error);
    console.log(`Restored ${skill} version ${version} (now version ${written.version}).`);
  }));

const skillsExport = new Command('export').description('Write a learned skill as a Skill manifest (and, with --out, its Hermes folder) ready for a GitOps pull request; once applied in the agent\'s namespace it supersedes the learned copy.')
  .argument('<agent>', 'NAMESPACE/NAME').argument('<skill>', 'the learned skill\'s name')
  .option('-o, --out <dir>', 'write <dir>/<name>.yaml and <dir>/<name>/SKILL.md with its files (default: the manifest on stdout)')
  .action((ref: string, skill: string, opts: { out?: string }) => withAgent(ref, async (db, agent) => {
    const store = pgLearnedSkills(db);
    const state = await store.read(agent.agentId, skill);
    if (!state.skill) throw new UsageError(`${ref} has no learned skill named ${skill}`);
    const latest = (await store.history(agent.agentId, skill))[0]!;
    const { name, namespace } = agent.compiled.agent;
    const manifest = {
      apiVersion, kind: 'Skill',
      metadata: {
        name: objectNameFor(skill), namespace,
        annotations: { 'hermes.dev/learned-by': `${namespace}/${name}`, 'hermes.dev/learned-version': String(latest.version), 'hermes.dev/content-sha256': latest.hash, ...(latest.sourceSessionId ? { 'hermes.dev/source-session': latest.sourceSessionId } : {}) },
      },
      spec: { ...state.skill, trust: 'trusted' },
    };
    const yaml = stringify(manifest, { lineWidth: 0 });
    if (!opts.out) return void process.stdout.write(yaml);
    const folder = join(opts.out, objectNameFor(skill));
    await mkdir(folder, { recursive: true });
    await writeFile(join(opts.out, `${objectNameFor(skill)}.yaml`), yaml);
    await writeFile(join(folder, 'SKILL.md'), skillMdText(state.skill));
    for (const f of state.skill.files) {
      await mkdir(dirname(join(folder, f.path)), { recursive: true });
      await writeFile(join(folder, f.path), f.content);
    }
    console.error(`Wrote ${join(opts.out, `${objectNameFor(skill)}.yaml`)} and ${folder}/`);
  }));

/** Subcommands of `hermes skills` for learned skills (beside `import`). */
export const learnedSkillCommands = [skillsHistory, skillsRestore, skillsExport];
export { memoryCommand };

/** `--kind`: memory, or skills (skill too). */
function reviewKind(v: string): 'memory' | 'skills' {
  if (v === 'memory') return v;
  if (v === 'skills' || v === 'skill') return 'skills';
  throw new InvalidArgumentError('expected memory or skills.');
}

/** A staged write's id, or the start of one, as `hermes review AGENT` lists it. */
function writeId(v: string): string {
  if (!/^[0-9a-f-]+$/i.test(v)) throw new InvalidArgumentError('expected the hex id `hermes review AGENT` lists (its first 8 characters are enough).');
  return v;
}

export const reviewCommand = new Command('review').description('Memory and skill writes staged by write approval: list them, show a diff, approve or reject (as /memory and /skills do in chat).')
  .argument('<agent>', 'NAMESPACE/NAME')
  .addArgument(new Argument('[action]', 'what to do (diff: skills writes only)').choices(['pending', 'diff', 'approve', 'reject']).default('pending'))
  .argument('[id]', 'the write\'s id (its first 8 characters are enough)', writeId)
  .option('-k, --kind <kind>', 'memory or skills', reviewKind, 'memory')
  .action((ref: string, action: string, id: string | undefined, opts: { kind: 'memory' | 'skills' }) => withAgent(ref, async (db, agent) => {
    const { kind } = opts;
    const listing = `hermes review ${ref}${kind === 'skills' ? ' --kind skills' : ''}`;
    if (action === 'diff' && kind === 'memory') throw new UsageError('diff is for skills writes (--kind skills); `hermes review AGENT` shows a memory write\'s change');
    if (action !== 'pending' && !id) throw new UsageError(`${action} needs the write's id (\`${listing}\` lists them)`);
    if (action === 'pending' && id) throw new UsageError(`pending takes no id (approve, reject or diff one)`);
    const cmd = parseLearningCommand(`/${kind} ${action}${id ? ` ${id}` : ''}`);
    if (!cmd) throw new UsageError(`cannot review: ${action} ${id ?? ''} for ${kind}`);
    const answer = await reviewLearningWrite(db, { agentId: agent.agentId, agent: agent.compiled, by: () => Promise.resolve(`cli:${userInfo().username}`), sessionId: null }, cmd);
    if (answer.refused) throw new UsageError(answer.text);
    console.log(answer.text);
  }));
