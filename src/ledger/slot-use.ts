// Whether this process's PostgreSQL pool counts against its host's connection slots (§20,
// postgres/slots.ts): a command that holds its ledger for its whole life (li watch, li ui, li wait)
// keeps its connections outside them, or it would hold a slot for hours and starve the host's legs.
// Free of imports: the entry point sets it before anything of PostgreSQL loads.

let longLived = false;

/** Marks this process as one that holds its ledger for its whole life: no slot is taken for it. */
export function holdLedgerLong(): void {
  longLived = true;
}

export function holdsLedgerLong(): boolean {
  return longLived;
}
