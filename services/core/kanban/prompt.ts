// What a dispatched turn is told: its task (id, title, body), the handoffs of its parents, the
// latest comments, and how to end the run. The lifecycle is the model's to close: a turn that ends
// without kanban_complete or kanban_block is a protocol violation (counted by the breaker).
import type { Sql } from '../db.js';

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…` : s);

export async function taskPrompt(sql: Sql, taskId: string, attempt: number): Promise<string> {
  const { rows: [t] } = await sql.query<{ title: string; body: string | null }>(`SELECT title, body FROM kanban_tasks WHERE id = $1`, [taskId]);
  const { rows: parents } = await sql.query<{ id: string; title: string; result: string | null }>(
    `SELECT p.id, p.title, p.result FROM kanban_links l JOIN kanban_tasks p ON p.id = l.parent_id WHERE l.child_id = $1 ORDER BY p.completed_at`, [taskId]);
  const { rows: comments } = await sql.query<{ author: string; body: string }>(
    `SELECT author, body FROM (SELECT id, author, body FROM kanban_comments WHERE task_id = $1 ORDER BY id DESC LIMIT 10) c ORDER BY id`, [taskId]);
  const lines = [
    `You are running Kanban task ${taskId}${attempt > 1 ? ` (attempt ${attempt}; kanban_show lists the earlier runs)` : ''}.`,
    `Title: ${t?.title ?? ''}`,
    ...(t?.body ? ['', t.body] : []),
  ];
  if (parents.length) lines.push('', 'Handoffs from the tasks this one depends on:', ...parents.map((p) => `- ${p.id} ${p.title}: ${clip(p.result ?? '(no summary)', 2_000)}`));
  if (comments.length) lines.push('', 'Latest comments:', ...comments.map((c) => `- ${c.author}: ${clip(c.body, 1_000)}`));
  lines.push('', 'When the work is done, call kanban_complete with a short summary. If you need a person, call kanban_block with the question. During long work call kanban_heartbeat every few minutes. Ending without one of kanban_complete or kanban_block counts as a failed run.');
  return lines.join('\n');
}
