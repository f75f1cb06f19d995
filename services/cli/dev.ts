// `hermes dev` (behind `make dev`): gateway and worker in one process on localhost, with the
// manifests of a folder compiled into Postgres by the same compile step the operator runs.
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { ConfigError, DEV_SECRET_ENV, findAgent, publishRevision, registerInstance, sandboxPodSelector, sha256, type Config } from '../core/index.js';
import { CompileError, ManifestError, compileAgent, loadManifests, manifestSkillsOf, publishBundledSkillsAtStart, publishManifestSkills, staticConfigMaps, storeManifestCronJobs, turnOffUndeclared, type ManifestSet, type Profile } from '../../operator/index.js';
import type { SecretResolver } from '../agent/index.js';
import { startWorker } from '../worker/index.js';
import { startGatewayOn } from './gateway.js';
import { applyMigrations } from '../../prisma/migrate.js';
import { openRuntime, onShutdown, type Runtime } from './runtime.js';
import { asLookup, clusterKubeConfig, openSecrets, secretEnv, type SecretSetup } from './secrets.js';
import { startDevOperator } from './dev-k8s.js';
import { loadClusterConfig, portNumber } from './operator.js';
import type { OperatorHandle } from '../../operator/manager.js';

const say = (line = '') => process.stderr.write(`${line}\n`);

/** With no usable model the system would only answer errors: say what to set instead. */
export function modelProblem(config: Config, profiles: Profile[]): string | undefined {
  const needsOpenAIKey = profiles.some((p) => p.spec.model.provider === 'openai' && p.spec.model.apiKey && !p.spec.model.baseURL);
  if (needsOpenAIKey && !config.OPENAI_API_KEY && !config.OPENAI_BASE_URL) {
    return [
      'No usable model: the example Profile uses OpenAI, and neither OPENAI_API_KEY nor OPENAI_BASE_URL is set.',
      'Set one of:',
      '  OPENAI_API_KEY=sk-…                                   (OpenAI)',
      '  OPENAI_BASE_URL=http://localhost:11434/v1 HERMES_DEV_MODEL=llama3.2   (Ollama or any OpenAI-compatible server)',
      'then run `make dev` again.',
    ].join('\n');
  }
  return undefined;
}

/** The agents loaded, and those the printed API key does not open (their spec.api.keys name other secrets). */
interface Loaded { agents: string[]; keyless: string[] }

const userFacing = (message: string) => Object.assign(new Error(message), { userFacing: true });

/**
 * Where `hermes dev` reads secrets: Secret manifests in the folder and HERMES_SECRETS_FILE, then
 * the allow-listed variables (default: the provider keys the examples name). The generated API
 * key, and a placeholder model key for a local OPENAI_BASE_URL, are its own values.
 */
function devSecretSetup(config: Config, apiKey: string, set: ManifestSet): Omit<SecretSetup, 'defaultSource'> {
  return {
    defaultEnvAllow: DEV_SECRET_ENV,
    ownValues: { HERMES_DEV_API_KEY: apiKey, ...(config.OPENAI_API_KEY ? {} : { OPENAI_API_KEY: 'unused' }) },
    manifests: set.secrets,
  };
}

async function loadAgents(rt: Runtime, set: ManifestSet, dir: string, apiKey: string, secrets: SecretResolver): Promise<Loaded> {
  const sources = { secrets: asLookup(secrets), configMaps: staticConfigMaps(set.configMaps) };
  const names: string[] = [];
  const keyless: string[] = [];
  for (const agent of set.agents) {
    const profile = set.profiles.find((p) => p.metadata.name === agent.spec.profileRef.name && p.metadata.namespace === agent.metadata.namespace);
    if (!profile) throw userFacing(`Agent ${agent.metadata.namespace}/${agent.metadata.name}: Profile "${agent.spec.profileRef.name}" not found in ${dir}`);
    if (rt.config.HERMES_DEV_MODEL) profile.spec.model.model = rt.config.HERMES_DEV_MODEL;
    const compiled = await compileAgent(agent, profile, sources, manifestSkillsOf(agent, set)).catch((err: Error) => {
      throw err instanceof CompileError ? userFacing(`Agent ${agent.metadata.namespace}/${agent.metadata.name}: ${err.message}`) : err;
    });
    await publishRevision(rt.db, compiled, 'hermes-dev');
    const name = `${agent.metadata.namespace}/${agent.metadata.name}`;
    names.push(name);
    if (!compiled.api.enabled || !compiled.api.keySha256.includes(sha256(apiKey))) keyless.push(name);
  }
  return { agents: names, keyless };
}

