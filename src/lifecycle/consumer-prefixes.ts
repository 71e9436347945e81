// The consumer-name prefixes li reserves for handlers (SPEC §9.1, §9.6): a standing handler's and a leg registration's.
// A vocabulary: notify names its consumers by it and the ledger's index of plain consumers is declared with it.

export const HANDLER_PREFIX = "handler:";
export const REGISTRATION_PREFIX = "cb:";

/**
 * A live plain consumer (§9.6): not retired, and not a handler's or a leg registration's own consumer
 * (those carry a reserved prefix). The partial index `consumers_plain_live_idx` is declared with this
 * condition and the prune's owed query repeats it word for word, so that query reaches the few plain
 * consumers by index instead of reading every registration's consumer. `substr` rather than LIKE/GLOB:
 * case-sensitive and spelled the same in both dialects.
 */
export function plainLiveConsumer(name: string, retiredAt: string): string {
  return `${retiredAt} IS NULL AND substr(${name}, 1, ${REGISTRATION_PREFIX.length}) <> '${REGISTRATION_PREFIX}' AND substr(${name}, 1, ${HANDLER_PREFIX.length}) <> '${HANDLER_PREFIX}'`;
}
