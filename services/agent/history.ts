// Stored transcript → the internal format the loop sends. Replay after a crash: a tool call
// whose result was never recorded gets an explicit "effect UNKNOWN" result, so the model is
// told instead of silently re-running a call that may have had side effects.
import type { ChatMessage, ToolCall } from './messages.js';

export interface StoredTurnMessage {
  seq?: number;
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  toolCalls: ToolCall[] | null;
  toolCallId: string | null;
}

const seqOf = (r: StoredTurnMessage) => (r.seq !== undefined ? { seq: r.seq } : {});

export const UNKNOWN_EFFECT = 'effect UNKNOWN: the turn ended before this call reported a result. It may or may not have run; it was not re-run. Check before repeating it.';

const MARKER = /^\[compressed through message (\d+)\]\n/;

/** The transcript row recording a compression: the summary and the last sequence it covers. */
export const summaryRow = (summary: string, coversSeq: number): string => `[compressed through message ${coversSeq}]\n${summary}`;

/** Rows after the latest compression, led by its summary (as a user-role context line). */
function afterSummary(rows: readonly StoredTurnMessage[]): { lead: ChatMessage[]; rows: readonly StoredTurnMessage[] } {
  for (let i = rows.length - 1; i >= 0; i--) {
    const r = rows[i]!;
    const m = r.role === 'system' ? MARKER.exec(r.content) : null;
    if (!m) continue;
    const covers = Number(m[1]);
    return { lead: [{ role: 'user', content: r.content.slice(m[0].length) }], rows: rows.filter((x) => (x.seq ?? 0) > covers) };
  }
  return { lead: [], rows };
}

export function historyFromTranscript(all: readonly StoredTurnMessage[]): ChatMessage[] {
  const { lead, rows } = afterSummary(all);
  const out: ChatMessage[] = [...lead];
  let open: ToolCall[] = [];
  const closeOpen = () => {
    for (const c of open) out.push({ role: 'tool', content: UNKNOWN_EFFECT, toolCallId: c.id, name: c.name });
    open = [];
  };
  for (const r of rows) {
    if (r.role === 'system') continue;
    if (r.role === 'tool') {
      const i = open.findIndex((c) => c.id === r.toolCallId);
      if (i < 0) continue; // its call fell outside the window: an orphan result confuses providers
      const [call] = open.splice(i, 1);
      out.push({ role: 'tool', content: r.content, toolCallId: call!.id, name: call!.name, ...seqOf(r) });
      continue;
    }
    closeOpen();
    if (r.role === 'assistant' && r.toolCalls?.length) {
      out.push({ role: 'assistant', content: r.content, toolCalls: r.toolCalls, ...seqOf(r) });
      open = [...r.toolCalls];
    } else {
      out.push({ role: r.role, content: r.content, ...seqOf(r) });
    }
  }
  closeOpen();
  return out;
}
