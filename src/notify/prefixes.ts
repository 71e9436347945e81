// The consumer-name prefixes li reserves for handlers (SPEC §9.1, §9.6): a standing handler's and a leg registration's.

export const HANDLER_PREFIX = "handler:";
export const REGISTRATION_PREFIX = "cb:";
