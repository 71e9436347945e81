// A child process's output as lines, for tests and benches that watch a process while it runs: read
// one line at a time (lineReader), or gather them all as they come (collectLines). No dependencies, so
// bench/ imports it as the tests do.

/** The next line of `stream` on each call, as it arrives; null once the stream has ended. */
export function lineReader(stream: ReadableStream<Uint8Array>) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  return async function next(): Promise<string | null> {
    for (;;) {
      const nl = buffer.indexOf("\n");
      if (nl >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        return line;
      }
      const { value, done } = await reader.read();
      if (done) return null;
      buffer += decoder.decode(value, { stream: true });
    }
  };
}

export interface CollectedLines {
  /** Every line so far (the array fills in as the stream delivers). */
  lines: string[];
  /** true once the stream has closed. */
  ended(): boolean;
  /** Resolves when the stream has closed and its last line is in `lines`. */
  closed: Promise<void>;
}

/** A child's output split into lines as they arrive, without waiting for the child to end. */
export function collectLines(stream: ReadableStream<Uint8Array>): CollectedLines {
  const lines: string[] = [];
  let ended = false;
  const closed = (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of stream) {
      buffer += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        lines.push(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
      }
    }
    ended = true;
  })();
  return { lines, ended: () => ended, closed };
}
