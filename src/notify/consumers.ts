// Consumers and standing handlers (SPEC §9.1, §9.6): registration with a watermark, listing, acknowledgement, retirement.

import type { TransitionRow, CallbackRow, DeadDelivery } from "../ledger/rows.ts";
import type { Ledger } from "../ledger/ledger.ts";
import { canonicalKind, EXECUTION_KINDS } from "../lifecycle/policy.ts";
import { UsageError } from "../util/errors.ts";
import { isSafeId } from "../util/ids.ts";
import { compileArgvWords, previewWord } from "./argv.ts";
import { canonicalHost, handlerUid } from "./host.ts";
import { HANDLER_PREFIX, REGISTRATION_PREFIX } from "../lifecycle/consumer-prefixes.ts";

/** A consumer name a person chooses: a safe id (§3) without the prefixes li reserves for handlers. */
export function assertConsumerName(name: string, what = "consumer name"): string {
  if (!isSafeId(name)) throw new UsageError(`${what} ${JSON.stringify(previewWord(name))} must match ^[A-Za-z0-9][A-Za-z0-9._:-]*$`);
  return name;
}

/** A name for `li events consumers add`: a consumer name that is not one of the handlers' reserved prefixes. */
export function assertPlainConsumer(name: string): string {
  assertConsumerName(name);
  if (name.startsWith(HANDLER_PREFIX) || name.startsWith(REGISTRATION_PREFIX)) {
    throw new UsageError(`consumer name '${name}': the prefixes '${HANDLER_PREFIX}' and '${REGISTRATION_PREFIX}' belong to handlers (li events handlers)`);
  }
  return name;
}

export interface ConsumerAdded {
  name: string;
  watermark: number;
  /** false when it was already registered (nothing changed). */
  created: boolean;
}

/** Registers a consumer owed the terminal events committed from now on; a retired one starts afresh. */
export async function addConsumer(ledger: Ledger, name: string): Promise<ConsumerAdded> {
  assertPlainConsumer(name);
  return ledger.transact(async (tx) => {
    const now = ledger.now();
    const watermark = await tx.notify.maxSeq();
    const existing = await tx.notify.getConsumer(name);
    if (existing && existing.retired_at === null) return { name, watermark: existing.watermark, created: false };
    if (existing) await tx.notify.reactivateConsumer(name, watermark, now);
    else await tx.notify.insertConsumer({ name, watermark, registered_at: now, retired_at: null });
    return { name, watermark, created: true };
  });
}

/** Retires a consumer and, in the same transaction, releases every delivery it still owed. */
export async function retireConsumer(ledger: Ledger, name: string): Promise<{ name: string; released: number }> {
  assertPlainConsumer(name);
  return ledger.transact(async (tx) => {
    const existing = await tx.notify.getConsumer(name);
    if (!existing) throw new UsageError(`consumer '${name}' is not registered`);
    if (existing.retired_at !== null) return { name, released: 0 };
    const owed = (await tx.notify.owedToConsumer(name, Number.MAX_SAFE_INTEGER)).length;
    await tx.notify.retireConsumer(name, ledger.now());
    await tx.notify.releaseConsumer(name);
    return { name, released: owed };
  });
}

/** A registered consumer: "live", or "settled" (a leg registration whose one notice was delivered or went dead). */
async function consumerState(ledger: Ledger, name: string): Promise<"live" | "settled"> {
  assertConsumerName(name, "--consumer");
  const store = ledger.backend.notify;
  const consumer = await store.getConsumer(name);
  if (!consumer) {
    // A handler's or a registration's name cannot be added by hand: point at the handlers instead.
    const reserved = name.startsWith(HANDLER_PREFIX) || name.startsWith(REGISTRATION_PREFIX);
    throw new UsageError(`--consumer: '${name}' is not registered (${reserved ? "no handler or leg registration has that name: li events handlers ls" : `li events consumers add ${name}`})`);
  }
  if (consumer.retired_at === null) return "live";
  // Only the delivery engine retires a `cb:` consumer (a person cannot: assertPlainConsumer), when its
  // registration settled. That is the normal end of a leg's notice, not a person's decision: nothing is owed.
  const registration = name.startsWith(REGISTRATION_PREFIX) ? await store.getCallbackByConsumer(name) : null;
  if (registration?.scope === "leg" && registration.retired_at !== null) return "settled";
  throw new UsageError(`--consumer: '${name}' is retired`);
}

async function liveConsumer(ledger: Ledger, name: string): Promise<void> {
  if ((await consumerState(ledger, name)) !== "live") throw new UsageError(`--consumer: '${name}' is retired`);
}

/**
 * The terminal events still owed to a consumer, oldest commit first: every event above its
 * watermark without an acknowledgement, however old. A handler's consumer also applies its filter.
 * A settled leg registration is owed nothing (an empty list, like any consumer that is up to date).
 */
export async function listOwed(ledger: Ledger, name: string, limit = 10_000): Promise<TransitionRow[]> {
  if ((await consumerState(ledger, name)) === "settled") return [];
  const store = ledger.backend.notify;
  const handler = await store.getCallbackByConsumer(name);
  if (!handler) return store.owedToConsumer(name, limit);
  const owed = await store.owedToHandlers({ consumer: name, includeHeld: true, limit });
  const rows: TransitionRow[] = [];
  for (const item of owed) {
    const row = await store.getTransition(item.transition_id);
    if (row) rows.push(row);
  }
  return rows;
}

