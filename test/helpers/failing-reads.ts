// A ledger's reads that fail while a test says so: a server restarting, a database busy past its
// timeout, seen by a waiter or a follower between two of its looks.

import type { LedgerReads } from "../../src/ledger/reads.ts";

/** `reads`, failing every call with `error` while `down()` says so; `failures()` counts those calls. */
export function failingWhile(reads: LedgerReads, down: () => boolean, error: Error): { reads: LedgerReads; failures: () => number } {
  let failures = 0;
  const proxy = new Proxy(reads, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => (down() ? (failures++, Promise.reject(error)) : value.apply(target, args));
    },
  });
  return { reads: proxy, failures: () => failures };
}
