// The bundled skills (skills/ at the top of the repository, published under hermes:bundled at
// start): every folder must import as a valid Skill exactly as `publishBundledSkills` reads it,
// pass the same injection scan, keep Hermes' index advice (name = folder, one short sentence),
// point only at files it ships, name only toolsets and tools that exist, and be offered — in the
// index, in skills_list, and through skill_view with each of its files — once those are enabled.
import { readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BUNDLED_SKILLS_DIR, skillDescriptionAdvised, skillNameMax, type Skill } from '../../../operator/index.js';
import { importSkillDir } from '../../../operator/skills/import.js';
import { scanContent } from '../../../operator/skills/scan.js';
import {
  getTimeTool, memoryTool, offeredSkills, ProcessRegistry, sandboxTools, sessionSearchTool, skillsIndexBlock, skillsListTool, skillViewTool, todoTool, unmetRequirement,
  type CatalogSkill, type Tool, type ToolContext,
} from '../../../services/agent/index.js';

const folders = readdirSync(BUNDLED_SKILLS_DIR, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
const skills = new Map<string, Skill>();
const load = async (folder: string): Promise<Skill> => {
  let skill = skills.get(folder);
  if (!skill) { skill = await importSkillDir(join(BUNDLED_SKILLS_DIR, folder)); skills.set(folder, skill); }
  return skill;
};

// Every tool the product registers, and so every toolset a Profile can enable.
const processes = new ProcessRegistry();
afterAll(() => processes.close());
const allTools: Tool[] = [getTimeTool, todoTool, memoryTool, sessionSearchTool, skillsListTool, skillViewTool, ...sandboxTools(processes)];
const allEnabled = { toolsets: [...new Set(allTools.map((t) => t.toolset))].sort(), tools: allTools.map((t) => t.name).sort() };

/** The skill as the catalog reads it back from its stored row (bundled source). */
const asCatalog = (s: Skill): CatalogSkill => ({ ...s.spec, trust: undefined, source: 'bundled' } as unknown as CatalogSkill);

/** The paths under references/, templates/, scripts/ or assets/ that a text mentions. */
const mentionedFiles = (text: string): string[] =>
  [...new Set([...text.matchAll(/\b(?:references|templates|scripts|assets)\/[A-Za-z0-9._/-]*[A-Za-z0-9_-]/g)].map((m) => m[0]))].sort();

describe('bundled skills (skills/)', () => {
  it('ships a handful of skill folders, each with a SKILL.md, and the toolsets they may name exist', () => {
    expect(folders.length).toBeGreaterThanOrEqual(4);
    for (const folder of folders) expect(existsSync(join(BUNDLED_SKILLS_DIR, folder, 'SKILL.md')), folder).toBe(true);
    expect(allEnabled.toolsets).toEqual(expect.arrayContaining(['clock', 'file', 'memory', 'session_search', 'skills', 'terminal', 'todo']));
  });

  it('names are unique', async () => {
    const names = await Promise.all(folders.map(async (f) => (await load(f)).spec.name));
    expect(new Set(names).size).toBe(names.length);
  });

  describe.each(folders)('%s', (folder) => {
    it('imports as a valid Skill named after its folder, with the product\'s author and license', async () => {
      const s = await load(folder);
      expect(s.spec.name).toBe(folder);
      expect(s.metadata.name).toBe(folder);
      expect(s.spec.name.length).toBeLessThanOrEqual(skillNameMax);
      expect(s.spec.name).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*$/);
      expect(s.spec.version).toMatch(/^\d+\.\d+\.\d+$/);
      expect(s.spec.author).toBe('Hermes Operator');
      expect(s.spec.license).toBe('Apache-2.0');
      expect(s.spec.hermes?.tags?.length ?? 0).toBeGreaterThan(0);
      // Every front-matter key is one the importer knows: nothing parked in the extra annotation.
      expect(s.metadata.annotations?.['hermes.dev/extra-front-matter']).toBeUndefined();
    });

    it('has a one-sentence description within Hermes\' advised length', async () => {
      const { description } = (await load(folder)).spec;
      expect(description.length).toBeLessThanOrEqual(skillDescriptionAdvised);
      expect(description).toMatch(/^[A-Z][^\n]*[^.\s]\.$/);
      expect(description.slice(0, -1)).not.toMatch(/[.!?](\s|$)/);
    });

    it('passes the injection scan in SKILL.md and every file, as publishing runs it', async () => {
      const { spec } = await load(folder);
      const findings = scanContent([{ file: 'SKILL.md', text: `${spec.description}\n${spec.body}` }, ...spec.files.map((f) => ({ file: f.path, text: f.content }))]);
      expect(findings.map((f) => f.message)).toEqual([]);
    });

    it('reads the way Hermes skills do: when to use, procedure, pitfalls, verification', async () => {
      const { body } = (await load(folder)).spec;
      expect(body).toMatch(/^# \S/);
      for (const heading of ['When to use', 'Procedure', 'Pitfalls', 'Verification']) expect(body).toMatch(new RegExp(`^## ${heading}\\b`, 'm'));
    });

    it('ships every file its body points to, and points to every file it ships', async () => {
      const { body, files } = (await load(folder)).spec;
      const shipped = files.map((f) => f.path).sort();
      expect(mentionedFiles(body).filter((p) => !shipped.includes(p))).toEqual([]);
      expect(shipped.filter((p) => !body.includes(p))).toEqual([]);
      for (const f of files) expect(f.content.trim().length, f.path).toBeGreaterThan(0);
    });

    it('requires only toolsets and tools that exist, and relates only to bundled skills', async () => {
      const { hermes, relatedSkills } = (await load(folder)).spec;
      for (const t of [...(hermes?.requiresToolsets ?? []), ...(hermes?.fallbackForToolsets ?? [])]) expect(allEnabled.toolsets, t).toContain(t);
      for (const t of [...(hermes?.requiresTools ?? []), ...(hermes?.fallbackForTools ?? [])]) expect(allEnabled.tools, t).toContain(t);
      for (const r of [...relatedSkills, ...(hermes?.relatedSkills ?? [])]) expect(folders, r).toContain(r);
    });

    it('is offered with every toolset enabled, and hidden while a toolset it requires is not', async () => {
      const skill = asCatalog(await load(folder));
      expect(unmetRequirement(skill, allEnabled)).toBeUndefined();
      for (const needed of skill.hermes?.requiresToolsets ?? []) {
        const without = { toolsets: allEnabled.toolsets.filter((t) => t !== needed), tools: allEnabled.tools };
        expect(unmetRequirement(skill, without)).toMatch(new RegExp(`needs the ${needed} toolset`));
      }
    });
  });

  it('all reach the index, skills_list and skill_view (body and every file) of an agent with every toolset', async () => {
    const catalog = (await Promise.all(folders.map(load))).map(asCatalog).sort((a, b) => a.name.localeCompare(b.name));
    const offered = offeredSkills(catalog, allEnabled);
    expect(offered.map((s) => s.name)).toEqual(folders);

    const index = skillsIndexBlock(offered);
    for (const s of offered) expect(index).toContain(`- ${s.name}: ${s.description}`);

    const ctx: ToolContext = { sessionId: 's', signal: new AbortController().signal, now: () => 0, skills: { offered: () => Promise.resolve(offered) } };
    const listed = JSON.parse(await skillsListTool.handler({}, ctx)) as { skills: { name: string }[] };
    expect(listed.skills.map((s) => s.name)).toEqual(folders);
    for (const s of offered) {
      const viewed = JSON.parse(await skillViewTool.handler({ name: s.name }, ctx)) as { success: boolean; content: string; files?: string[] };
      expect(viewed).toMatchObject({ success: true, content: s.body });
      expect(viewed.files ?? []).toEqual(s.files.map((f) => f.path));
      for (const f of s.files) {
        const file = JSON.parse(await skillViewTool.handler({ name: s.name, file_path: f.path }, ctx)) as { success: boolean; content: string };
        expect(file).toEqual(expect.objectContaining({ success: true, content: f.content }));
      }
    }
  });

  it('with no terminal, the skills that need one drop out of the index and the rest stay', async () => {
    const catalog = (await Promise.all(folders.map(load))).map(asCatalog);
    const noTerminal = { toolsets: allEnabled.toolsets.filter((t) => t !== 'terminal'), tools: allEnabled.tools.filter((t) => t !== 'terminal' && t !== 'process') };
    const offered = offeredSkills(catalog, noTerminal).map((s) => s.name);
    const needsTerminal = catalog.filter((s) => s.hermes?.requiresToolsets?.includes('terminal')).map((s) => s.name);
    expect(needsTerminal).toContain('k8s-workload-triage');
    expect(offered.filter((n) => needsTerminal.includes(n))).toEqual([]);
    expect(offered.sort()).toEqual(folders.filter((f) => !needsTerminal.includes(f)));
  });
});