/** Acknowledges events by hand, in one transaction; idempotent. Every id must be a terminal event. */
export async function ackEvents(ledger: Ledger, name: string, eventIds: readonly string[]): Promise<{ acked: number; already: number }> {
  if (eventIds.length === 0) throw new UsageError("li events ack needs at least one EVENT_ID");
  await liveConsumer(ledger, name);
  return ledger.transact(async (tx) => {
    let acked = 0;
    for (const id of new Set(eventIds)) {
      const event = await tx.notify.getTransition(id);
      if (!event || event.terminal_event !== 1) throw new UsageError(`EVENT_ID ${JSON.stringify(id.slice(0, 80))} is not a terminal event (li events --consumer ${name} lists them)`);
      acked += await tx.notify.ackByHand(id, name);
    }
    return { acked, already: new Set(eventIds).size - acked };
  });
}

export async function listDead(ledger: Ledger, limit = 10_000): Promise<DeadDelivery[]> {
  return ledger.backend.notify.listDead(limit);
}

export interface StandingHandlerInput {
  name: string;
  kinds: readonly string[];
  ids: readonly string[];
  argv: readonly string[];
  hostId: string;
  id?: string;
}

/** A standing handler's input, checked without the ledger (so a refused one never creates a ledger). */
export function checkHandlerInput(input: Omit<StandingHandlerInput, "hostId" | "id">): { consumer: string; argv: readonly string[]; kinds: string[] } {
  assertConsumerName(input.name, "handler name");
  const compiled = compileArgvWords(input.argv, "the handler's argv (after --)");
  if (!compiled.ok) throw new UsageError(compiled.warning.replace(/; the callback is disabled$/, ""));
  const kinds: string[] = [];
  for (const kind of input.kinds) {
    const canonical = canonicalKind(kind);
    if (!canonical || !EXECUTION_KINDS.includes(canonical)) throw new UsageError(`--kind ${JSON.stringify(previewWord(kind))} is not one of ${EXECUTION_KINDS.join(", ")}`);
    if (!kinds.includes(canonical)) kinds.push(canonical);
  }
  for (const id of input.ids) if (!isSafeId(id)) throw new UsageError(`--id ${JSON.stringify(previewWord(id))} is not a valid id`);
  return { consumer: `${HANDLER_PREFIX}${input.name}`, argv: compiled.argv, kinds };
}

/** Registers `handler:<NAME>`: owed the terminal events of matching entities from now on, on this host only. */
export async function addHandler(ledger: Ledger, input: StandingHandlerInput): Promise<CallbackRow> {
  const { consumer, argv, kinds } = checkHandlerInput(input);
  return ledger.transact(async (tx) => {
    const now = ledger.now();
    const existing = await tx.notify.getCallbackByConsumer(consumer);
    if (existing && existing.retired_at === null) throw new UsageError(`handler '${input.name}' already exists (li events handlers rm ${input.name} first)`);
    await tx.notify.deleteRetiredCallback(consumer);
    const row: CallbackRow = {
      id: input.id ?? ledger.newId(),
      scope: "standing",
      name: input.name,
      consumer,
      session_id: null,
      leg_id: null,
      argv: JSON.stringify(argv),
      filter_kinds: kinds.length ? JSON.stringify(kinds) : null,
      filter_ids: input.ids.length ? JSON.stringify([...new Set(input.ids)]) : null,
      origin: "li events handlers add",
      host_id: canonicalHost(input.hostId),
      uid: handlerUid(),
      enabled: 1,
      created_at: now,
      retired_at: null,
    };
    await tx.notify.insertCallback(row);
    const watermark = await tx.notify.maxSeq();
    if (!(await tx.notify.insertConsumer({ name: consumer, watermark, registered_at: now, retired_at: null }))) {
      await tx.notify.reactivateConsumer(consumer, watermark, now);
    }
    return row;
  });
}

/**
 * Retires a standing handler and its consumer, releasing what it was owed, in one transaction. A handler
 * belongs to the uid that registered it (§18): on a shared ledger another user may not silence it. Root
 * may, and so may anyone a handler recorded before owners were (uid unknown: it runs for nobody).
 */
export async function removeHandler(ledger: Ledger, name: string, byUid: number = handlerUid()): Promise<{ released: number }> {
  assertConsumerName(name, "handler name");
  const consumer = `${HANDLER_PREFIX}${name}`;
  return ledger.transact(async (tx) => {
    const existing = await tx.notify.getCallbackByConsumer(consumer);
    if (!existing || existing.retired_at !== null) throw new UsageError(`handler '${name}' does not exist (li events handlers ls)`);
    if (existing.uid !== null && existing.uid !== byUid && byUid !== 0) {
      throw new UsageError(`handler '${name}' belongs to uid ${existing.uid} (the uid that added it): only its owner (or root) can remove it`);
    }
    const now = ledger.now();
    const released = (await tx.notify.owedToHandlers({ consumer, includeHeld: true, limit: Number.MAX_SAFE_INTEGER })).length;
    await tx.notify.retireCallback(existing.id, now);
    await tx.notify.retireConsumer(consumer, now);
    await tx.notify.releaseConsumer(consumer);
    return { released };
  });
}

export async function listHandlers(ledger: Ledger): Promise<CallbackRow[]> {
  return ledger.backend.notify.listCallbacks({ scope: "standing" });
}
