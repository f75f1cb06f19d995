// Tool result limits: 100 000 characters per result (truncated with a notice), 200 000 per turn
// (the rest become 1 500-character preview blocks), `read_file` never replaced by a preview.
import { describe, expect, it } from 'vitest';
import { MAX_RESULT_CHARS, MAX_TURN_RESULT_CHARS, PREVIEW_CHARS, previewBlock, ResultBudget, truncateResult } from '../../../services/agent/index.js';

describe('tool result limits', () => {
  it('truncates a result over 100 000 characters and says how much was cut', () => {
    const out = truncateResult('x'.repeat(MAX_RESULT_CHARS + 5_000));
    expect(out.startsWith('x'.repeat(MAX_RESULT_CHARS) + '\n[truncated: the result had 105,000 characters')).toBe(true);
    expect(out).toContain('5,000 were cut');
    expect(truncateResult('short')).toBe('short');
  });

  it('keeps the turn within 200 000 characters: a result that does not fit becomes a preview block', () => {
    const budget = new ResultBudget();
    const a = 'a'.repeat(90_000);
    expect(budget.fit('search', a)).toBe(a);
    expect(budget.fit('search', a)).toBe(a);
    const third = budget.fit('search', 'c'.repeat(90_000));
    expect(third).toBe(previewBlock('c'.repeat(90_000), 180_000));
    expect(third).toMatch(/^<tool-result-preview>\nThis result had 90,000 characters, more than this turn's tool-output budget has left \(200,000 characters per turn, 180,000 already used\)\./);
    expect(third).toContain(`<preview>\n${'c'.repeat(PREVIEW_CHARS)}\n</preview>`);
    expect(third).toContain('88,500 were cut and not stored');
    expect(third.length).toBeLessThan(PREVIEW_CHARS + 600);
    // Small results always fit; read_file is never replaced by a preview.
    expect(budget.fit('search', 'tiny')).toBe('tiny');
    const file = 'f'.repeat(50_000);
    expect(budget.fit('read_file', file)).toBe(file);
    expect(budget.spent).toBeGreaterThan(MAX_TURN_RESULT_CHARS);
  });
});
