// `hermes migrate --create NAME` as a developer types it: a name the migration folder cannot take
// is refused by flag with exit 1 before any database is needed. `--create Bad-Name` died with a
// stack trace (the check deep in createMigration), and `--create ""` applied the pending
// migrations instead, as if --create had not been given.
import { describe, expect, it } from 'vitest';
import { runHermes } from '../../support/cli.js';

describe('hermes migrate --create', () => {
  it('refuses a name that is not snake_case, empty included, with exit 1 and no stack trace', async () => {
    const names = ['Bad-Name', '', '../escape', 'a b'];
    const results = await Promise.all(names.map((name) => runHermes(['migrate', '--create', name], { DATABASE_URL: 'postgresql://h@127.0.0.1:1/h' })));
    results.forEach((r, i) => {
      expect(r.code, names[i]).toBe(1);
      expect(r.stderr.trim(), names[i]).toBe(`error: option '--create <name>' argument '${names[i]}' is invalid. expected a snake_case name (a-z, 0-9, _), e.g. add_session_tags.`);
      expect(r.stdout, names[i]).toBe('');
    });
  });
});
