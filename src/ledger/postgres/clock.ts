// The ledger's clock on PostgreSQL (SPEC §14 "Time"): this host's clock plus its offset to the server's
// clock_timestamp(), so every time li writes or compares (heartbeats, updated_at, leases, sweep ages) is
// the database's, and hosts whose clocks disagree still agree on the ledger. The offset is measured when
// the pool connects (NTP's estimate over one round trip) and again at most once a minute while a process
// keeps using the ledger (a watcher, a leg's heartbeat), so a drifting host clock is followed.

import { hostClock } from "../../util/host-clock.ts";

/** A long-running process re-measures the offset when it is older than this. */
export const CLOCK_REMEASURE_SECONDS = 60;

/** The server's clock in Unix seconds, from one round trip's result. */
export const SERVER_NOW_SQL = "extract(epoch from clock_timestamp())::float8";
/**
 * When the server began this session, in Unix seconds: on the first round trip, which also connects,
 * authenticates and starts the session, it stands for the moment the server received the request.
 * Read from the function behind the pg_stat_activity view, for this backend only: the view joins
 * pg_database and pg_authid, whose catalog lookups cost a fresh session ~1.5 ms of that round trip.
 */
export const SESSION_START_SQL = "(SELECT extract(epoch from backend_start)::float8 FROM pg_catalog.pg_stat_get_activity(pg_backend_pid()))";

export class ServerClock {
  private offsetSeconds = 0;
  private measuredAt = Number.NEGATIVE_INFINITY;

  /** `host`: this host's clock in Unix seconds (util/host-clock.ts, which a test may skew). */
  constructor(private readonly host: () => number = hostClock) {}

  /** Unix seconds on the server's clock (this host's until the first measurement). */
  now(): number {
    return this.host() + this.offsetSeconds;
  }

  /** This host's time, for bracketing a round trip. */
  hostNow(): number {
    return this.host();
  }

  /**
   * Records a measurement over one round trip that left this host at `sent` and came back at `received`
   * (host times): the server received it at `serverReceived` and answered at `serverAnswered` (its clock).
   * NTP's estimate: only the network's delays count, not the time the server spent in between (on the
   * first round trip: connecting, authenticating), which would otherwise bias a midpoint estimate.
   */
  record(serverAnswered: number, sent: number, received: number, serverReceived = serverAnswered): void {
    this.offsetSeconds = (serverReceived - sent + (serverAnswered - received)) / 2;
    this.measuredAt = received;
  }

  /** The offset in seconds (server minus host). */
  get offset(): number {
    return this.offsetSeconds;
  }

  /** Whether a measurement is due (never measured, or older than CLOCK_REMEASURE_SECONDS). */
  stale(): boolean {
    return this.host() - this.measuredAt >= CLOCK_REMEASURE_SECONDS;
  }
}
