// Server-sent events as a test client reads them: one parser for every stream the tests follow
// (admission events, chat completion chunks, run events).

/** One frame: its `event:` name (none for a plain `data:` frame) and its data lines joined. */
export interface SseEvent { event: string | undefined; data: string }

/**
 * The frames of a server-sent event stream in the order they arrive; comment lines (`: ping`) are
 * skipped. Leaving the loop early cancels the stream.
 */
export async function* sseFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const lines = buffer.slice(0, cut).split('\n').filter((l) => !l.startsWith(':'));
      buffer = buffer.slice(cut + 2);
      if (lines.length === 0) continue;
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7);
      const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      yield { event, data };
    }
  }
}
