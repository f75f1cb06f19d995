// `delegate_task` (Hermes' model-visible arguments: one task as goal + context, or a batch as
// tasks[{goal, context, output_schema}]; action spawn | list | steer | stop, subagent_id, message). Spawning is asynchronous: each child is its
// own queued turn, so the call returns the children's ids at once and their results come back as
// a new message in this conversation when the batch ends. The durable work is done by the worker
// through ToolContext.delegation (services/worker/delegation.ts).
import { z } from 'zod';
import { defineTool } from './registry.js';
import { toolError } from './sandbox-result.js';
import type { DelegationAccess } from './delegation-access.js';

/** Tools a child never gets (SPEC): no further delegation, nobody to clarify with, no shared memory, no messaging, no cron. */
export const CHILD_EXCLUDED_TOOLS: readonly string[] = ['delegate_task', 'clarify', 'memory', 'send_message', 'cronjob'];
/** The toolsets of those tools (a child is offered none of their tools). */
export const CHILD_EXCLUDED_TOOLSETS: readonly string[] = ['delegation', 'clarify', 'memory', 'messaging', 'cronjob'];

export const NO_DELEGATION = 'Delegation is not available here (subagents cannot delegate, and this turn has no delegation service).';

const taskFields = {
  goal: z.string().min(1).max(20_000).describe('What the subagent should achieve: a self-contained task with a clear end'),
  context: z.string().max(100_000).optional().describe('Everything the subagent needs to know (it does not see this conversation): files, findings, constraints'),
  output_schema: z.record(z.string(), z.unknown()).optional().describe('Optional JSON Schema the subagent\'s final answer must match'),
};
const task = z.object(taskFields).strict();

const schema = z.object({
  action: z.enum(['spawn', 'list', 'steer', 'stop']).optional().describe('spawn (default): start subagents for tasks; list: their status; steer: send a message to a running one; stop: stop one (subagent_id) or all'),
  // Hermes' two forms of spawn: one task (goal, context) or a batch (tasks).
  goal: taskFields.goal.optional().describe('For spawn of one task: what the subagent should achieve (or give tasks for a batch)'),
  context: taskFields.context.describe('With goal: everything the subagent needs to know (it does not see this conversation)'),
  output_schema: taskFields.output_schema.describe('With goal: optional JSON Schema the subagent\'s final answer must match'),
  tasks: z.array(task).min(1).max(10).optional().describe('For spawn of a batch: the tasks, one subagent each, run in parallel'),
  subagent_id: z.string().optional().describe('For steer and stop: the subagent'),
  message: z.string().min(1).max(20_000).optional().describe('For steer: the message for the subagent'),
}).strict();

type Args = z.infer<typeof schema>;

async function run(args: Args, d: DelegationAccess): Promise<Record<string, unknown> | string> {
  switch (args.action ?? 'spawn') {
    case 'spawn': {
      if (args.goal !== undefined && args.tasks) return toolError('give goal (one task) or tasks (a batch), not both');
      if (args.goal === undefined && (args.context !== undefined || args.output_schema !== undefined)) return toolError('context and output_schema go with goal (or inside each of tasks)');
      const tasks = args.goal !== undefined ? [{ goal: args.goal, context: args.context, output_schema: args.output_schema }] : args.tasks;
      if (!tasks?.length) return toolError('action "spawn" needs goal (one task, with context) or tasks: [{goal, context?, output_schema?}, …]');
      return d.spawn(tasks.map((t) => ({ goal: t.goal, context: t.context, outputSchema: t.output_schema })));
    }
    case 'list':
      return d.list();
    case 'steer':
      if (!args.subagent_id || !args.message) return toolError('action "steer" needs subagent_id and message');
      return d.steer(args.subagent_id, args.message);
    default:
      return d.stop(args.subagent_id);
  }
}

export const delegateTaskTool = defineTool({
  name: 'delegate_task',
  description: 'Delegate tasks to subagents that work in parallel, each with a fresh context and its own tool budget (they do not see this conversation: give each everything it needs in goal and context). spawn one task with goal and context, or a batch with tasks; it returns at once with the subagent ids; their results arrive later as a new message in this conversation, when all of the batch have finished — end your turn after spawning unless you have other work. list shows their status; steer sends a running subagent a message; stop stops one or all.',
  toolset: 'delegation',
  sideEffect: 'external',
  schema,
  handler: async (args, ctx) => {
    if (!ctx.delegation) return toolError(NO_DELEGATION);
    const out = await run(args, ctx.delegation);
    return typeof out === 'string' ? out : JSON.stringify(out);
  },
});
