// The framing of a sandbox channel (types.ts ChannelRequest): newline-terminated UTF-8 lines. The
// splitter turns a process's output bytes into lines, refusing a line longer than the limit (a
// process that never sends a newline must not fill the worker's memory).
import { MAX_CHANNEL_LINE_BYTES } from './types.js';

export class LineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  private failed = false;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly onTooLong: () => void,
    private readonly maxBytes = MAX_CHANNEL_LINE_BYTES,
  ) {}

  push(chunk: Buffer): void {
    if (this.failed) return;
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      if (!this.fits(piece.length)) return;
      const line = Buffer.concat([...this.parts, piece]).toString('utf8');
      this.parts = [];
      this.size = 0;
      this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
    }
    const rest = chunk.subarray(start);
    if (rest.length === 0 || !this.fits(rest.length)) return;
    this.parts.push(Buffer.from(rest));
    this.size += rest.length;
  }

  private fits(more: number): boolean {
    if (this.size + more <= this.maxBytes) return true;
    this.failed = true;
    this.parts = [];
    this.onTooLong();
    return false;
  }
}

/** One line for the channel: refuses a newline inside (it would split the message). */
export function channelLine(line: string): string {
  if (line.includes('\n')) throw new Error('a channel line must not contain a newline');
  return `${line}\n`;
}

export const lineTooLong = `a line on the sandbox channel was longer than ${MAX_CHANNEL_LINE_BYTES} bytes; the process was killed`;
