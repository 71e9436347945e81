// The consumer-name prefixes li reserves for handlers (SPEC §9.1, §9.6): a standing handler's and a leg registration's.
// A vocabulary: notify names its consumers by it and the ledger's index of plain consumers is declared with it.

export const HANDLER_PREFIX = "handler:";
export const REGISTRATION_PREFIX = "cb:";
