// The watcher's single-instance lock on a PostgreSQL ledger: one `li watch` per host per database
// (SPEC §12.6, §14). A session-level advisory lock keyed by the schema and the host id, held on one
// reserved connection for the watcher's life: the server drops it when that session ends (exit,
// kill -9, a dropped connection), so a dead watcher leaves no stale lock. A dropped connection also
// means the lock is gone while the watcher lives on: `ensureHeld` (before every pass) notices, takes
// it again when nobody else did (ending first its own former session if the server still keeps it),
// and refuses to go on when another watcher on this host did.

import type { ReservedSQL, SQL } from "bun";
import { LockHeldError, WatcherLockLostError, type WatcherLock } from "../watcher-lock.ts";
import { LOCK_NAMESPACE } from "./migrate.ts";
import { closedConnections } from "./client.ts";

/** The advisory lock's text key: the seq lock is `<schema>:seq`, the migrator's the schema alone. */
export function watcherLockKey(schema: string, hostId: string): string {
  return `${schema}:watch:${hostId}`;
}

/**
 * The fleet's election (§14 "Many hosts"): the advisory lock the one watcher that runs the fleet-wide
 * sweeps holds, on the session of its own host lock (no connection of its own). The server drops it with
 * that session (exit, kill -9, a dropped connection), and the next watcher to try takes it.
 */
export function fleetLockKey(schema: string): string {
  return `${schema}:fleet`;
}

/**
 * The pool the lock's connection comes from, asked each time: a call that outlived its deadline replaces
 * the pool (connection.ts), so a lost lock is taken again on the pool of the moment, not on the closed
 * one it was first taken on.
 */
export type LockPool = () => Promise<SQL>;

/** A server session, as the server names it: its pid and start (together unique; a pid alone is reused). */
interface Session {
  pid: number;
  started: string;
}

interface Holder {
  conn: ReservedSQL;
  session: Session;
}

/** Tries the lock on a fresh reserved connection: the connection and its session when taken, null when another session holds it. */
async function tryLock(pool: LockPool, key: string): Promise<Holder | null> {
  const reserved = await (await pool()).reserve();
  try {
    const [row] = await reserved`
      SELECT pg_try_advisory_lock(${LOCK_NAMESPACE}, hashtext(${key})) AS held, pg_backend_pid() AS pid,
             (SELECT backend_start::text FROM pg_catalog.pg_stat_activity WHERE pid = pg_backend_pid()) AS started`;
    if (row?.held === true) return { conn: reserved, session: { pid: Number(row.pid), started: String(row.started) } };
  } catch (error) {
    await reserved.close().catch(() => {});
    throw error;
  }
  await reserved.release();
  return null;
}

/**
 * Ends `ghost`, this watcher's own former lock session, when it still holds the lock: after a partition
 * that outlasted TCP the client has given that session up, but the server keeps it, and its lock, until
 * its keepalives give up on the peer (client.ts SERVER_KEEPALIVES: about two minutes; hours on a server
 * that does not take them). Only that exact session (pid and start) is ended; true when it was and is gone.
 */
async function endGhost(pool: LockPool, key: string, ghost: Session): Promise<boolean> {
  const sql = await pool();
  const [row] = await sql`
    SELECT pg_terminate_backend(l.pid, ${GHOST_EXIT_WAIT_MS}) AS ended
    FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.classid = ${LOCK_NAMESPACE}::int::oid AND l.objid = hashtext(${key})::oid AND l.objsubid = 2
      AND l.pid = ${ghost.pid} AND a.backend_start::text = ${ghost.started}`;
  return row?.ended === true;
}

/**
 * Gives the lock up, and the fleet's election with it when this session held it. Unlocking explicitly
 * returns a clean session to the pool; closing it would drop the locks too. The session is the lock's
 * alone, so every advisory lock it holds is this watcher's.
 */
async function unlock(holder: Holder): Promise<void> {
  await holder.conn`SELECT pg_advisory_unlock_all()`.catch(() => {});
  await holder.conn.release().catch(() => {});
}

/** How long the server is given to end a ghost session before the lock is tried again. */
const GHOST_EXIT_WAIT_MS = 5000;

