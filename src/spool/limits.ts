// The bound on one spool entry (§18): a leg's message tail (64 KiB) and evidence, with room for JSON escaping.
export const SPOOL_ENTRY_LIMIT = 4 * 1024 * 1024;
