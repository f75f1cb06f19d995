// Tools self-register with a zod schema (→ JSON Schema for the model), a toolset, an availability
// check, a side-effect class and a handler. Only available tools of enabled toolsets reach the model.
import { z } from 'zod';
import type { ToolSpec } from '../messages.js';
import type { ToolResultStore } from './results.js';
import type { SessionSandbox } from '../../sandbox/index.js';
import type { TodoStore } from './todo-list.js';
import type { MemoryAccess } from '../memory/access.js';
import type { RecallAccess } from '../recall/access.js';
import type { SkillAccess } from '../skills/access.js';
import type { WebAccess } from '../web/access.js';
import type { KanbanAccess } from './kanban-access.js';
import type { CodeExecutionLimits } from './code/limits.js';
import type { DelegationAccess } from './delegation-access.js';
import type { ClarifyAccess } from './clarify-access.js';
import type { MessagingAccess } from './messaging-access.js';

/** read-only: may run in parallel and re-run safely; writes/external: in order, effect recorded. */
export type SideEffect = 'read-only' | 'writes' | 'external';

export interface ToolContext {
  sessionId: string;
  /** The person the turn acts for (the admission's user; absent for a turn of nobody's, such as a cron run). */
  userId?: string;
  signal: AbortSignal;
  now: () => number;
  /** This session's stored (spilled) tool results, where the turn can store them. */
  storedResults?: Pick<ToolResultStore, 'read'>;
  /** This session's sandbox (terminal and file tools); absent where the Profile has none. */
  sandbox?: SessionSandbox;
  /** The approval guard every command passes first (terminal tools); absent = nothing may run. */
  guard?: CommandGuard;
  /**
   * Snapshots the workspace before a file tool changes it (checkpoints; `/rollback` restores).
   * Absent = checkpoints off. A failed snapshot does not stop the write; it is logged.
   */
  checkpoint?: (reason: string, signal: AbortSignal) => Promise<void>;
  /** The session todo lists (`todo`), in Postgres: pgTodoStore(db). Absent = `todo` refuses. */
  todos?: TodoStore;
  /** This agent's MEMORY and this person's USER store (`memory`). Absent = `memory` refuses. */
  memory?: MemoryAccess;
  /** The past conversations `session_search` may read (this person's; an admin's: all). Absent = it refuses. */
  recall?: RecallAccess;
  /** The skills this agent offers (`skills_list`, `skill_view`). Absent = they refuse. */
  skills?: SkillAccess;
  /** Search and guarded page fetches (`web_search`, `web_extract`). Absent = they refuse. */
  web?: WebAccess;
  /** The turn's Kanban board (`kanban_*`). Absent = they refuse. */
  kanban?: KanbanAccess;
  /** The turn's tools by name (the loop sets it): what `execute_code` scripts may call, of its list. */
  tools?: ReadonlyMap<string, Tool>;
  /** execute_code's limits (Profile `spec.codeExecution`); absent fields take Hermes' defaults. */
  codeExecution?: Partial<CodeExecutionLimits>;
  /** Subagents (`delegate_task`), in the ledger. Absent (a child turn, no worker) = it refuses. */
  delegation?: DelegationAccess;
  /** Asking the user and waiting for their next message (`clarify`). Absent = nobody can be asked; it refuses. */
  clarify?: ClarifyAccess;
  /** Sending to other chats (`send_message`), within the Agent's allowed targets. Absent = it refuses. */
  messaging?: MessagingAccess;
  /** The id of the tool call being run (set by the loop for every call): keys effects that must happen once per call. */
  toolCallId?: string;
  /** Tells the turn's liveness watchdog the call is alive (a tool waiting for a person calls it while it waits). */
  keepAlive?: () => void;
}

/**
 * The guard's answer for one command: run it, or not with the message the model gets (e.g.
 * "BLOCKED: … Silence is not consent.").
 */
export type GuardDecision = { allowed: true; via: string } | { allowed: false; message: string };

/** Approvals in front of every command (Profile `spec.approvals`). */
export interface CommandGuard {
  check(command: string, signal: AbortSignal): Promise<GuardDecision>;
}

export interface Tool<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  toolset: string;
  schema: S;
  sideEffect: SideEffect;
  /**
   * Failing runs are normal work output here (red test runs, non-zero exits): the tool-loop guard
   * only warns about this tool, it never blocks a call or halts the turn. @defaultValue false
   */
  terminalLike?: boolean;
  /**
   * The handler hands its arguments to Postgres as text (memory, skills, Kanban, session_search):
   * a string holding a NUL or an unpaired surrogate is refused before it runs, naming the argument.
   * @defaultValue false
   */
  postgresArguments?: boolean;
  /**
   * The JSON Schema the model gets, when it does not come from `schema` (MCP tools: the server's
   * own schema; `schema` then only checks that the arguments are an object).
   */
  parameters?: Record<string, unknown>;
  /**
   * Waits for a person (clarify): bounded by its own timeout instead of the tool step's deadline,
   * and the turn counts as making progress while it waits. @defaultValue false
   */
  waitsForPerson?: boolean;
  /** Whether the tool can run here (credentials, backends); unavailable tools are not offered. */
  available?: () => boolean;
  handler: (args: z.infer<S>, ctx: ToolContext) => Promise<string> | string;
}

export const defineTool = <S extends z.ZodType>(tool: Tool<S>): Tool => tool as unknown as Tool;

export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();

  register(tool: Tool): this {
    if (this.tools.has(tool.name)) throw new Error(`tool "${tool.name}" is registered twice`);
    this.tools.set(tool.name, tool);
    return this;
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  /** The tools of these toolsets that are available now, sorted by name (a stable prompt prefix). */
  select(toolsets: readonly string[]): Tool[] {
    const wanted = new Set(toolsets);
    return [...this.tools.values()].filter((t) => wanted.has(t.toolset) && (t.available?.() ?? true)).sort((a, b) => a.name.localeCompare(b.name));
  }
}

const specs = new WeakMap<Tool, ToolSpec>();

/** The tool as the model sees it (computed once per tool: the JSON Schema conversion is not free). */
export function toolSpec(tool: Tool): ToolSpec {
  let spec = specs.get(tool);
  if (!spec && tool.parameters) {
    spec = { name: tool.name, description: tool.description, parameters: tool.parameters };
    specs.set(tool, spec);
  }
  if (!spec) {
    const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.schema, { io: 'input' }) as Record<string, unknown>;
    spec = { name: tool.name, description: tool.description, parameters };
    specs.set(tool, spec);
  }
  return spec;
}
