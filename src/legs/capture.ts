// Captures a leg's output: tees each pipe live to li's own streams and the stream file, keeps a bounded tail of stdout.

export type Sink = (chunk: Uint8Array) => void;

/** The default bound of the captured stdout kept as the assistant message. */
export const DEFAULT_TAIL_BYTES = 64 * 1024;
/** How long the pumps may run on after the command exited (a grandchild may hold the pipes). */
export const DEFAULT_DRAIN_GRACE_MS = 250;

/** The last `limit` bytes written; `truncated` once anything was dropped. */
export class Tail {
  private chunks: Uint8Array[] = [];
  private size = 0;
  truncated = false;

  constructor(private readonly limit: number = DEFAULT_TAIL_BYTES) {}

  push(chunk: Uint8Array): void {
    this.chunks.push(chunk);
    this.size += chunk.byteLength;
    while (this.size > this.limit && this.chunks.length > 0) {
      const first = this.chunks[0]!;
      const excess = this.size - this.limit;
      this.truncated = true;
      if (first.byteLength <= excess) {
        this.chunks.shift();
        this.size -= first.byteLength;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
      }
    }
  }

  text(): string {
    const text = new TextDecoder("utf-8", { fatal: false }).decode(Buffer.concat(this.chunks));
    // A cut through a multi-byte character at the front leaves a replacement character: drop it.
    return this.truncated ? text.replace(/^\uFFFD+/, "") : text;
  }
}

export interface Pump {
  /** Resolves at end of stream, or once cancelled. */
  readonly done: Promise<void>;
  cancel(): void;
}

/** Reads `stream` to its end, handing every chunk to each sink in order; a failing sink is dropped, never fatal. */
export function pump(stream: ReadableStream<Uint8Array>, sinks: Sink[]): Pump {
  const reader = stream.getReader();
  const live = [...sinks];
  const done = (async () => {
    try {
      for (;;) {
        const { done: end, value } = await reader.read();
        if (end) return;
        for (const sink of [...live]) {
          try {
            sink(value);
          } catch {
            live.splice(live.indexOf(sink), 1); // e.g. li's stdout closed by its reader (EPIPE)
          }
        }
      }
    } catch {
      // Cancelled, or the pipe broke: what was read is kept.
    }
  })();
  return {
    done,
    cancel: () => {
      reader.cancel().catch(() => {});
    },
  };
}

/**
 * After the command exited, lets the pumps finish; when something else (a grandchild) still holds
 * the pipes open, cancels them after `graceMs` so the leg never hangs on them.
 */
export async function drainPumps(pumps: readonly Pump[], graceMs: number = DEFAULT_DRAIN_GRACE_MS): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<"grace">((resolve) => (timer = setTimeout(() => resolve("grace"), graceMs)));
  const all = Promise.all(pumps.map((p) => p.done));
  const first = await Promise.race([all, grace]);
  clearTimeout(timer);
  if (first === "grace") {
    for (const p of pumps) p.cancel();
    await all;
  }
}
