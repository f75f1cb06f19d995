// The generated CRDs on a real kube-apiserver: they install, `kubectl explain` teaches the
// fields, `kubectl get hermes` lists every kind, and each CEL rule and enum refuses a bad object
// with its message.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, waitFor, type ControlPlane } from '../../support/kube/index.js';

const crdsDir = new URL('../../../crds/', import.meta.url).pathname;

describe('hermes.dev CRDs on a real kube-apiserver', () => {
  let cp: ControlPlane;
  let ns: string;

  beforeAll(async () => {
    cp = await startControlPlane();
    const applied = await cp.kubectl(['apply', '-f', crdsDir]);
    expect(applied.stderr).toBe('');
    expect(applied.code).toBe(0);
    const est = await cp.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '-l', 'app.kubernetes.io/part-of=hermes']);
    expect(est.code, est.stderr).toBe(0);
    ns = await cp.createNamespace('crds');
  });
  afterAll(async () => { await cp?.stop(); });

  // JSON, not YAML: kubectl reads YAML 1.1, where a bare off (groupPolicy, approvals.mode) is a boolean.
  const apply = (obj: Record<string, unknown>) => cp.kubectl(['apply', '-n', ns, '-f', '-'], { input: JSON.stringify({ apiVersion: 'hermes.dev/v1alpha1', ...obj }) });
  const agent = (name: string, spec: Record<string, unknown>) => ({ kind: 'Agent', metadata: { name }, spec: { profileRef: { name: 'p' }, ...spec } });
  const profile = (name: string, spec: Record<string, unknown>) => ({ kind: 'Profile', metadata: { name }, spec: { model: { provider: 'openai', model: 'gpt-4o-mini' }, ...spec } });
  const skill = (name: string, spec: Record<string, unknown>) => ({ kind: 'Skill', metadata: { name }, spec: { name, description: 'Does a thing.', body: '# Do it', ...spec } });
  const moaPreset = (name: string) => ({ name, referenceModels: [{ provider: 'openai', model: 'a' }], aggregator: { provider: 'openai', model: 'c' } });
  const cron = (name: string, schedule: string) => ({ kind: 'CronJob', metadata: { name }, spec: { agentRef: { name: 'a' }, schedule, prompt: 'Summarise the day.' } });

  it('accepts good objects and fills in the defaults', async () => {
    for (const obj of [agent('good', { api: { keys: [{ secretKeyRef: { name: 's', key: 'k' } }, { env: 'KEY' }] } }),
      profile('good', { fallbackModels: [{ provider: 'anthropic', model: 'claude' }] }),
      profile('envkey', { model: { provider: 'openai', model: 'gpt-4o-mini', apiKey: { env: 'OPENAI_API_KEY' } } }),
      profile('fromconfigmaps', { personaFrom: { configMapKeyRef: { name: 'prompt', key: 'persona.md' } }, contextFiles: [{ name: 'AGENTS.md', contentFrom: { configMapKeyRef: { name: 'prompt', key: 'AGENTS.md', optional: true } } }, { name: 'CLAUDE.md', content: 'Prefer tables.' }] }),
      profile('sandboxed', { toolsets: ['terminal', 'file'], sandbox: { backend: 'kubernetes', runtimeClassName: 'gvisor', resources: { limits: { cpu: '1', memory: '1Gi' } }, workspace: { size: '2Gi', ttl: '24h' }, network: { egress: 'allowlist', allow: ['api.github.com:443', '203.0.113.0/24', '10.1.2.3:5432'] } }, approvals: { mode: 'smart', deny: ['git push*'] } }),
      profile('warm', { sandbox: { backend: 'kubernetes', mode: 'session', warmPool: { size: 2 }, idleTimeoutSeconds: 900 } }),
      profile('sandboxdefaults', { sandbox: {} }),
      profile('moa', { model: { provider: 'moa', model: 'council' }, moa: { presets: [{ name: 'council', referenceModels: [{ provider: 'openai', model: 'a' }, { provider: 'anthropic', model: 'b' }], aggregator: { provider: 'openai', model: 'c' } }] } }),
      profile('mcp', { mcpServers: [{ name: 'github', url: 'https://mcp.example/mcp', headers: { Authorization: { secretKeyRef: { name: 'gh', key: 'token' } } }, tools: { exclude: ['delete_repo'] } }, { name: 'old', transport: 'sse', url: 'https://sse.example/sse' }] }),
      profile('mcpstdio-ok', { sandbox: {}, mcpServers: [{ name: 'fs', transport: 'stdio', command: 'npx', args: ['-y', 'server-fs', '/workspace'], env: { API_TOKEN: { secretKeyRef: { name: 'fs', key: 'token' } } } }] }),
      agent('messenger', { messaging: { homeChannels: [{ name: 'ops', target: 'slack:COPS' }], allowedTargets: ['telegram:-1001234:17', 'discord:*'] } }),
      profile('asks', { toolsets: ['clarify', 'messaging'], clarify: {} }),
      // "off" in an enum: kubectl reads the CRD as YAML 1.1, where a bare off is a boolean.
      agent('quietgroups', { platforms: [{ type: 'slack', credentials: { secretRef: { name: 's' } }, groupPolicy: 'off' }] }),
      profile('noapprovals', { approvals: { mode: 'off' } }),
      skill('good', {}), cron('good', '0 9 * * 1-5'), cron('macro', '@every 30m')]) {
      const r = await apply(obj);
      expect(r.code, `${obj.kind}: ${r.stderr}`).toBe(0);
    }
    const got = JSON.parse((await cp.kubectl(['get', '-n', ns, 'agent.hermes.dev/good', '-o', 'json'])).stdout) as { spec: Record<string, unknown> };
    expect(got.spec).toMatchObject({ busyPolicy: 'interrupt', platforms: [], runtime: { mode: 'shared' }, api: { enabled: true } });
    const sandboxed = JSON.parse((await cp.kubectl(['get', '-n', ns, 'profile.hermes.dev/sandboxdefaults', '-o', 'json'])).stdout) as { spec: Record<string, unknown> };
    expect(sandboxed.spec.sandbox).toEqual({ mode: 'call', timeoutSeconds: 180, workspace: { size: '5Gi', ttl: '168h' }, network: { egress: 'none', allow: [] } });
    const mcp = JSON.parse((await cp.kubectl(['get', '-n', ns, 'profile.hermes.dev/mcp', '-o', 'json'])).stdout) as { spec: { mcpServers: Record<string, unknown>[] } };
    expect(mcp.spec.mcpServers[0]).toMatchObject({ name: 'github', transport: 'http', enabled: true });
  });

  it.each([
    ['a secret value with no source', agent('nosource', { api: { keys: [{}] } }), 'set exactly one source of the secret value'],
    ['a secret value with two sources', agent('twosources', { api: { keys: [{ env: 'K', secretKeyRef: { name: 's', key: 'k' } }] } }), 'set exactly one source of the secret value'],
    ['a fallback model without provider', profile('nofallbackprovider', { fallbackModels: [{ model: 'm' }] }), 'each fallback model needs provider and model'],
    ['a fallback model without model', profile('nofallbackmodel', { fallbackModels: [{ provider: 'openai' }] }), 'each fallback model needs provider and model'],
    ['an API key from env sent to the Profile\'s baseURL', profile('envkeyurl', { model: { provider: 'openai-compatible', model: 'm', baseURL: 'https://models.example/v1', apiKey: { env: 'OPENAI_API_KEY' } } }), 'an API key from env is only sent to the provider\'s default endpoint'],
    ['an extra fallback key from env with a baseURL', profile('envfallbackurl', { fallbackModels: [{ provider: 'openai', model: 'm', baseURL: 'https://models.example/v1', extraApiKeys: [{ env: 'K' }] }] }), 'an API key from env is only sent to the provider\'s default endpoint'],
    ['persona together with personaFrom', profile('twopersonas', { persona: 'Hi.', personaFrom: { configMapKeyRef: { name: 'c', key: 'k' } } }), 'set persona or personaFrom, not both'],
    ['a context file with content and contentFrom', profile('twocontents', { contextFiles: [{ name: 'AGENTS.md', content: 'a', contentFrom: { configMapKeyRef: { name: 'c', key: 'k' } } }] }), 'each context file needs exactly one of content or contentFrom'],
    ['an http MCP server without url', profile('mcpnourl', { mcpServers: [{ name: 'gh' }] }), 'an MCP server with transport http or sse needs url'],
    ['a stdio MCP server without a sandbox', profile('mcpstdio', { mcpServers: [{ name: 'fs', transport: 'stdio', command: 'npx', args: ['server-fs'] }] }), 'stdio MCP servers (transport stdio) run only inside the session\'s sandbox'],
    ['a stdio MCP server without command', profile('mcpstdionocmd', { sandbox: {}, mcpServers: [{ name: 'fs', transport: 'stdio' }] }), 'an MCP server with transport stdio needs command'],
    ['a stdio MCP server with url', profile('mcpstdiourl', { sandbox: {}, mcpServers: [{ name: 'fs', transport: 'stdio', command: 'npx', url: 'https://x.example/mcp' }] }), 'an MCP server with transport stdio takes no url or headers'],
    ['an http MCP server with a command', profile('mcpcommand', { mcpServers: [{ name: 'fs', url: 'https://x.example/mcp', command: 'npx' }] }), 'command, args and env are for transport stdio'],
    ['a context file with neither', profile('nocontent', { contextFiles: [{ name: 'AGENTS.md' }] }), 'each context file needs exactly one of content or contentFrom'],
    ['a skill name over 64 characters', skill('longname', { name: 'a'.repeat(65) }), 'name must be at most 64 characters'],
    ['a skill description over 1024 characters', skill('longdesc', { description: 'd'.repeat(1025) }), 'description must be at most 1024 characters'],
    ['an empty schedule', cron('empty', ''), 'schedule must be a 5-field cron expression'],
    ['a 4-field schedule', cron('fourfields', '* * * *'), 'schedule must be a 5-field cron expression'],
    ['a prose schedule', cron('prose', 'every morning'), 'schedule must be a 5-field cron expression'],
    ['session mode on bubblewrap', profile('sessionbwrap', { sandbox: { backend: 'bubblewrap', mode: 'session' } }), 'mode session keeps a sandbox per session in the cluster'],
    ['a warm pool for per-call sandboxes', profile('warmcall', { sandbox: { warmPool: { size: 1 } } }), 'warmPool only applies to mode session'],
    ['an idle timeout for per-call sandboxes', profile('idlecall', { sandbox: { idleTimeoutSeconds: 600 } }), 'idleTimeoutSeconds only applies to mode session'],
    ['Pod settings on bubblewrap', profile('bwrapimage', { sandbox: { backend: 'bubblewrap', image: 'busybox' } }), 'image, runtimeClassName, namespace and resources are Pod settings'],
    ['an allowlist with no entries', profile('emptyallow', { sandbox: { network: { egress: 'allowlist' } } }), 'egress allowlist needs at least one allow entry'],
    ['allow entries without allowlist', profile('allownone', { sandbox: { network: { allow: ['1.2.3.4:443'] } } }), 'egress allowlist needs at least one allow entry'],
    ['a timeout over 600 s', profile('longtimeout', { sandbox: { timeoutSeconds: 601 } }), 'spec.sandbox.timeoutSeconds'],
    ['an egress entry that is not a destination', profile('badentry', { sandbox: { network: { egress: 'allowlist', allow: ['http://x'] } } }), 'spec.sandbox.network.allow[0]'],
    ['a workspace ttl that is not a duration', profile('badttl', { sandbox: { workspace: { ttl: 'a week' } } }), 'spec.sandbox.workspace.ttl'],
    ['provider moa naming no preset', profile('moanopreset', { model: { provider: 'moa', model: 'council' } }), 'model.provider moa needs model to name a preset of spec.moa.presets'],
    ['two moa presets of one name', profile('moatwice', { moa: { presets: [moaPreset('p'), moaPreset('p')] } }), 'moa preset names must be unique'],
    ['a moa default preset that is not a preset', profile('moadefault', { moa: { defaultPreset: 'q', presets: [moaPreset('p')] } }), 'moa.defaultPreset must name one of moa.presets'],
    ['a moa preset of 9 reference models', profile('moanine', { moa: { presets: [{ ...moaPreset('p'), referenceModels: Array.from({ length: 9 }, (_, i) => ({ provider: 'openai', model: `m${i}` })) }] } }), 'spec.moa.presets[0].referenceModels'],
    ['a send_message target that is not PLATFORM:CHAT', agent('badtarget', { messaging: { allowedTargets: ['#general'] } }), 'spec.messaging.allowedTargets[0]'],
    ['a clarify timeout under 10 s', profile('shortclarify', { clarify: { timeoutSeconds: 1 } }), 'spec.clarify.timeoutSeconds'],
    // Names the apiserver itself would take (DNS-1123 subdomains, up to 253): the controllers could only report them.
    ['an Agent named with a dot', agent('my.agent', {}), 'metadata.name must be a DNS-1123 label'],
    ['an Agent name of 64 characters', agent('a'.repeat(64), {}), 'metadata.name must be a DNS-1123 label'],
    ['a Profile named with a dot', profile('team.default', {}), 'metadata.name must be a DNS-1123 label'],
    ['a Skill named with a dot', { ...skill('deploy', {}), metadata: { name: 'deploy.v2' } }, 'metadata.name must be a DNS-1123 label'],
    ['a CronJob named with a dot', cron('daily.digest', '@daily'), 'metadata.name must be a DNS-1123 label'],
    ['allowAll with an allowlist', agent('allowall', { platforms: [{ type: 'slack', credentials: { secretRef: { name: 's' } }, allowAll: true, allowlist: ['U1'] }] }), 'allowAll and allowlist are exclusive'],
  ])('refuses %s with the rule\'s message', async (_what, obj, message) => {
    const r = await apply(obj);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(message);
    expect((await cp.kubectl(['get', '-n', ns, `${obj.kind.toLowerCase()}.hermes.dev/${obj.metadata.name}`])).code).not.toBe(0);
  });

  // Every free string, list and map has a bound (operator/crds/convert.ts refuses to render one
  // without): a 300 KB model name used to be stored. Just over each bound is refused, naming the
  // field; at the bound it is accepted.
  it.each([
    ['a 300 KB model name', profile('hugemodel', { model: { provider: 'openai', model: 'm'.repeat(300_000) } }), 'spec.model.model: Too long: may not be more than 256'],
    ['a model name of 257 characters', profile('longmodel', { model: { provider: 'openai', model: 'm'.repeat(257) } }), 'spec.model.model: Too long: may not be more than 256'],
    ['a baseURL over 2048 characters', profile('longurl', { model: { provider: 'openai-compatible', model: 'm', baseURL: `https://models.example/${'v'.repeat(2_048)}` } }), 'spec.model.baseURL: Too long: may not be more than 2048'],
    ['a cron prompt over 100 000 characters', { ...cron('longprompt', '@daily'), spec: { ...cron('x', '@daily').spec, prompt: 'p'.repeat(100_001) } }, 'spec.prompt: Too long: may not be more than 100000'],
    ['a Secret name over 253 characters', agent('longsecret', { api: { keys: [{ secretKeyRef: { name: 's'.repeat(254), key: 'k' } }] } }), 'spec.api.keys[0].secretKeyRef.name: Too long: may not be more than 253'],
    ['1001 admins', agent('manyadmins', { admins: Array.from({ length: 1_001 }, (_, i) => `slack:U${i}`) }), 'spec.admins: Too many: 1001: must have at most 1000 items'],
    ['65 matchLabels', agent('manylabels', { skills: { matchLabels: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`l${i}`, 'v'])) } }), 'spec.skills.matchLabels: Too many: 65: must have at most 64 items'],
    ['a history limit past Postgres\' integer', { ...cron('hugehistory', '@daily'), spec: { ...cron('x', '@daily').spec, successfulRunsHistoryLimit: 3_000_000_000 } }, 'spec.successfulRunsHistoryLimit: Invalid value: 3000000000: spec.successfulRunsHistoryLimit in body should be less than or equal to 1000'],
    ['a skill body over 100 000 characters', skill('longbody', { body: 'b'.repeat(100_001) }), 'spec.body: Too long: may not be more than 100000'],
    // Numbers were taken up to int64: past the ledger's integer and numeric columns and any provider's limit.
    ['a maxOutputTokens of 9e15', profile('hugeoutput', { model: { provider: 'openai', model: 'm', maxOutputTokens: 9_000_000_000_000_000 } }), 'spec.model.maxOutputTokens in body should be less than or equal to 1000000'],
    ['a contextWindow over 10 M tokens', profile('hugewindow', { model: { provider: 'openai', model: 'm', contextWindow: 10_000_001 } }), 'spec.model.contextWindow in body should be less than or equal to 10000000'],
    ['a price past the cost column', profile('hugeprice', { model: { provider: 'openai', model: 'm', pricing: { inputPerMTok: 1, outputPerMTok: 1e15 } } }), 'spec.model.pricing.outputPerMTok in body should be less than or equal to 10000'],
    ['a fallback price past the cost column', profile('hugefallbackprice', { fallbackModels: [{ provider: 'openai', model: 'm2', pricing: { inputPerMTok: 10_001, outputPerMTok: 1 } }] }), 'spec.fallbackModels[0].pricing.inputPerMTok in body should be less than or equal to 10000'],
    ['a maxIterations past Postgres\' integer', profile('hugeiterations', { maxIterations: 3_000_000_000 }), 'spec.maxIterations in body should be less than or equal to 10000'],
    ['a spend cap of 1e12 USD', profile('hugecap', { spendCaps: { agent: { monthlyUsd: 1e12 } } }), 'spec.spendCaps.agent.monthlyUsd in body should be less than or equal to 1000000'],
    ['a startingDeadlineSeconds past the 7-day lookback', { ...cron('hugedeadline', '@daily'), spec: { ...cron('x', '@daily').spec, startingDeadlineSeconds: 9_000_000_000 } }, 'spec.startingDeadlineSeconds in body should be less than or equal to 604800'],
  ])('refuses %s, naming the field and its bound', async (_what, obj, message) => {
    const r = await apply(obj);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(message);
    expect((await cp.kubectl(['get', '-n', ns, `${obj.kind.toLowerCase()}.hermes.dev/${obj.metadata.name}`])).code).not.toBe(0);
  });

  // Postgres stores no NUL (text or jsonb): a persona with one was accepted, and then every publish
  // of the Agent failed ("unsupported Unicode escape sequence", Ready=False PublishFailed, retried).
  it.each([
    ['a persona', profile('nulpersona', { persona: 'You are\u0000 terse.' }), 'spec.persona in body should match \'^[^\\x00]*$\''],
    ['a model name', profile('nulmodel', { model: { provider: 'openai', model: 'gpt\u0000' } }), 'spec.model.model in body should match'],
    ['a skill body', skill('nulbody', { body: '# Do\u0000 it' }), 'spec.body in body should match'],
    ['a cron prompt', { ...cron('nulprompt', '@daily'), spec: { ...cron('x', '@daily').spec, prompt: 'a\u0000b' } }, 'spec.prompt in body should match'],
    ['an admin', agent('nuladmin', { admins: ['slack:U1\u0000'] }), 'spec.admins[0] in body should match'],
  ])('refuses NUL in %s, naming the field', async (_what, obj, message) => {
    const r = await apply(obj);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(message);
  });

  it('accepts values at their bounds', async () => {
    for (const obj of [profile('atbounds', { model: { provider: 'openai-compatible', model: 'm'.repeat(256), baseURL: `https://models.example/${'v'.repeat(2_048 - 23)}` }, persona: 'p'.repeat(20_000) }),
      { ...cron('atbounds', '@daily'), spec: { ...cron('x', '@daily').spec, prompt: 'p'.repeat(100_000) } },
      agent('atbounds', { admins: Array.from({ length: 1_000 }, (_, i) => `slack:U${i}`), skills: { matchLabels: Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`l${i}`, 'v'])) } }),
      skill('atbounds', { body: 'b'.repeat(100_000) }),
      profile('numbersatbounds', { model: { provider: 'openai', model: 'm', contextWindow: 10_000_000, maxOutputTokens: 1_000_000, pricing: { inputPerMTok: 10_000, outputPerMTok: 10_000, cacheReadPerMTok: 10_000, cacheWritePerMTok: 10_000 } }, maxIterations: 10_000, spendCaps: { agent: { dailyUsd: 1_000_000, monthlyUsd: 1_000_000 } } }),
      { ...cron('deadlineatbound', '@daily'), spec: { ...cron('x', '@daily').spec, startingDeadlineSeconds: 604_800 } }]) {
      const r = await apply(obj);
      expect(r.code, `${obj.kind}: ${r.stderr}`).toBe(0);
    }
  });

  it.each([
    ['busyPolicy', agent('badpolicy', { busyPolicy: 'panic' }), 'spec.busyPolicy'],
    ['platform type', agent('badplatform', { platforms: [{ type: 'myspace', credentials: { secretRef: { name: 's' } } }] }), 'spec.platforms[0].type'],
    ['model provider', profile('badprovider', { model: { provider: 'skynet', model: 'm' } }), 'spec.model.provider'],
    ['fallback provider moa', profile('moafallback', { fallbackModels: [{ provider: 'moa', model: 'p' }] }), 'spec.fallbackModels[0].provider'],
    ['moa aggregator provider moa', profile('moaagg', { moa: { presets: [{ ...moaPreset('p'), aggregator: { provider: 'moa', model: 'p' } }] } }), 'spec.moa.presets[0].aggregator.provider'],
    ['concurrencyPolicy', { ...cron('badconc', '@daily'), spec: { ...cron('x', '@daily').spec, concurrencyPolicy: 'Sometimes' } }, 'spec.concurrencyPolicy'],
  ])('refuses a bad %s enum', async (_what, obj, field) => {
    const r = await apply(obj);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(field);
    expect(r.stderr).toMatch(/Unsupported value/);
  });

  it('teaches the fields through kubectl explain and groups the kinds under `kubectl get hermes`', async () => {
    const explain = await waitFor(async () => {
      const r = await cp.kubectl(['explain', 'agents.spec.busyPolicy']);
      return r.code === 0 ? r.stdout : undefined;
    }, { what: 'kubectl explain to see the Agent schema' });
    expect(explain).toContain('What a plain message does while a turn of its session runs');
    const cronExplain = await cp.kubectl(['explain', 'hcron.spec.schedule']);
    expect(cronExplain.stdout).toContain('5-field cron expression');
    const all = await cp.kubectl(['get', 'hermes', '-n', ns]);
    expect(all.code, all.stderr).toBe(0);
    for (const name of ['agent.hermes.dev/good', 'profile.hermes.dev/good', 'skill.hermes.dev/good', 'cronjob.hermes.dev/good']) expect(all.stdout).toContain(name);
    // A bare `cronjob` is Kubernetes' batch/v1 kind (docs/cron.md says so): ours are hcron / cronjobs.hermes.dev.
    const batch = await cp.kubectl(['get', 'cronjob', '-n', ns, '-o', 'name']);
    expect(batch.code, batch.stderr).toBe(0);
    expect(batch.stdout).not.toContain('good');
    for (const name of ['hcron', 'cronjobs.hermes.dev']) expect((await cp.kubectl(['get', name, '-n', ns, '-o', 'name'])).stdout).toContain('cronjob.hermes.dev/good');
    const cronCols = await cp.kubectl(['get', 'hcron', '-n', ns]);
    expect(cronCols.stdout.split('\n')[0]).toMatch(/NAME\s+READY\s+AGENT\s+SCHEDULE\s+SUSPEND\s+LAST\s+NEXT\s+AGE/);
    const agentCols = await cp.kubectl(['get', 'agents.hermes.dev', '-n', ns]);
    expect(agentCols.stdout.split('\n')[0]).toMatch(/NAME\s+READY\s+PROFILE\s+PLATFORMS\s+AGE/);
  });
});
