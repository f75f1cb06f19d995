// What a turn tells the tools it calls about who it acts for: the admission's person (the
// background-process bound per person counts by it), and nobody for a turn of nobody's.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { builtinRegistry, defineTool } from '../../../services/agent/index.js';
import { lastUser, type ChatRequestBody } from '../../support/fake-openai.js';
import { createTestAgent, runTurn, useAgentSystem } from '../../support/system.js';

const seen: (string | undefined)[] = [];
const whoFor = defineTool({
  name: 'who_for', description: 'Says whom the turn acts for.', toolset: 'test', sideEffect: 'read-only',
  schema: z.object({}).strict(),
  handler: (_args, ctx) => { seen.push(ctx.userId); return 'noted'; },
});

const toolResults = (b: ChatRequestBody) => b.messages.filter((m) => m.role === 'tool');
const sys = useAgentSystem((b) => (lastUser(b) === 'who?' && !toolResults(b).length
  ? { toolCalls: [{ id: 'w1', name: 'who_for', arguments: '{}' }] }
  : { text: 'done' }), { loop: { tools: builtinRegistry().register(whoFor) } });

describe('the tool context of a turn', () => {
  it("carries the admission's person to every tool call", async () => {
    const agentId = await createTestAgent(sys.rt, sys.model.baseURL, { toolsets: ['core', 'test'] });
    const { a } = await runTurn(sys.rt, { agentId, sessionKey: 'agent:default/demo:api:dm:who', content: 'who?', userId: 'person-1' });
    expect(a.outcome).toBe('completed');
    expect(a.userId).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen).toEqual([a.userId]);
  });
});
