// Which skills are offered (Hermes' requirement fields), the index text, and /<skill> parsing.
import { describe, expect, it } from 'vitest';
import { skillInvocation, skillsIndexBlock, unmetRequirement, type CatalogSkill } from '../../../services/agent/index.js';
import { skillFieldsFrom, skillMdText, splitSkillMd } from '../../../services/agent/skills/skill-md.js';

const skill = (name: string, over: Partial<CatalogSkill> = {}): CatalogSkill => ({
  name, description: `${name} does a thing.`, source: 'bundled', tags: [], relatedSkills: [], requiredEnvironmentVariables: [], body: `${name} body`, files: [], ...over,
});
const enabled = { toolsets: ['terminal', 'skills'], tools: ['terminal', 'process', 'skills_list', 'skill_view'] };

describe('skill requirements', () => {
  it('hides a skill until all its toolsets and tools are enabled, and a fallback once what it replaces is', () => {
    expect(unmetRequirement(skill('a'), enabled)).toBeUndefined();
    expect(unmetRequirement(skill('b', { hermes: { requiresToolsets: ['terminal', 'file'] } }), enabled)).toBe('needs the file toolset');
    expect(unmetRequirement(skill('c', { hermes: { requiresTools: ['web_search', 'web_extract'] } }), enabled)).toBe('needs the web_search, web_extract tools');
    expect(unmetRequirement(skill('d', { hermes: { requiresTools: ['process'] } }), enabled)).toBeUndefined();
    expect(unmetRequirement(skill('e', { hermes: { fallbackForToolsets: ['browser', 'terminal'] } }), enabled)).toBe('is a fallback for the terminal toolset, which is enabled');
    expect(unmetRequirement(skill('f', { hermes: { fallbackForTools: ['process'] } }), enabled)).toBe('is a fallback for the process tool, which is enabled');
    expect(unmetRequirement(skill('g', { platforms: ['macos', 'windows'] }), enabled)).toBe('runs on macos, windows only (commands run on linux)');
    expect(unmetRequirement(skill('h', { platforms: ['linux', 'macos'] }), enabled)).toBeUndefined();
  });

  it('reads list fields written without brackets as Hermes does: a lone value is a one-item list, tags split on commas', () => {
    const fields = (front: string) => {
      const { front: f, body } = splitSkillMd(`---\nname: x\ndescription: X.\n${front}\n---\nbody\n`);
      return skillFieldsFrom(f, body, []) as unknown as CatalogSkill;
    };
    // `platforms: macos` is a macOS-only skill in Hermes; it was read as no restriction and offered on linux.
    const mac = { ...fields('platforms: macos'), source: 'learned' as const };
    expect(mac.platforms).toEqual(['macos']);
    expect(unmetRequirement(mac, enabled)).toBe('runs on macos only (commands run on linux)');
    expect(unmetRequirement({ ...fields('platforms: [Linux]'), source: 'learned' }, enabled)).toBeUndefined();
    // Stored lower case, as the Skill spec's enum takes them: hermes skills import refused 'platforms: [Linux, MacOS]'.
    expect(fields('platforms: [Linux, MacOS]').platforms).toEqual(['linux', 'macos']);
    expect(fields('tags: git, writing\nrelated_skills: changelog').tags).toEqual(['git', 'writing']);
    expect(fields('related_skills: changelog').relatedSkills).toEqual(['changelog']);
    const needs = { ...fields('metadata:\n  hermes:\n    requires_toolsets: browser'), source: 'learned' as const };
    expect(unmetRequirement(needs, enabled)).toBe('needs the browser toolset');
  });

  it('writes SKILL.md with every front-matter field it reads: an edit\'s diff, an export and a read-back lose none', () => {
    const text = [
      '---', 'name: full', 'description: Every field.', 'version: 1.2.0', 'author: Ops', 'license: MIT', 'platforms: [windows]', 'tags: [a, b]', 'related_skills: [other]',
      'required_environment_variables:', '  - name: TOKEN', '    prompt: The token', '    required_for: calls',
      'metadata:', '  hermes:', '    requires_toolsets: [terminal]', '    fallback_for_tools: [web_search]', '    config:', '      - key: style', '        default: terse',
      '---', 'Step 1.', '',
    ].join('\n');
    const { front, body } = splitSkillMd(text);
    const fields = skillFieldsFrom(front, body, []) as unknown as Parameters<typeof skillMdText>[0];
    // The staged diff of an edit that only made a skill windows-only showed the same lines before and after.
    const again = splitSkillMd(skillMdText(fields));
    expect(skillFieldsFrom(again.front, again.body, [])).toEqual(fields);
    expect(skillMdText(fields)).toContain('platforms:\n  - windows');
  });

  it('renders the index sorted as given, one line per skill, nothing when none', () => {
    expect(skillsIndexBlock([])).toBe('');
    const block = skillsIndexBlock([skill('alpha', { description: 'First\n line.' }), skill('beta')]);
    expect(block.split('\n').slice(-2)).toEqual(['- alpha: First line.', '- beta: beta does a thing.']);
  });

  it('parses /<skill-name> [request] only for offered skills', () => {
    const offered = [skill('pod-triage')];
    expect(skillInvocation('/pod-triage  the api pod\nrestarts ', offered)).toMatchObject({ skill: { name: 'pod-triage' }, request: 'the api pod\nrestarts' });
    expect(skillInvocation('/pod-triage', offered)).toMatchObject({ request: '' });
    expect(skillInvocation('/other x', offered)).toBeUndefined();
    expect(skillInvocation('please /pod-triage', offered)).toBeUndefined();
    expect(skillInvocation('/pod-triage-x', offered)).toBeUndefined();
  });
});
