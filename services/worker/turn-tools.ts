// What a turn's tools get: the tools of the agent's toolsets (the sandbox toolsets only when the
// agent has a sandbox), and the context every call sees — the session's sandbox, the approval
// guard, the checkpoint hook before file writes, the Postgres todo list, the memory stores of
// this agent and this conversation's person, the past conversations session_search reads, the
// skills the agent offers, the Kanban board (dispatched turns, or the Profile's kanban toolset),
// and who the turn may reach (clarify, send_message).
import type { Redis } from 'ioredis';
import { toolsetAllowed, type Admission, type CompiledAgent, type Config, type Db, type Logger, type Permissions, type Queues } from '../core/index.js';
import { CHILD_EXCLUDED_TOOLS, CHILD_EXCLUDED_TOOLSETS, Checkpoints, DEFAULT_TOOLSETS, ORCHESTRATOR_ONLY, pgKanbanAccess, MAX_RESULT_CHARS, SANDBOX_TOOLSETS, markSkillUsed, memoryLimits, memorySnapshot, skillsIndexBlock, type PromptInputs, offeredSkills, pgLearnedSkills, pgMemoryStore, pgStaging, writeApprovalOn, pgTodoStore, readSkillCatalog, type CommandGuard, type DelegationAccess, type LoopInput, type SecretResolver, type UrlGuard, type MemoryAccess, type Tool, type ToolRegistry } from '../agent/index.js';
import { platformToolsets } from '../platforms/index.js';
import type { SessionSandbox } from '../sandbox/index.js';
import { sessionSandboxOf, type SandboxBackends } from './sandboxes.js';
import { turnWeb, type WebSummaryDeps } from './web-tools.js';
import { cronTools, cronToolsets, isCronTurn } from './cron/turn.js';
import { turnReach } from './reach-tools.js';

/** The worker-wide parts the turn's tools come from. */
export interface ToolDeps {
  tools: ToolRegistry;
  /** Absent: no sandbox (the terminal and file toolsets are not offered). */
  sandboxes?: SandboxBackends;
  /** The SSRF guard of the web tools (one per worker process, closed at shutdown); absent: no web toolset. */
  webGuard?: UrlGuard;
}

export interface TurnTools {
  tools: Tool[];
  context: NonNullable<LoopInput['toolContext']>;
  /** The session's sandbox (also for `/rollback`), when the agent has one. */
  sandbox?: SessionSandbox;
}

/** The checkpoint hook: a snapshot before the change; a failure is logged and reported by the tool. */
function checkpointHook(sandbox: SessionSandbox, log: Logger, adm: Admission) {
  const checkpoints = new Checkpoints(sandbox);
  return async (reason: string, signal: AbortSignal): Promise<void> => {
    try {
      await checkpoints.snapshot(reason, signal);
    } catch (err) {
      log.warn({ err, session: adm.sessionId }, 'Taking a workspace checkpoint failed; the write goes ahead');
      throw err;
    }
  };
}

/** The memory stores a turn reaches: this agent's MEMORY and, when the admission names a person, their USER. */
export function turnMemory(db: Db, agent: CompiledAgent, adm: Admission): MemoryAccess {
  return {
    store: pgMemoryStore(db), agentId: adm.agentId, ...(adm.userId ? { userId: adm.userId } : {}),
    sessionId: adm.sessionId, limits: memoryLimits(agent), failures: 0,
    ...(writeApprovalOn(agent, 'memory') ? { approval: pgStaging(db) } : {}),
  };
}

/** Tools that cannot work for this agent: web_search without a provider in the Profile; for a delegated child (platform subagent), the tools children never get. */
const unusable = (agent: CompiledAgent, loop: ToolDeps, adm: Admission) => (t: Tool): boolean =>
  (t.toolset === 'web' && !loop.webGuard) || (t.name === 'web_search' && !agent.web?.search)
  || (adm.platform === 'subagent' && (CHILD_EXCLUDED_TOOLS.includes(t.name) || CHILD_EXCLUDED_TOOLSETS.includes(t.toolset)));

/**
 * The agent's toolsets this turn may offer: a platform may narrow them (the signed webhook:
 * untrusted input), and team mode the person's (toolsets they may not use are not offered at all).
 */
function permittedToolsets(agent: CompiledAgent, adm: Admission, perms?: Permissions, platform = adm.platform): string[] {
  const narrowed = platformToolsets(agent, platform);
  const toolsets = (agent.toolsets ?? DEFAULT_TOOLSETS).filter((t) => (!perms || toolsetAllowed(perms, t)) && (!narrowed || narrowed.includes(t)));
  return isCronTurn(adm) ? cronToolsets(toolsets) : toolsets;
}

/** The tools of `toolsets` this turn can use (a cron turn: never those that need a person). */
function offeredTools(loop: ToolDeps, agent: CompiledAgent, adm: Admission, toolsets: string[]): Tool[] {
  const skip = unusable(agent, loop, adm);
  // A turn the Kanban dispatcher started never gets the orchestrator's tools (list, unblock).
  const selected = loop.tools.select(toolsets).filter((t) => !skip(t) && !(adm.platform === 'kanban' && ORCHESTRATOR_ONLY.includes(t.name)));
  return isCronTurn(adm) ? cronTools(selected) : selected;
}

