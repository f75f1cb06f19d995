// The todo list's rules, as Hermes' todo tool has them: items {id, content, status, parent?},
// list order is priority; a write either replaces the list or (merge) updates items by id and
// appends new ones; duplicate ids keep the last; the one in_progress item is lifted ahead of
// earlier pending ones (flat lists only); at most 256 items of at most 4 000 characters; every
// change bumps the revision. Pure functions: the store (todo-store.ts) applies them in a
// transaction so two workers never interleave a read-modify-write.

export const TODO_STATUSES = ['pending', 'in_progress', 'completed', 'cancelled'] as const;
export type TodoStatus = (typeof TODO_STATUSES)[number];
export const MAX_TODO_ITEMS = 256;
export const MAX_TODO_CONTENT_CHARS = 4_000;
const CUT = '… [truncated]';

export interface TodoItem {
  id: string;
  content: string;
  status: TodoStatus;
  parent?: string;
}

/** What a model may send for one item (fields may be missing in merge mode). */
export interface TodoInput {
  id?: string;
  content?: string;
  status?: string;
  parent?: string | null;
}

export interface TodoList {
  todos: TodoItem[];
  revision: number;
}

/** One session's list, wherever it is kept (ToolContext.todos). */
export interface TodoStore {
  read(sessionId: string): Promise<TodoList>;
  /** Applies a write (`applyTodos`) atomically; returns the list after it. */
  write(sessionId: string, todos: TodoInput[], merge: boolean): Promise<TodoList>;
}

const cap = (s: string) => (s.length > MAX_TODO_CONTENT_CHARS ? s.slice(0, MAX_TODO_CONTENT_CHARS - CUT.length) + CUT : s);
const statusOf = (s: unknown): TodoStatus | undefined => {
  const v = String(s ?? '').trim().toLowerCase();
  return (TODO_STATUSES as readonly string[]).includes(v) ? (v as TodoStatus) : undefined;
};

function validate(t: TodoInput): TodoItem {
  const id = String(t.id ?? '').trim() || '?';
  const item: TodoItem = { id, content: cap(String(t.content ?? '').trim()) || '(no description)', status: statusOf(t.status) ?? 'pending' };
  const parent = String(t.parent ?? '').trim();
  if (parent && parent !== id) item.parent = parent;
  return item;
}

/** Duplicate ids collapse to their last occurrence, in its position; items without an id all stay. */
function dedupe(todos: TodoInput[]): TodoInput[] {
  const last = new Map<string, number>();
  todos.forEach((t, i) => last.set(String(t.id ?? '').trim() || `\0${i}`, i));
  return [...last.values()].sort((a, b) => a - b).map((i) => todos[i]!);
}

/** The in_progress item moves ahead of the first earlier pending one (flat lists only). */
function normaliseOrder(items: TodoItem[]): TodoItem[] {
  if (items.some((i) => i.parent)) return items;
  const active = items.findIndex((i) => i.status === 'in_progress');
  const pending = items.findIndex((i) => i.status === 'pending');
  if (active < 0 || pending < 0 || pending > active) return items;
  const out = items.slice();
  const [item] = out.splice(active, 1);
  out.splice(pending, 0, item!);
  return out;
}

/** Parents that name no item, or that loop, are dropped (the item becomes top-level). */
function sanitiseParents(items: TodoItem[]): void {
  const byId = new Map(items.map((i) => [i.id, i]));
  for (const item of items) if (item.parent && !byId.has(item.parent)) delete item.parent;
  for (const item of items) {
    const seen = new Set([item.id]);
    for (let node = item; node.parent; node = byId.get(node.parent)!) {
      if (seen.has(node.parent)) { delete item.parent; break; }
      seen.add(node.parent);
    }
  }
}

function merged(current: TodoItem[], todos: TodoInput[]): TodoItem[] {
  const items = current.map((i) => ({ ...i }));
  const byId = new Map(items.map((i) => [i.id, i]));
  for (const t of dedupe(todos)) {
    const id = String(t.id ?? '').trim();
    if (!id) continue; // nothing to merge into
    const existing = byId.get(id);
    if (!existing) {
      const item = validate(t);
      byId.set(id, item);
      items.push(item);
      continue;
    }
    if (t.content) existing.content = cap(String(t.content).trim());
    const status = statusOf(t.status);
    if (status) existing.status = status;
    if (t.parent !== undefined) {
      const parent = String(t.parent ?? '').trim();
      if (parent && parent !== id) existing.parent = parent;
      else delete existing.parent;
    }
  }
  return items;
}

/** The list after a write, and whether it changed (then the revision goes up). */
export function applyTodos(current: TodoList, todos: TodoInput[], merge: boolean): TodoList {
  let items = normaliseOrder(merge ? merged(current.todos, todos) : dedupe(todos).map(validate)).slice(0, MAX_TODO_ITEMS);
  sanitiseParents(items);
  items = items.map((i) => ({ ...i }));
  const changed = JSON.stringify(items) !== JSON.stringify(current.todos);
  return { todos: items, revision: current.revision + (changed ? 1 : 0) };
}

/** The tool's answer: the whole list, its revision and counts by status. */
export function todoSummary(list: TodoList): Record<string, unknown> {
  const n = (s: TodoStatus) => list.todos.filter((i) => i.status === s).length;
  return { todos: list.todos, revision: list.revision, summary: { total: list.todos.length, pending: n('pending'), in_progress: n('in_progress'), completed: n('completed'), cancelled: n('cancelled') } };
}
