// Agent-loop benchmarks: (1) per-turn loop overhead against a zero-latency in-process provider
// (one tool round per turn, so two model calls), next to the bare provider calls it wraps; (2)
// memory per concurrent turn: N turns in one process, each waiting on a slow model reached
// through the real openai SDK over HTTP (the fake holds every answer until all are in flight).
// Run alone: `node --import tsx bench/loop.ts`; `npm run bench` includes it.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import {
  CredentialPool, OpenAIChatProvider, emptyUsage, getTimeTool, runAgentLoop,
  type ChatProvider, type Completion, type CompletionRequest, type LoopInput,
} from '../services/agent/index.js';
import { startFakeOpenAI } from '../test/support/fake-openai.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Answers at once: a get_time call first, then text once a tool result is in the conversation. */
class InstantProvider implements ChatProvider {
  readonly name = 'instant';
  async complete(req: CompletionRequest): Promise<Completion> {
    const afterTool = req.messages.at(-1)?.role === 'tool';
    return afterTool
      ? { text: 'done', finishReason: 'stop', usage: emptyUsage(), toolCalls: [] }
      : { text: '', finishReason: 'tool_calls', usage: emptyUsage(), toolCalls: [{ id: 'c1', name: 'get_time', arguments: '{}' }] };
  }
}

const noPersist = { assistant: async () => undefined, toolResult: async () => undefined };

function input(provider: ChatProvider, signal: AbortSignal): LoopInput {
  return {
    sessionId: 'bench', routes: [{ key: provider.name, model: 'm', pool: new CredentialPool(provider.name, [provider]) }],
    system: [{ role: 'system', content: 'You are a benchmark.' }], history: [{ role: 'user', content: 'time?' }],
    tools: [getTimeTool], signal, persist: noPersist,
  };
}

export interface LoopOverhead {
  turns: number;
  usPerTurn: number;
  usPerBareCallPair: number;
}

export async function loopOverhead(turns: number): Promise<LoopOverhead> {
  const provider = new InstantProvider();
  const signal = new AbortController().signal;
  for (let i = 0; i < 200; i++) await runAgentLoop(input(provider, signal)); // warm-up
  let t = process.hrtime.bigint();
  for (let i = 0; i < turns; i++) await runAgentLoop(input(provider, signal));
  const loopNs = Number(process.hrtime.bigint() - t);
  const req = { model: 'm', messages: [{ role: 'user' as const, content: 'x' }], signal };
  t = process.hrtime.bigint();
  for (let i = 0; i < turns; i++) {
    await provider.complete(req);
    await provider.complete({ ...req, messages: [{ role: 'tool', content: 'r', toolCallId: 'c1' }] });
  }
  const bareNs = Number(process.hrtime.bigint() - t);
  return { turns, usPerTurn: loopNs / turns / 1_000, usPerBareCallPair: bareNs / turns / 1_000 };
}

export interface TurnMemory {
  turns: number;
  heapKiBPerTurn: number;
  rssKiBPerTurn: number;
}

export async function memoryPerTurn(turns: number): Promise<TurnMemory> {
  let release!: () => void;
  const held = new Promise<void>((r) => { release = r; });
  const fake = await startFakeOpenAI(() => ({ text: 'late answer', hold: held }));
  try {
    const provider = new OpenAIChatProvider({ apiKey: 'k', baseURL: fake.baseURL, timeoutMs: 600_000 });
    const signal = new AbortController().signal;
    await provider.complete({ model: 'm', messages: [{ role: 'user', content: 'warm' }], signal: AbortSignal.timeout(1) }).catch(() => undefined); // load the SDK's lazy parts
    gc();
    const before = process.memoryUsage();
    const running = Array.from({ length: turns }, () => runAgentLoop({ ...input(provider, signal), tools: [] }));
    while (fake.inFlight().length < turns) await new Promise((r) => setTimeout(r, 20));
    gc();
    const during = process.memoryUsage();
    release();
    await Promise.all(running);
    return { turns, heapKiBPerTurn: (during.heapUsed - before.heapUsed) / 1024 / turns, rssKiBPerTurn: (during.rss - before.rss) / 1024 / turns };
  } finally {
    release();
    await fake.close();
  }
}

export function printLoop(o: LoopOverhead, m: TurnMemory): void {
  const f = (n: number) => n.toFixed(1);
  console.log('\nAgent loop (in-process, zero-latency provider; one tool round = 2 model calls per turn)');
  console.log(`  loop turn: ${f(o.usPerTurn)} µs; the 2 bare provider calls alone: ${f(o.usPerBareCallPair)} µs; loop overhead ${f(o.usPerTurn - o.usPerBareCallPair)} µs/turn (${o.turns} turns)`);
  console.log(`Agent loop memory: ${m.turns} concurrent turns waiting on a slow model (openai SDK over HTTP, one process)`);
  console.log(`  heap ${f(m.heapKiBPerTurn)} KiB/turn, RSS ${f(m.rssKiBPerTurn)} KiB/turn`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const scale = Number(process.env.BENCH_SCALE ?? '1');
  printLoop(await loopOverhead(Math.max(100, Math.round(10_000 * scale))), await memoryPerTurn(Math.max(10, Math.round(1_000 * scale))));
}
