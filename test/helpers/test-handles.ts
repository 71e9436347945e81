// Handles a test opened (ledgers, row helpers) closed after that test: every PostgreSQL handle holds
// pooled connections, and the suite opens far more of them than the server's connection limit. Handles opened outside a test (beforeAll, a describe body) live until the run ends.

type Closer = () => unknown;

let inTest = false;
let open: Closer[] = [];
let registered = new Set<object>();

/** Called by the preload before each test (before the file's own beforeEach hooks). */
export function markTestStart(): void {
  inTest = true;
  open = [];
  registered = new Set();
}

/** Registers `close` to run after the current test; outside a test it is left to the process's end. */
export function closeAfterTest(close: Closer): void {
  if (inTest) open.push(close);
}

/** closeAfterTest, once per test for `handle` however often it is used (a handle that reconnects on use). */
export function closeAfterTestOnce(handle: object, close: Closer): void {
  if (!inTest || registered.has(handle)) return;
  registered.add(handle);
  open.push(close);
}

/** Called by the preload after each test: closes what the test opened, newest first; a handle the test closed itself may close twice. */
export async function closeTestHandles(): Promise<void> {
  const closing = open.reverse();
  open = [];
  registered = new Set();
  inTest = false;
  for (const close of closing) {
    try {
      await close();
    } catch {
      // Already closed by the test itself: nothing left to release.
    }
  }
}