/** A turn the Kanban dispatcher started gets the kanban toolset (its own task's lifecycle; list and unblock hidden), whatever the Profile lists. */
const withKanban = (adm: Admission, toolsets: string[]): string[] => (adm.platform === 'kanban' && !toolsets.includes('kanban') ? [...toolsets, 'kanban'] : toolsets);

/** The turn's board, when the kanban toolset is on (core/kanban: a dispatched task's board, or the person's). */
const turnKanban = (deps: { db: Db; config: Config }, adm: Admission, toolsets: string[]) =>
  (toolsets.includes('kanban') ? { kanban: pgKanbanAccess(deps.db, adm, { claimTtlSeconds: deps.config.HERMES_KANBAN_CLAIM_TTL_SECONDS, now: Date.now }) } : {});
/** What session_search reaches: this person's sessions, every one of the agent's for an admin who asks. */
const turnRecall = (db: Db, adm: Admission, perms: Permissions | undefined) =>
  ({ db, agentId: adm.agentId, userId: adm.userId, admin: perms?.admin === true, sessionId: adm.sessionId });
/** execute_code's limits from the Profile, when it sets any. */
const codeExecutionOf = (agent: CompiledAgent) => (agent.codeExecution ? { codeExecution: agent.codeExecution } : {});

export interface TurnToolOptions {
  /** The person's permissions (team mode): toolsets they may not use are not offered to the model at all (nor the sandbox behind them). */
  perms?: Permissions;
  guard?: CommandGuard;
  /** The turn's model routes and accounting, for web_extract's summaries of long pages. */
  summary?: WebSummaryDeps;
  /** `delegate_task`'s ledger-backed subagents (worker/delegation.ts); absent for a child turn. */
  delegation?: DelegationAccess;
  /** The platform whose toolsets narrowing applies (default: the turn's own; a child: its parent's). */
  platform?: string;
}

/** The delegation service, when delegate_task is among the turn's tools. */
const offeredDelegation = (tools: readonly Tool[], delegation: DelegationAccess | undefined) =>
  (delegation && tools.some((t) => t.name === 'delegate_task') ? { delegation } : {});

export function turnTools(deps: { db: Db; log: Logger; config: Config; secrets: SecretResolver; queues?: Queues; redis?: Redis }, loop: ToolDeps, agent: CompiledAgent, adm: Admission, opts: TurnToolOptions = {}): TurnTools {
  const { perms, guard, summary, delegation } = opts;
  const permitted = permittedToolsets(agent, adm, perms, opts.platform);
  const wantsSandbox = !perms || perms.toolsets === 'all' || permitted.some((t) => SANDBOX_TOOLSETS.includes(t));
  const sandbox = loop.sandboxes && wantsSandbox ? sessionSandboxOf(loop.sandboxes, agent, adm, MAX_RESULT_CHARS) : undefined;
  const toolsets = withKanban(adm, permitted.filter((t) => sandbox || !SANDBOX_TOOLSETS.includes(t)));
  const reach = turnReach(deps, agent, adm);
  const tools = offeredTools(loop, agent, adm, toolsets).filter((t) => !reach.withheld(t));
  const web = loop.webGuard && tools.some((t) => t.toolset === 'web')
    ? turnWeb({ config: deps.config, secrets: deps.secrets, guard: loop.webGuard, ...(summary ? { summary } : {}) }, agent)
    : undefined;
  const enabled = { toolsets, tools: tools.map((t) => t.name) };
  return {
    tools,
    context: {
      ...(adm.userId ? { userId: adm.userId } : {}),
      skills: {
        offered: async () => offeredSkills(await readSkillCatalog(deps.db, adm.agentId, agent), enabled),
        used: (skill) => (skill.source === 'learned' ? markSkillUsed(deps.db, adm.agentId, skill.name) : Promise.resolve()),
        manage: {
          store: pgLearnedSkills(deps.db), agentId: adm.agentId, sessionId: adm.sessionId, all: () => readSkillCatalog(deps.db, adm.agentId, agent),
          ...(writeApprovalOn(agent, 'skill') ? { approval: pgStaging(deps.db) } : {}),
        },
      },
      todos: pgTodoStore(deps.db),
      memory: turnMemory(deps.db, agent, adm),
      recall: turnRecall(deps.db, adm, perms),
      ...(sandbox ? { sandbox, checkpoint: checkpointHook(sandbox, deps.log, adm) } : {}),
      ...(guard ? { guard } : {}),
      ...(web ? { web } : {}),
      ...turnKanban(deps, adm, toolsets),
      ...codeExecutionOf(agent),
      ...offeredDelegation(tools, delegation),
      ...reach.context,
    },
    ...(sandbox ? { sandbox } : {}),
  };
}

export const offers = (tools: readonly Tool[], name: string): boolean => tools.some((t) => t.name === name);

/** What a prompt being built now takes from storage: the memory snapshot and the skills index (each when its tools are offered). */
export async function promptParts(tools: readonly Tool[], context: TurnTools['context']): Promise<Pick<PromptInputs, 'memory' | 'user' | 'skillsIndex'>> {
  const memory = offers(tools, 'memory') && context.memory ? await memorySnapshot(context.memory) : {};
  const skills = offers(tools, 'skill_view') && context.skills ? skillsIndexBlock(await context.skills.offered()) : '';
  return { ...memory, ...(skills ? { skillsIndex: skills } : {}) };
}
