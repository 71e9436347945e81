// The backend-neutral face of opening a ledger early (postgres/early.ts): the entry point starts a
// PostgreSQL ledger's session before the rest of li loads; a SQLite ledger opens in microseconds and
// has nothing to start. Nothing of PostgreSQL loads unless a postgres:// location is given.

import type { LedgerLocation } from "./location.ts";

type Early = typeof import("./postgres/early.ts");
let early: Early | undefined;

/** Starts opening `location` for a command that `use`s it this way (reads, or writes). */
export function openEarly(location: LedgerLocation, use: "reads" | "writes", home?: string): void {
  if (location.kind !== "postgres") return;
  early ??= require("./postgres/early.ts") as Early;
  early.startEarly(location.url, use, home);
}

/** Warms what was started early (a warm supervisor waiting for its run): postgres/early.ts warmStarted. */
export function warmEarly(): void {
  early?.warmStarted();
}

/** Closes what was started early and never taken over by the command. */
export function closeUnusedEarly(): void {
  early?.closeUnadopted();
}