/**
 * Takes the watcher lock of host `hostId` on `schema`, or throws LockHeldError at once when another
 * session holds it. `ledgerName` is the ledger as messages name it (postgres://HOST:PORT/DATABASE).
 */
export async function holdPgWatcherLock(pool: LockPool, schema: string, hostId: string, ledgerName: string, drops: () => number = closedConnections): Promise<WatcherLock> {
  const key = watcherLockKey(schema, hostId);
  const fleetKey = fleetLockKey(schema);
  const path = `${ledgerName} (advisory lock ${key})`;
  const takenAsOf = drops();
  let holder = await tryLock(pool, key);
  if (holder === null) throw new LockHeldError(path);
  /** The session that held the lock for this watcher until its connection died: maybe a ghost on the server. */
  let former: Session | null = null;
  let released = false;
  /** Whether `holder`'s session holds the fleet's election too: known until that session is replaced. */
  let leading = false;
  /**
   * The check under way. The backend bounds every call by a deadline and, past it, gives the call up
   * without stopping it (connection.ts `bounded`), so a black-holed check can still be running when the
   * next pass checks again. Two checks racing over the one holder undo each other: one takes the lock
   * back, the other then finds it held "by another session" (its twin's) and stops the watcher. So a
   * check in flight is joined, never doubled.
   */
  let checking: Promise<void> | null = null;

  /** `drops()` when the lock was last known held: until it moves, the lock's session lives and holds it. */
  let heldAsOf = takenAsOf;

  async function check(): Promise<void> {
    const asOf = drops();
    if (holder !== null) {
      // A session lock holds until its connection drops: with no connection closed and no call failed as
      // unreachable since it was last known held, the server is not asked (a pass of an idle watcher runs
      // no query for it).
      if (asOf === heldAsOf) return;
      try {
        // Asks the server, not the client: a session that was replaced under the same handle would not hold it.
        const [row] = await holder.conn`
          SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
                         AND classid = ${LOCK_NAMESPACE}::int::oid AND objid = hashtext(${key})::oid AND objsubid = 2) AS mine`;
        if (row?.mine === true) {
          heldAsOf = asOf;
          return;
        }
        throw new Error("the lock's session no longer holds it");
      } catch {
        const dead = holder;
        holder = null;
        // The server drops the election with the session: whoever tries next may take it.
        leading = false;
        former = dead.session;
        await dead.conn.close().catch(() => {});
      }
    }
    holder = await tryLock(pool, key);
    // Held by our own former session (the server never heard our side close): end it and try again.
    if (holder === null && former !== null && (await endGhost(pool, key, former))) holder = await tryLock(pool, key);
    if (holder === null) throw new WatcherLockLostError(path);
    former = null;
    heldAsOf = asOf;
    // Released while this check was given up and still running: the lock it took back goes too.
    if (released) {
      const taken = holder;
      holder = null;
      await unlock(taken);
    }
  }

  /** One try at the election on the lock's session; a session that already holds it is not asked again. */
  async function elect(): Promise<boolean> {
    const h = holder;
    if (released || h === null) return false;
    if (leading) return true;
    const [row] = await h.conn`SELECT pg_try_advisory_lock(${LOCK_NAMESPACE}, hashtext(${fleetKey})) AS held`;
    if (row?.held !== true) return false;
    // Released while the try ran: the session goes back to the pool clean. Replaced: the new one does not hold it.
    if (released) await h.conn`SELECT pg_advisory_unlock(${LOCK_NAMESPACE}, hashtext(${fleetKey}))`.catch(() => {});
    if (holder !== h || released) return false;
    leading = true;
    return true;
  }

  return {
    path,
    ensureHeld() {
      if (released) return Promise.reject(new Error(`${path} was released`));
      checking ??= check().finally(() => {
        checking = null;
      });
      return checking;
    },
    lead() {
      // After the pass's check, never beside it: the check may be replacing the session.
      return (checking ?? Promise.resolve()).then(elect);
    },
    async release() {
      if (released) return;
      released = true;
      leading = false;
      const h = holder;
      holder = null;
      if (h !== null) await unlock(h);
    },
  };
}
