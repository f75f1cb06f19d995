// An MCP tool result as text for the model: text parts as they are, images and audio named (not
// inlined), embedded resources as their text or URI, structured content as JSON when there is no
// text; capped at 50 000 characters (SPEC: MCP results are capped lower than other tools').

/** Most characters of one MCP result the model gets. */
export const MCP_MAX_RESULT_CHARS = 50_000;

type Part = { type: string; text?: string; mimeType?: string; data?: string; uri?: string; name?: string; resource?: { uri: string; text?: string; mimeType?: string } };

const bytes = (base64 = '') => Math.floor((base64.length * 3) / 4);

const PARTS: Record<string, (p: Part) => string> = {
  text: (p) => p.text ?? '',
  image: (p) => `[image ${p.mimeType ?? ''}, ${bytes(p.data)} bytes, not shown]`,
  audio: (p) => `[audio ${p.mimeType ?? ''}, ${bytes(p.data)} bytes, not shown]`,
  resource: (p) => p.resource?.text ?? `[resource ${p.resource?.uri ?? ''}${p.resource?.mimeType ? ` (${p.resource.mimeType})` : ''}]`,
  resource_link: (p) => `[resource ${p.uri ?? ''}${p.name ? ` "${p.name}"` : ''}]`,
};

const partText = (p: Part): string => (PARTS[p.type] ?? ((x: Part) => `[${x.type} content]`))(p);

/** Cuts `text` at the MCP limit with a notice the model can act on. */
export function capMcpText(text: string, limit = MCP_MAX_RESULT_CHARS): string {
  if (text.length <= limit) return text;
  return `${text.slice(0, limit)}\n[truncated: the MCP result had ${text.length.toLocaleString('en-US')} characters; the first ${limit.toLocaleString('en-US')} are shown. Ask the tool for a narrower result.]`;
}

export function formatCallResult(res: Record<string, unknown>): { text: string; isError: boolean } {
  const parts = Array.isArray(res.content) ? (res.content as Part[]) : [];
  let text = parts.map(partText).filter(Boolean).join('\n');
  if (!text && res.structuredContent !== undefined) text = JSON.stringify(res.structuredContent);
  if (!text && 'toolResult' in res) text = JSON.stringify(res.toolResult);
  return { text: capMcpText(text), isError: res.isError === true };
}
