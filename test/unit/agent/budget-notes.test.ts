// Request-only notes: where they go, and when the iteration budget speaks up.
import { describe, expect, it } from 'vitest';
import { budgetNote, withNotes, type ChatMessage } from '../../../services/agent/index.js';

describe('iteration budget notes', () => {
  it('says nothing without a budget or below 70 %, nudges from 70 %, warns from 90 %', () => {
    expect(budgetNote(50, undefined)).toBeUndefined();
    expect(budgetNote(6, 10)).toBeUndefined();
    expect(budgetNote(7, 10)).toBe('[Iteration budget: this is model call 8 of 10; 3 are left. Start wrapping up your work.]');
    expect(budgetNote(89, 100)).toMatch(/call 90 of 100; 11 are left\. Start wrapping/);
    expect(budgetNote(90, 100)).toBe('[Iteration budget: this is model call 91 of 100; only 10 are left. Give your final answer now.]');
    expect(budgetNote(0, 1)).toBeUndefined();
  });

  it('appends notes to a copy of the last tool or user message, else adds a user line; the input is not changed', () => {
    const convo: ChatMessage[] = [{ role: 'user', content: 'hi' }, { role: 'assistant', content: '', toolCalls: [{ id: 'a', name: 't', arguments: '{}' }] }, { role: 'tool', content: 'ok', toolCallId: 'a' }];
    const out = withNotes(convo, ['one', 'two']);
    expect(out.at(-1)).toEqual({ role: 'tool', content: 'ok\n\none\n\ntwo', toolCallId: 'a' });
    expect(convo[2]!.content).toBe('ok');
    expect(withNotes([{ role: 'assistant', content: 'done' }], ['note'])).toEqual([{ role: 'assistant', content: 'done' }, { role: 'user', content: 'note' }]);
    expect(withNotes(convo, [])).toEqual(convo);
  });
});