/** Names what an earlier run published and is now off: `which` says which of its things (those a folder no longer declares, or all with --k8s). */
function sayTurnedOff(off: { agents: string[]; cronJobs: string[] }, which: string): void {
  if (off.agents.length) say(`hermes dev: turned off agents an earlier run published ${which} (their sessions and memory are kept): ${off.agents.join(', ')}`);
  if (off.cronJobs.length) say(`hermes dev: deleted CronJobs an earlier run stored ${which}: ${off.cronJobs.join(', ')}`);
}

/** K8S mode: the manifests go into the dev kube-apiserver and the operator compiles them. */
async function loadAgentsK8s(rt: Runtime, dir: string, setup: Omit<SecretSetup, 'defaultSource'>): Promise<{ agents: string[]; operator: OperatorHandle; secrets: SecretResolver }> {
  const kc = loadClusterConfig();
  const env = secretEnv(rt.config, setup);
  const gatewayUrl = `http://${rt.config.HERMES_HOST}:${rt.config.HERMES_PORT}`;
  const started = await startDevOperator({ kc, db: rt.db, log: rt.log, dir, env, gatewayUrl, sandboxServiceAccount: rt.config.HERMES_SANDBOX_SERVICE_ACCOUNT, model: rt.config.HERMES_DEV_MODEL });
  if (started.pruned.length) say(`hermes dev: deleted from the dev cluster what an earlier run applied and ${dir} no longer declares: ${started.pruned.join(', ')}`);
  const deadline = Date.now() + 30_000;
  for (const key of started.agents) {
    const [ns, name] = key.split('/') as [string, string];
    while (!(await findAgent(rt.db.pool, ns, name)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    if (!(await findAgent(rt.db.pool, ns, name))) say(`Agent ${key} is not Ready yet: kubectl describe agents.hermes.dev -n ${ns} ${name}`);
  }
  // The worker reads the Secrets from the dev cluster, as a cluster worker does.
  const secrets = await openSecrets(rt.config, { ...setup, defaultSource: 'kubernetes', kubeConfig: () => kc });
  return { agents: started.agents, operator: started.operator, secrets };
}

/**
 * `hermes dev`'s own defaults: loopback only; commands in bubblewrap, or with `--k8s` in one Pod
 * per call on the dev cluster (`make dev K8S=1` runs a test kubelet there), as a cluster install.
 */
const devOverrides = (port: number | undefined, k8s: boolean, env: NodeJS.ProcessEnv = process.env) => ({
  HERMES_HOST: env.HERMES_HOST ?? '127.0.0.1',
  HERMES_SANDBOX_BACKEND: env.HERMES_SANDBOX_BACKEND ?? (k8s ? 'kubernetes' : 'bubblewrap'),
  ...(port !== undefined ? { HERMES_PORT: port } : {}),
});

/** `/hooks/slack/<ns>/<name>` of the loaded agents that have a slack platform. */
async function slackHookPaths(rt: Runtime, agents: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const key of agents) {
    const [ns, name] = key.split('/') as [string, string];
    const found = await findAgent(rt.db.pool, ns, name);
    if (found?.compiled.platforms?.some((p) => p.type === 'slack')) out.push(`/hooks/slack/${ns}/${name}`);
  }
  return out;
}

/** What each loaded agent with a telegram platform needs: its webhook path, or that the gateway polls. */
async function telegramLines(rt: Runtime, agents: string[], gatewayUrl: string): Promise<string[]> {
  const out: string[] = [];
  for (const key of agents) {
    const [ns, name] = key.split('/') as [string, string];
    const tg = (await findAgent(rt.db.pool, ns, name))?.compiled.platforms?.find((p) => p.type === 'telegram');
    if (!tg) continue;
    out.push(tg.mode === 'polling'
      ? `  Telegram:       ${key} long-polls the Bot API (no URL to set; see README "Connect Telegram")`
      : `  Telegram hook:  ${gatewayUrl}/hooks/telegram/${ns}/${name}   (setWebhook url, with secret_token; see README "Connect Telegram")`);
  }
  return out;
}

/** What `hermes dev` prints once it runs: where to reach it, with what key, and what to try. */
function printBanner(b: { rt: Runtime; gw: { url: string; metricsUrl?: string | undefined }; apiKey: string; agents: string[]; keyless: string[]; slackHooks: string[]; podsInCluster: boolean }): void {
  const { gw, apiKey } = b;
  const first = b.agents[0] ?? 'default/hermes';
  say('');
  say(`Hermes is running. Agents: ${b.agents.join(', ') || '(none)'}`);
  say(`  gateway:        ${gw.url}`);
  say(`  API key:        ${apiKey}${b.rt.config.HERMES_DEV_API_KEY ? '' : '   (generated; set HERMES_DEV_API_KEY to choose one)'}`);
  say(`  OpenAI base:    ${gw.url}/v1   (model "${first}")`);
  say(`  models:         curl -H "Authorization: Bearer ${apiKey}" ${gw.url}/v1/models`);
  say(`  send a message: curl -H "Authorization: Bearer ${apiKey}" -H 'content-type: application/json' -d '{"content":"hello"}' ${gw.url}/v1/agents/${first}/messages`);
  say(`  metrics:        ${gw.metricsUrl ?? gw.url}/metrics     health: ${gw.url}/readyz`);
  if (b.podsInCluster) say(`  sandboxes:      one Pod per command on the dev cluster: kubectl get pods -A -l ${sandboxPodSelector} -w`);
  for (const hook of b.slackHooks) say(`  Slack events:   ${gw.url}${hook}   (Request URL of the Slack app; see README "Connect Slack")`);
  for (const name of b.keyless) {
    say(`  note: ${name} does not take this API key (its spec.api has no key from HERMES_DEV_API_KEY); add \`keys: [{ env: HERMES_DEV_API_KEY }]\` under spec.api to call it over HTTP.`);
  }
}

/** `--manifests`: an empty one would load the working folder. */
function folderName(v: string): string {
  if (!v.trim()) throw new InvalidArgumentError('expected a folder.');
  return v;
}

export const devCommand = new Command('dev')
  .description('Run the whole system locally in one process (gateway + worker) with the manifests of a folder; behind `make dev`.')
  .option('-m, --manifests <dir>', 'folder of Agent, Profile, Skill and CronJob (and ConfigMap, Secret) manifests (default: HERMES_DEV_MANIFESTS or examples/minimal)', folderName)
  .option('-p, --port <port>', 'gateway port (default: HERMES_PORT or 8080)', portNumber)
  .option('--k8s', 'apply the manifests to the cluster in KUBECONFIG (`make dev K8S=1`) and run the operator instead of compiling files')
  .action(async (opts: { manifests?: string; port?: number; k8s?: boolean }) => {
    const rt = await openRuntime('dev', devOverrides(opts.port, opts.k8s === true));
    say('hermes dev: applying migrations…');
    await applyMigrations(rt.config.DATABASE_URL);
    const apiKey = rt.config.HERMES_DEV_API_KEY ?? `hk-dev-${randomBytes(18).toString('base64url')}`;
    const dir = resolve(opts.manifests ?? rt.config.HERMES_DEV_MANIFESTS);
    let agents: string[];
    let keyless: string[] = [];
    let operator: OperatorHandle | undefined;
    let secrets: SecretResolver;
    try {
      const set = await loadManifests(dir);
      const problem = modelProblem(rt.config, set.profiles);
      if (problem) throw userFacing(problem);
      const setup = devSecretSetup(rt.config, apiKey, set);
      if (opts.k8s) {
        // The cluster's objects are what runs: what a file-mode run published goes off first.
        sayTurnedOff(await turnOffUndeclared(rt.db, undefined), 'from a folder (with --k8s the operator publishes what the cluster declares)');
        ({ agents, operator, secrets } = await loadAgentsK8s(rt, dir, setup));
      } else {
        secrets = await openSecrets(rt.config, { ...setup, defaultSource: 'local' });
        // Skills first (the agents select them), CronJobs after their agents (the scheduler in the worker fires them).
        const skills = await publishManifestSkills(rt.db, set);
        ({ agents, keyless } = await loadAgents(rt, set, dir, apiKey, secrets));
        const cronJobs = await storeManifestCronJobs(rt.db, set).catch((err: Error) => { throw userFacing(err.message); });
        if (skills.length || cronJobs.length) say(`hermes dev: skills ${skills.join(', ') || '(none)'}; CronJobs ${cronJobs.join(', ') || '(none)'}`);
        // Only once the folder loaded: a folder that fails to load leaves the last run's agents as they were.
        sayTurnedOff(await turnOffUndeclared(rt.db, set), `that ${dir} does not declare`);
      }
    } catch (err) {
      if ((err as { userFacing?: boolean }).userFacing || err instanceof ConfigError || err instanceof ManifestError) {
        say(`\n${(err as Error).message}`);
        await rt.close();
        process.exit(2);
      }
      throw err;
    }
    await publishBundledSkillsAtStart(rt.db, rt.log);
    const instance = await registerInstance(rt.db.pool, 'dev');
    // Profiles whose sandbox is `kubernetes` (all, with --k8s) run their Pods in KUBECONFIG's cluster.
    const worker = await startWorker({ ...rt, secrets, instance, kubeConfig: clusterKubeConfig });
    const gw = await startGatewayOn(rt, secrets);
    printBanner({ rt, gw, apiKey, agents, keyless, slackHooks: await slackHookPaths(rt, agents), podsInCluster: opts.k8s === true && rt.config.HERMES_SANDBOX_BACKEND === 'kubernetes' });
    for (const line of await telegramLines(rt, agents, gw.url)) say(line);
    say('Press Ctrl-C to stop.');
    onShutdown(rt.log, async () => {
      await gw.close();
      await worker.close();
      await operator?.stop();
      await rt.close();
    });
  });
