// The one shape of a li command: kebab-case flags with value hints, examples, and the ledger it needs.
// main.ts parses, enforces and opens/closes the ledger; help.ts renders --help; completion.ts reads it.
// Type-only imports: declaring a command must not load the ledger's modules.

import type { ArgDef, ParsedArgs } from "citty";
import type { Ledger } from "../ledger/ledger.ts";
import type { OpenedReads } from "../ledger/reads.ts";
import type { Patience } from "../ledger/patience.ts";

/** What a completion offers for a flag's value or a positional: words from the registry, paths, or recent ids from the ledger (`sessions`: session ids only). */
export type CompleteAs = "kinds" | "statuses" | "files" | "dirs" | "ids" | "sessions";

/**
 * A flag or positional. Flag names are kebab-case (`keep-days`) and the only spelling that parses;
 * a string flag carries its value hint (`DAYS`, shown `--keep-days=DAYS`). A repeatable flag says so in
 * its description and is read with repeatedFlag(rawArgs, name) (citty keeps only the last).
 */
export type LiArgDef = ArgDef & { complete?: CompleteAs };
export type LiArgs = Record<string, LiArgDef>;

/**
 * The ledger a command opens: `reads` (the read-only fast path, no drizzle/zod), `existing` (write to a
 * ledger that must exist), `create` (write, creating it), or `none`.
 */
export type LedgerNeed = "none" | "reads" | "existing" | "create";

type LedgerOf<N extends LedgerNeed> = N extends "reads" ? OpenedReads : N extends "none" ? never : Ledger;

export interface RunContext<A extends LiArgs, N extends LedgerNeed> {
  args: ParsedArgs<A>;
  /** The words before `--` that belong to the command (for repeatedFlag). */
  rawArgs: string[];
  /** The words after `--` (only for commands declared `takesCommand`), else null. */
  passthrough: string[] | null;
  /**
   * Opens the declared ledger on first call (validate first, then call it: a refused command must not
   * create a ledger) and returns the same handle after; the entry point closes it when the command ends.
   * `patience`: how long an unreachable ledger is waited for; by default `--ledger-retry` when the
   * command declares it (LEDGER_RETRY_ARG), else 10 s, with one note on stderr.
   */
  ledger: (patience?: Patience) => LedgerOf<N>;
}

export interface LiCommand<A extends LiArgs = LiArgs, N extends LedgerNeed = LedgerNeed> {
  /**
   * Holds its ledger for its whole life (li watch, li ui, li wait): on PostgreSQL its connections stay
   * outside the host's connection slots (§20), which are for what opens, writes and closes.
   */
  longLived?: true;
  /** One paragraph: what it does, then its exit codes when they are not just 0/2. */
  description: string;
  args: A;
  /** One or two command lines shown at the end of --help. */
  examples: readonly string[];
  ledger: N;
  /**
   * True when these flags mean the run opens no ledger at all (li agent --no-persist): its opener is then
   * not loaded (~1 ms of start-up, docs/benchmarks.md), and calling `ledger` is a bug that says so.
   */
  opensNoLedger?(args: ParsedArgs<A>): boolean;
  /** Takes a command line after `--` (everything else refuses one). */
  takesCommand?: boolean;
  run(ctx: RunContext<A, N>): number | Promise<number>;
}

/**
 * `--ledger-retry`, for a command whose deadline for an unreachable ledger is not already another flag
 * (li wait's --timeout) or forever (li watch): spread into its args.
 */
export const LEDGER_RETRY_ARG = {
  "ledger-retry": { type: "string", valueHint: "DURATION", description: "how long to wait for an unreachable ledger (a PostgreSQL server down or not answering) before exit 78 (default 10s; 0: no waiting)" },
} as const satisfies LiArgs;

/** Declares a command; the identity at run time, the types at compile time. */
export function command<const A extends LiArgs, const N extends LedgerNeed>(def: LiCommand<A, N>): LiCommand<A, N> {
  return def;
}

/** A kebab-case flag name: lower-case words joined by single hyphens (`keep-days`, `r`). */
export const KEBAB = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
