// The agent-loop state one worker shares across its turns: the model router with its cool-downs,
// the tool registry, background processes, MCP connections, the approvals breaker and the test
// seams (clock, retry policy, watchdog time).
import type { Config } from '../core/index.js';
import {
  builtinRegistry, registerSandboxTools, ProcessRegistry, DenialBreaker, CooldownBook, ModelRouter, SummaryCooldown,
  type Ticker, type Clock, type RetryPolicy, type SecretResolver, type ToolRegistry, type UrlGuard,
} from '../agent/index.js';
import type { SandboxBackends } from './sandboxes.js';
import type { ToolDeps } from './turn-tools.js';
import { workerUrlGuard } from './web-tools.js';
import { createMcpDeps, type McpDeps } from './mcp-tools.js';

export interface LoopDeps extends ToolDeps {
  router: ModelRouter;
  cooldowns: CooldownBook;
  summaryCooldown: SummaryCooldown;
  tools: ToolRegistry;
  /** Background commands of the sandbox tools (closed at worker shutdown). */
  processes?: ProcessRegistry;
  /** Smart approvals' consecutive denials per session (3 trip the breaker), shared by this worker's turns. */
  approvalBreaker?: DenialBreaker;
  clock?: Clock;
  policy?: RetryPolicy;
  /** How long one Mixture-of-Agents reference may take (default 120 s). */
  moaReferenceTimeoutMs?: number;
  /** Liveness watchdog time source and ticker (tests inject them; default: Date.now, setInterval). */
  watchdog?: WatchdogTime;
  /** Token budget of the verbatim tail after compression. @defaultValue 20 000 (SPEC) */
  keepRecentTokens?: number;
  /** The worker's MCP connections (closed at shutdown). */
  mcp?: McpDeps;
}

export interface WatchdogTime {
  now?: () => number;
  ticker?: Ticker;
}

export interface LoopOptions {
  /** Injected clock (tests: no real retry waits). */
  clock?: Clock;
  policy?: RetryPolicy;
  /** Stale-stream timeout override (ms). */
  staleMs?: number;
  tools?: ToolRegistry;
  /** Sandbox backends (tests inject them; the worker opens them from its settings). */
  sandboxes?: SandboxBackends;
  watchdog?: WatchdogTime;
  /** Token budget of the verbatim tail after compression. @defaultValue 20 000 (SPEC) */
  keepRecentTokens?: number;
  /** The web tools' SSRF guard (tests inject one with their resolver and allowed ranges); default: from HERMES_WEB_ALLOW_CIDRS. */
  webGuard?: UrlGuard;
  /** The MCP connection pool (tests inject a clock and breaker timings); default: a pool on Date.now. */
  mcp?: McpDeps;
  /** How long one Mixture-of-Agents reference may take. @defaultValue 120 000 (MOA_REFERENCE_TIMEOUT_MS) */
  moaReferenceTimeoutMs?: number;
}

export function createLoopDeps(config: Config, secrets: SecretResolver, opts: LoopOptions = {}): LoopDeps {
  const router = new ModelRouter(secrets, {
    timeoutMs: config.HERMES_MODEL_TIMEOUT_SECONDS * 1_000,
    ...(config.OPENAI_BASE_URL ? { openaiBaseURL: config.OPENAI_BASE_URL } : {}),
    ...(opts.staleMs !== undefined ? { staleMs: opts.staleMs } : {}),
  });
  // The default registry has the sandbox tools; they are offered only to agents with a sandbox.
  let tools = opts.tools;
  let processes: ProcessRegistry | undefined;
  if (!tools) {
    tools = builtinRegistry();
    processes = registerSandboxTools(tools);
  }
  const webGuard = opts.webGuard ?? workerUrlGuard(config);
  return { router, cooldowns: new CooldownBook(), summaryCooldown: new SummaryCooldown(), approvalBreaker: new DenialBreaker(), tools, webGuard, mcp: opts.mcp ?? createMcpDeps(), ...(processes ? { processes } : {}), ...(opts.sandboxes ? { sandboxes: opts.sandboxes } : {}), ...(opts.clock ? { clock: opts.clock } : {}), ...(opts.policy ? { policy: opts.policy } : {}), ...(opts.watchdog ? { watchdog: opts.watchdog } : {}), ...(opts.keepRecentTokens !== undefined ? { keepRecentTokens: opts.keepRecentTokens } : {}), ...(opts.moaReferenceTimeoutMs !== undefined ? { moaReferenceTimeoutMs: opts.moaReferenceTimeoutMs } : {}) };
}
