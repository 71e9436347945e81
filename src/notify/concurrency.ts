// How many handlers one deliverer runs at once (SPEC §20): after its kill -9, at most these run again.

/** `li watch --delivery-concurrency` / `watch.delivery_concurrency` when neither is given. */
export const DEFAULT_DELIVERY_CONCURRENCY = 16;
