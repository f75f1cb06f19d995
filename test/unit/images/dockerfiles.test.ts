// A lint of images/*/Dockerfile (no container engine runs here): pinned bases, non-root USER, no
// ADD of URLs, no package-manager caches left in a layer, OCI labels, HEALTHCHECK where it applies,
// and the sandbox image's tools. The rules are the ones images/README.md lists.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const dir = new URL('../../../images/', import.meta.url);
const images = readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort();

interface Instruction { op: string; args: string; line: number }

/** Instructions of a Dockerfile: comments dropped, `\` continuations joined. */
function instructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  let buf = '';
  let start = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!buf && (line === '' || line.startsWith('#'))) return;
    if (!buf) start = i + 1;
    buf += (buf ? ' ' : '') + line.replace(/\\$/, '').trim();
    if (!line.endsWith('\\')) {
      const m = /^(\w+)\s+(.*)$/s.exec(buf);
      if (m) out.push({ op: m[1]!.toUpperCase(), args: m[2]!, line: start });
      buf = '';
    }
  });
  return out;
}

/** What breaks the rules in one Dockerfile (empty: none). */
function lint(text: string, opts: { healthcheck: boolean }): string[] {
  const ins = instructions(text);
  const problems: string[] = [];
  const stages = new Set<string>();
  for (const i of ins.filter((x) => x.op === 'FROM')) {
    const [image, as, name] = i.args.replace(/--platform=\S+\s+/, '').split(/\s+/);
    if (!stages.has(image!) && !/@sha256:[a-f0-9]{64}$/.test(image!)) problems.push(`line ${i.line}: FROM ${image} is not pinned by digest`);
    if (as?.toUpperCase() === 'AS' && name) stages.add(name);
  }
  for (const i of ins.filter((x) => x.op === 'ADD')) if (/https?:\/\//.test(i.args)) problems.push(`line ${i.line}: ADD of a URL`);
  const lastFrom = ins.map((x) => x.op).lastIndexOf('FROM');
  const finalStage = ins.slice(lastFrom);
  const users = finalStage.filter((x) => x.op === 'USER');
  const user = users.at(-1)?.args.split(':')[0];
  if (!user) problems.push('the final stage sets no USER');
  else if (!/^[1-9]\d*$/.test(user)) problems.push(`USER ${user} is not a numeric non-root uid`);
  for (const i of ins.filter((x) => x.op === 'RUN')) {
    if (/apt-get install/.test(i.args)) {
      if (!/--no-install-recommends/.test(i.args)) problems.push(`line ${i.line}: apt-get install without --no-install-recommends`);
      if (!/rm -rf [^&;]*\/var\/lib\/apt\/lists/.test(i.args)) problems.push(`line ${i.line}: apt lists left in the layer`);
    }
    if (/\bnpm (ci|install)\b/.test(i.args) && !/npm cache clean --force/.test(i.args)) problems.push(`line ${i.line}: npm cache left in the layer`);
    if (/\bpip3? install\b/.test(i.args) && !/--no-cache-dir/.test(i.args)) problems.push(`line ${i.line}: pip cache left in the layer`);
    if (/curl[^|]*\|\s*(ba)?sh/.test(i.args)) problems.push(`line ${i.line}: curl | sh`);
  }
  const labels = finalStage.filter((x) => x.op === 'LABEL').map((x) => x.args).join(' ');
  for (const key of ['title', 'description', 'source', 'licenses', 'version']) {
    if (!labels.includes(`org.opencontainers.image.${key}=`)) problems.push(`no OCI label org.opencontainers.image.${key}`);
  }
  if (opts.healthcheck && !finalStage.some((x) => x.op === 'HEALTHCHECK')) problems.push('no HEALTHCHECK');
  if (ins.some((x) => /:latest\b/.test(x.args) && x.op === 'FROM')) problems.push('a FROM uses latest');
  return problems;
}

describe('images/*/Dockerfile', () => {
  it('are the runtime and the sandbox image', () => {
    expect(images).toEqual(['runtime', 'sandbox']);
  });

  for (const name of ['runtime', 'sandbox']) {
    it(`${name}: pinned bases, non-root USER, no URL ADDs, no caches, OCI labels${name === 'runtime' ? ', HEALTHCHECK' : ''}`, () => {
      const text = readFileSync(new URL(`${name}/Dockerfile`, dir), 'utf8');
      expect(lint(text, { healthcheck: name === 'runtime' })).toEqual([]);
    });
  }

  it('runtime: multi-stage, one image for every command', () => {
    const ins = instructions(readFileSync(new URL('runtime/Dockerfile', dir), 'utf8'));
    expect(ins.filter((i) => i.op === 'FROM').length).toBeGreaterThanOrEqual(2);
    expect(ins.find((i) => i.op === 'ENTRYPOINT')?.args).toBe('["node", "/app/bin/hermes.js"]');
    expect(ins.some((i) => i.op === 'COPY' && i.args.startsWith('--from=build'))).toBe(true);
  });

  it('sandbox: has the documented tools', () => {
    const install = instructions(readFileSync(new URL('sandbox/Dockerfile', dir), 'utf8')).find((i) => /apt-get install/.test(i.args))!.args;
    for (const tool of ['bash', 'coreutils', 'git', 'python3', 'curl', 'ripgrep']) expect(install).toMatch(new RegExp(`\\b${tool}\\b`));
  });

  it('catches what it must (the lint can fail)', () => {
    const bad = 'FROM node:22\nADD https://example.com/x.tgz /x\nRUN apt-get update && apt-get install -y git\nRUN npm ci\nUSER root\n';
    const problems = lint(bad, { healthcheck: true });
    for (const want of [/not pinned by digest/, /ADD of a URL/, /--no-install-recommends/, /apt lists/, /npm cache/, /not a numeric non-root/, /OCI label/, /HEALTHCHECK/]) {
      expect(problems.join('\n')).toMatch(want);
    }
    expect(lint('FROM debian@sha256:' + 'a'.repeat(64) + '\nUSER 0\n', { healthcheck: false }).join('\n')).toMatch(/USER 0 is not a numeric non-root uid/);
  });
});
