// Which skills are offered (Hermes' requirement fields), the index text, and /<skill> parsing.
import { describe, expect, it } from 'vitest';
import { skillInvocation, skillsIndexBlock, unmetRequirement, type CatalogSkill } from '../../../services/agent/index.js';

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
