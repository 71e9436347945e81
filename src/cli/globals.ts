// Per-process CLI state set by the entry point: the global --db flag.
// Kept free of imports so `li --version` and `li --help` load nothing else.

export const cliContext: { dbFlag: string | undefined } = {
  dbFlag: undefined,
};
