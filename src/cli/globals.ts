// Per-process CLI state set by the entry point: the global --db flag; and whether the ledger failed
// this command (a leg that spooled its outcome), so the spool is not replayed into it on the way out.
// Kept free of imports so `li --version` and `li --help` load nothing else.

export const cliContext: { dbFlag: string | undefined; ledgerFailed: boolean } = {
  dbFlag: undefined,
  ledgerFailed: false,
};
