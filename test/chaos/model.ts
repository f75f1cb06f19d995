// The slow model of the fault-injection suite: the scripted fake OpenAI server, holding every
// answer for a seeded random time. Every message the load sends is a unique token, so each model
// request names the input it runs (its last user line) and the session it belongs to; a worker's
// base URL carries its spawn generation (`…/w<gen>/v1`), so each request also names the process
// that made it. Listeners hear a request arrive and an answer leave: the kill points.
import { RESUME_NOTE } from '../../services/worker/turn-context.js';
import { startFakeOpenAI, type FakeOpenAI, type SeenRequest } from '../support/fake-openai.js';
import { prng, type Rand } from './random.js';

/** `chaos.<run>.<session>.<n>`: one input of the load. */
export const tokenOf = (run: string, session: string, n: number) => `chaos.${run}.${session}.${n}`;
const tokenPattern = /^chaos\.[a-z0-9]+\.([a-z0-9-]+)\.(\d+)$/;
export const sessionOfToken = (token: string) => tokenPattern.exec(token)?.[1];

export interface ModelCall {
  /** The input this request runs; for a resume, the input of the turn it continues. */
  token: string;
  session: string;
  /** Spawn generation of the worker that called (0 when the URL names none). */
  gen: number;
  /** A resumed turn (its last user line is the resume note). */
  resume: boolean;
  seen: SeenRequest;
  holdMs: number;
}

type Listener = (call: ModelCall) => void;

export interface ChaosModel {
  readonly url: string;
  /** The OPENAI_BASE_URL of the worker of generation `gen`. */
  baseURLFor(gen: number): string;
  readonly calls: readonly ModelCall[];
  /** Calls `fn` for every request as it arrives / just before its answer is sent; returns an unsubscribe. */
  onRequest(fn: Listener): () => void;
  onAnswer(fn: Listener): () => void;
  close(): Promise<void>;
}

const content = (c: unknown) => (typeof c === 'string' ? c : '');

export async function startChaosModel(opts: { holdMs: [number, number]; seed: number }): Promise<ChaosModel> {
  const rand: Rand = prng(opts.seed);
  const calls: ModelCall[] = [];
  const requestListeners = new Set<Listener>();
  const answerListeners = new Set<Listener>();
  const emit = (set: Set<Listener>, call: ModelCall) => { for (const fn of set) fn(call); };
  const fake: FakeOpenAI = await startFakeOpenAI((body, req) => {
    // The server records the request just before it asks the script: the last one is this one.
    const seen = fake.requests.at(-1)!;
    const users = body.messages.filter((m) => m.role === 'user').map((m) => content(m.content));
    const resume = users.at(-1) === RESUME_NOTE;
    const token = (resume ? users.at(-2) : users.at(-1)) ?? '';
    const gen = Number(/\/w(\d+)\/v1\//.exec(req.url ?? '')?.[1] ?? 0);
    const [min, max] = opts.holdMs;
    const holdMs = Math.round(min + rand() * (max - min));
    const call: ModelCall = { token, session: sessionOfToken(token) ?? '', gen, resume, seen, holdMs };
    calls.push(call);
    emit(requestListeners, call);
    const hold = new Promise<void>((r) => setTimeout(r, holdMs)).then(() => emit(answerListeners, call));
    return { text: `answer to ${token}`, chunks: 2, hold };
  });
  const subscribe = (set: Set<Listener>) => (fn: Listener) => { set.add(fn); return () => { set.delete(fn); }; };
  return {
    url: fake.url,
    baseURLFor: (gen) => `${fake.url}/w${gen}/v1`,
    calls,
    onRequest: subscribe(requestListeners),
    onAnswer: subscribe(answerListeners),
    close: () => fake.close(),
  };
}

/** Resolves with the first call `pick` accepts among those heard from now on (`on` = onRequest or onAnswer), or undefined after `timeoutMs`. */
export function nextCall(on: (fn: Listener) => () => void, pick: (c: ModelCall) => boolean, timeoutMs: number): Promise<ModelCall | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => { off(); resolve(undefined); }, timeoutMs);
    const off = on((c) => {
      if (!pick(c)) return;
      clearTimeout(timer);
      off();
      resolve(c);
    });
  });
}
