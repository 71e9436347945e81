// The variable that ties a handler to the process that started it (SPEC §20): `<pid>.<start ticks>`.

/** Set on every handler li runs; never passed on to a leg's command or a detached supervisor (they outlive handlers by design). */
export const HANDLER_OWNER_ENV = "LI_HANDLER_OWNER";
