// Command output kept within a character budget. Foreground output keeps its head and its tail
// (an error usually shows at the end, the command's context at the start) with a marker saying
// how much was cut; background output is rolling (the newest characters).

const marker = (cut: number) => `\n[… ${cut} characters cut …]\n`;

/** Head and tail of everything pushed, at most `max` characters (plus the cut marker). */
export class CappedOutput {
  private head = '';
  private tail = '';
  private cut = 0;
  private readonly headMax: number;
  private readonly tailMax: number;

  constructor(readonly max: number) {
    this.headMax = Math.floor(max * 0.4);
    this.tailMax = max - this.headMax;
  }

  push(chunk: string): void {
    if (!chunk) return;
    if (this.head.length < this.headMax) {
      const room = this.headMax - this.head.length;
      this.head += chunk.slice(0, room);
      chunk = chunk.slice(room);
      if (!chunk) return;
    }
    this.tail += chunk;
    if (this.tail.length > this.tailMax) {
      this.cut += this.tail.length - this.tailMax;
      this.tail = this.tail.slice(this.tail.length - this.tailMax);
    }
  }

  get truncated(): boolean {
    return this.cut > 0;
  }

  text(): string {
    return this.cut > 0 ? this.head + marker(this.cut) + this.tail : this.head + this.tail;
  }
}

/** The newest `max` characters of everything pushed. */
export class RollingOutput {
  private buf = '';
  private dropped = 0;

  constructor(readonly max: number) {}

  push(chunk: string): void {
    this.buf += chunk;
    if (this.buf.length > this.max) {
      this.dropped += this.buf.length - this.max;
      this.buf = this.buf.slice(this.buf.length - this.max);
    }
  }

  get truncated(): boolean {
    return this.dropped > 0;
  }

  text(): string {
    return this.buf;
  }
}
