// `hermes skills import DIR`: turns a Hermes skill folder into a Skill manifest on stdout, ready
// for `kubectl apply -f -` or a GitOps repository.
import { resolve } from 'node:path';
import { Command } from 'commander';
import { importSkillDir, skillManifestYaml } from '../../operator/skills/import.js';
import { learnedSkillCommands } from './learning.js';
import { namespaceName } from './kube-names.js';

const importCommand = new Command('import')
  .description('Print the Skill manifest of a Hermes skill folder (SKILL.md + references/, templates/, scripts/, assets/).')
  .argument('<dir>', 'skill folder containing SKILL.md')
  .option('-n, --namespace <ns>', 'set metadata.namespace (default: none, kubectl picks)', namespaceName)
  .action(async (dir: string, opts: { namespace?: string }) => {
    try {
      process.stdout.write(skillManifestYaml(await importSkillDir(resolve(dir), opts.namespace)));
    } catch (err) {
      console.error((err as Error).message);
      process.exitCode = 2;
    }
  });

export const skillsCommand = new Command('skills')
  .description('Work with Hermes skills: import SKILL.md folders as Skill resources; the history, restore and export of the skills an agent learned.')
  .addCommand(importCommand);
for (const command of learnedSkillCommands) skillsCommand.addCommand(command);
