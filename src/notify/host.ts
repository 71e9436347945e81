// Which host a handler belongs to (SPEC §9.3): kept apart from the engine so the push after every leg's
// final write can ask what is owed without loading the engine (it loads only when a handler is owed).

import { machineId, machineOf } from "../host/proc.ts";

/**
 * The host a handler belongs to. The machine id rather than `hostId()` (machine + boot): a standing
 * handler must survive a reboot, and the events it is owed must still be delivered after one.
 */
export function handlerHost(): string {
  return canonicalHost(machineId());
}

/** The uid a handler belongs to, recorded when it is registered and required of whoever runs it (§18). */
export function handlerUid(): number {
  return process.getuid?.() ?? 0;
}

/** A handler's host from either form `hostId()` (machine:boot) or `machineId()` (machine): the machine part. */
export const canonicalHost = machineOf;
