// Settings (SPEC §15): project `.li/settings.yaml` over `$LI_HOME/settings.yaml` over defaults, warnings instead of failures.

import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { z } from "zod";
import { EXECUTION_KINDS, canonicalKind } from "../lifecycle/policy.ts";
import { compileArgvWords, compileTemplate } from "../notify/argv.ts";
import type { NotifyFilter, NotifySetting } from "../notify/on-terminal.ts";
import { parseDuration, parsePositiveInt, parsePositiveNumber, requireDurationRange } from "../util/duration.ts";
import { DEFAULT_DELIVERY_CONCURRENCY } from "../notify/concurrency.ts";
import { UsageError } from "../util/errors.ts";
import { parseSize, parseSizeOrShare, type SizeOrShare } from "../util/size.ts";
import { isSafeId } from "../util/ids.ts";
import { judgeOwnership } from "../util/ownership.ts";
import { readUntrustedFile } from "../util/untrusted-file.ts";
import { DEFAULT_KILL_GRACE_SECONDS, DEFAULT_LEDGER_RETRY_SECONDS } from "./defaults.ts";
import { findProjectFile, SETTINGS_FILE } from "./lookup.ts";
import { trustCommand, trustState } from "./trust.ts";

export interface WatchSettings {
  readonly sweepInterval: number;
  readonly phantomGrace: number;
  readonly phantomHours: number;
  /** Null: the watcher never prunes (§12.6). */
  readonly pruneKeepDays: number | null;
  /** Handlers a watcher runs at once (§20). */
  readonly deliveryConcurrency: number;
  /** The labels this host offers to scheduled runs' --needs (§19). */
  readonly labels: readonly string[];
  /** Seconds within which a dead elected watcher's fleet-wide sweeps are taken over (§14 "Many hosts"). */
  readonly fleetLease: number;
  /**
   * Seconds between the watcher's safety polls (its wake-ups are the commits it is told of, and the times its
   * timed work falls due); null: the watcher's default (30 s while wake-ups hold, 1 s while they do not).
   */
  readonly poll: number | null;
}

export interface Settings {
  readonly notifyOnTerminal: NotifySetting | null;
  /** Seconds; null = no deadline. */
  readonly agentTimeout: number | null;
  /** Seconds a leg retries an unreachable ledger before it spools its outcome (§17). */
  readonly agentLedgerRetry: number;
  /** Free space a leg's stream copy leaves on its file system (§20); null = the default (64 MiB or 1 %, the smaller). */
  readonly agentStreamReserve: SizeOrShare | null;
  /** Bytes one leg's stream copy may hold (§20); null = no cap. */
  readonly agentStreamMax: number | null;
  /** Seconds between SIGTERM and SIGKILL when a leg is stopped (--kill-grace). */
  readonly agentKillGrace: number;
  /** A normal end stops what is still running in the leg (--stop-leftovers). */
  readonly agentStopLeftovers: boolean;
  readonly watch: WatchSettings;
}

type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };
/** `file`: the settings file the value is from (a handler's relative program is anchored at its project). */
type KeyParser<T> = (raw: unknown, origin: string, file: string) => Parsed<T>;

const durationValue: KeyParser<number> = (raw, origin) => numeric(raw, origin, parseDuration, "a duration", requireDurationRange);
/** A duration where 0 is meaningful (watch.phantom_grace: 0 reaps on positive death alone). */
const durationOrZeroValue: KeyParser<number> = (raw, origin) =>
  raw === 0 ? { ok: true, value: 0 } : numeric(raw, origin, (text, flag) => parseDuration(text, flag, { allowZero: true }), "a duration", requireDurationRange, "of zero or more");
const sizeValue: KeyParser<number> = (raw, origin) => (typeof raw === "number" && Number.isSafeInteger(raw) && raw >= 0 ? { ok: true, value: raw } : typeof raw === "string" ? checked(() => parseSize(raw, origin), origin) : { ok: false, problem: `expected a size (bytes, or 64M, 2G), got ${describeType(raw)}` });
const sizeOrShareValue: KeyParser<SizeOrShare> = (raw, origin) =>
  typeof raw === "number" && Number.isSafeInteger(raw) && raw >= 0 ? { ok: true, value: { bytes: raw } } : typeof raw === "string" ? checked(() => parseSizeOrShare(raw, origin), origin) : { ok: false, problem: `expected a size (bytes, 64M) or a share of the disk (1%), got ${describeType(raw)}` };
const positiveIntValue: KeyParser<number> = (raw, origin) =>
  typeof raw === "number" ? (Number.isSafeInteger(raw) && raw > 0 ? { ok: true, value: raw } : { ok: false, problem: `expected a whole number greater than zero, got ${raw}` }) : typeof raw === "string" ? checked(() => parsePositiveInt(raw, origin), origin) : { ok: false, problem: `expected a whole number, got ${describeType(raw)}` };
const booleanValue: KeyParser<boolean> = (raw, origin) =>
  typeof raw === "boolean" ? { ok: true, value: raw } : { ok: false, problem: `expected true or false, got ${describeType(raw)}` };
const positiveNumberValue: KeyParser<number> = (raw, origin) => numeric(raw, origin, parsePositiveNumber, "a positive number");

/** A list of labels (`[gpu, linux]`, or `gpu,linux`), each a safe id (§3). */
const labelsValue: KeyParser<readonly string[]> = (raw) => {
  const words = Array.isArray(raw) ? raw : typeof raw === "string" ? raw.split(",").map((w) => w.trim()).filter((w) => w !== "") : null;
  if (words === null) return { ok: false, problem: "expected a list of labels" };
  for (const word of words) {
    if (typeof word !== "string" || !isSafeId(word)) return { ok: false, problem: `${JSON.stringify(word)} is not a label (letters, digits and . _ : -)` };
  }
  return { ok: true, value: Object.freeze([...(words as string[])]) };
};

/**
 * Why a project file's value needs the file trusted (§18), or null when it does not: a value that runs a
 * program, or that destroys or silences (a prune age, notices turned off, a timeout shorter than the
 * user's own). `below` is what the global file and the defaults would give without the project file.
 */
type NeedsTrust = (value: unknown, below: () => unknown) => string | null;

const notifyNeedsTrust: NeedsTrust = (value) => (runsSomething(value) ? "the handler would run a program" : "it would turn your notices off");
const pruneNeedsTrust: NeedsTrust = () => "it would prune sessions";
const timeoutNeedsTrust: NeedsTrust = (value, below) => {
  const own = below();
  return typeof value === "number" && (typeof own !== "number" || value < own) ? "it would end legs sooner than your own agent.timeout" : null;
};

/**
 * The keys, as data: their parser and default. Sections and the unknown-key check derive from it.
 * `disabledByInvalid`: an invalid value turns the feature off instead of falling through to a lower
 * layer, so a broken project handler never silently runs the global one in its place.
 * `needsTrust`: taken from a project file only when that file is trusted and unchanged (§18, `li trust`).
 */
const KEYS = {
  "notify.on_terminal": { parse: parseNotify, fallback: null, disabledByInvalid: "the callback is disabled", needsTrust: notifyNeedsTrust },
  "agent.timeout": { parse: durationValue, fallback: null, needsTrust: timeoutNeedsTrust },
  "agent.ledger_retry": { parse: durationOrZeroValue, fallback: DEFAULT_LEDGER_RETRY_SECONDS },
  "agent.stream_reserve": { parse: sizeOrShareValue, fallback: null },
  "agent.stream_max": { parse: sizeValue, fallback: null },
  "agent.kill_grace": { parse: durationOrZeroValue, fallback: DEFAULT_KILL_GRACE_SECONDS },
  "agent.stop_leftovers": { parse: booleanValue, fallback: false },
  "watch.sweep_interval": { parse: durationValue, fallback: 30 },
  "watch.phantom_grace": { parse: durationOrZeroValue, fallback: 60 },
  "watch.phantom_hours": { parse: positiveNumberValue, fallback: 1 },
  "watch.prune_keep_days": { parse: positiveNumberValue, fallback: null, needsTrust: pruneNeedsTrust },
  "watch.delivery_concurrency": { parse: positiveIntValue, fallback: DEFAULT_DELIVERY_CONCURRENCY },
  "watch.labels": { parse: labelsValue, fallback: [] as readonly string[] },
  "watch.fleet_lease": { parse: durationValue, fallback: 30 },
  "watch.poll": { parse: durationValue, fallback: null },
} as const satisfies Record<string, { parse: KeyParser<unknown>; fallback: unknown; disabledByInvalid?: string; needsTrust?: NeedsTrust }>;

type Key = keyof typeof KEYS;
type ValueOf<K extends Key> = ((typeof KEYS)[K]["parse"] extends KeyParser<infer T> ? T : never) | (typeof KEYS)[K]["fallback"];

export const SETTING_KEYS = Object.freeze(Object.keys(KEYS) as Key[]);
const SECTIONS: ReadonlySet<string> = new Set(SETTING_KEYS.map((key) => key.split(".")[0] ?? ""));

function isKey(name: string): name is Key {
  return Object.hasOwn(KEYS, name);
}

export interface LoadSettingsOptions {
  /** Where the walk for the project file starts (`--cwd` when given, else the working directory). */
  readonly cwd: string;
  /** Defaults to `env.LI_HOME`, else `~/.li`. */
  readonly liHome?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** One settings file, read and sorted into known keys. */
interface Layer {
  readonly file: string;
  readonly values: ReadonlyMap<Key, unknown>;
  /** A project file (a repository could have written it); the global file in `$LI_HOME` is trusted. */
  readonly project: boolean;
  /** The text read, for the trust check's content hash. */
  readonly text: string;
}

/** Resolves the settings; never throws: problems come back as warnings, one line each. */
export function loadSettings(options: LoadSettingsOptions): { settings: Settings; warnings: string[] } {
  const env = options.env ?? process.env;
  const liHome = options.liHome ?? env.LI_HOME ?? join(env.HOME ?? homedir(), ".li");
  const warnings: string[] = [];
  const globalFile = join(resolve(liHome), SETTINGS_FILE);
  const projectFile = findProjectFile(resolve(options.cwd), globalFile, (line) => warnings.push(line));
  // Highest precedence first.
  const layers = [projectFile, globalFile]
    .filter((file): file is string => file !== null)
    .map((file) => readLayer(file, file === projectFile, warnings))
    .filter((layer): layer is Layer => layer !== null);

  const pick = <K extends Key>(key: K): ValueOf<K> => resolveKey(key, layers, warnings, liHome);
  const notify = pick("notify.on_terminal");
  const settings: Settings = {
    notifyOnTerminal: notify === null ? null : freezeNotify(notify),
    agentTimeout: pick("agent.timeout"),
    agentLedgerRetry: pick("agent.ledger_retry"),
    agentStreamReserve: pick("agent.stream_reserve"),
    agentStreamMax: pick("agent.stream_max"),
    agentKillGrace: pick("agent.kill_grace"),
    agentStopLeftovers: pick("agent.stop_leftovers"),
    watch: Object.freeze({
      sweepInterval: pick("watch.sweep_interval"),
      phantomGrace: pick("watch.phantom_grace"),
      phantomHours: pick("watch.phantom_hours"),
      pruneKeepDays: pick("watch.prune_keep_days"),
      deliveryConcurrency: pick("watch.delivery_concurrency"),
      labels: pick("watch.labels"),
      fleetLease: pick("watch.fleet_lease"),
      poll: pick("watch.poll"),
    }),
  };
  return { settings: Object.freeze(settings), warnings };
}

/** The first valid value, from the highest layer down; else the default. An invalid value warns (and may disable). */
function resolveKey<K extends Key>(key: K, layers: readonly Layer[], warnings: string[], liHome: string): ValueOf<K> {
  const spec = KEYS[key];
  const disabled = "disabledByInvalid" in spec ? spec.disabledByInvalid : null;
  const invalid: string[] = [];
  let chosen: { value: ValueOf<K>; file: string } | null = null;
  for (const layer of layers) {
    if (!layer.values.has(key)) continue;
    const origin = `settings ${layer.file}: ${key}`;
    const parsed = (spec.parse as KeyParser<ValueOf<K>>)(layer.values.get(key), origin, layer.file);
    const why = parsed.ok && "needsTrust" in spec && layer.project ? spec.needsTrust(parsed.value, () => resolveKey(key, layers.slice(layers.indexOf(layer) + 1), [], liHome)) : null;
    const untrusted = why === null ? null : untrustedProblem(layer, liHome, why);
    if (untrusted !== null) {
      warnings.push(`${origin}: ${untrusted}`);
      // A handler that would run: off, like an invalid value, and the global one does not silently run in its place.
      // Anything else (a prune age, notices off, a shorter timeout) is as if the project had not set it.
      if (key === "notify.on_terminal" && parsed.ok && runsSomething(parsed.value)) return null as ValueOf<K>;
      continue;
    }
    if (parsed.ok) {
      chosen = { value: parsed.value, file: layer.file };
      break;
    }
    invalid.push(`${origin}: ${parsed.problem}`);
    if (disabled !== null) break;
  }
  const outcome = disabled ?? (chosen === null ? "using the default" : `using the value from ${chosen.file}`);
  for (const problem of invalid) warnings.push(`${problem}; ${outcome}`);
  if (disabled !== null && invalid.length > 0) return null as ValueOf<K>;
  return chosen === null ? (spec.fallback as ValueOf<K>) : chosen.value;
}

/** A handler that is switched on runs a program; `enabled: false` (a project turning the global one off) runs nothing. */
function runsSomething(value: unknown): boolean {
  return typeof value === "object" && value !== null && (value as { enabled?: unknown }).enabled === true;
}

/** Why a project file may not run a program, with the exact command that trusts it; null when it is trusted as it stands. */
function untrustedProblem(layer: Layer, liHome: string, effect: string): string | null {
  const state = trustState(liHome, layer.file, layer.text);
  if (state === "trusted") return null;
  const why = state === "changed" ? "this file changed since it was trusted" : "this file is not trusted";
  return `not used: ${why}, and ${effect}; review the file, then run: ${trustCommand(layer.file)}`;
}

/** Reads one file into known keys; a missing file is no layer, an unreadable or invalid one warns and is ignored. */
function readLayer(file: string, project: boolean, warnings: string[]): Layer | null {
  // A repository can hold anything at this path: no symlink followed, no FIFO waited on, at most 1 MiB (§18).
  const read = readUntrustedFile(file);
  if (!read.ok) {
    if (!read.missing) warnings.push(`settings ${file}: ${read.problem}; the file is ignored`);
    return null;
  }
  // Another user's file, or one others may write, is theirs to change: it is not read (§18).
  const owned = judgeOwnership(file, "the settings file", { uid: read.stat.uid, mode: read.stat.mode });
  if (!owned.ok) {
    warnings.push(`settings ${file}: not read: ${owned.problem}`);
    return null;
  }
  if (owned.warning !== undefined) warnings.push(owned.warning);
  const text = read.text;
  let document: unknown;
  try {
    document = Bun.YAML.parse(text);
  } catch (error) {
    warnings.push(`settings ${file}: not valid YAML (${firstLine(error)}); the file is ignored`);
    return null;
  }
  if (document === null || document === undefined) return { file, values: new Map(), project, text };
  if (!isMapping(document)) {
    warnings.push(`settings ${file}: expected a mapping of keys at the top (one YAML document); the file is ignored`);
    return null;
  }
  return { file, values: collectKeys(document, file, warnings), project, text };
}

/** Accepts nested (`watch: {sweep_interval: 30}`) and dotted (`watch.sweep_interval: 30`) keys. */
function collectKeys(document: Record<string, unknown>, file: string, warnings: string[]): Map<Key, unknown> {
  const values = new Map<Key, unknown>();
  const set = (key: string, value: unknown, dotted: boolean) => {
    if (!isKey(key)) {
      warnings.push(`settings ${file}: unknown key ${key}; known keys: ${SETTING_KEYS.join(", ")}`);
      return;
    }
    if (values.has(key)) {
      warnings.push(`settings ${file}: ${key} is set twice (nested and dotted); using the dotted one`);
      if (!dotted) return;
    }
    // YAML `key:` with nothing after it means "not set", as if the line were absent.
    if (value === null) values.delete(key);
    else values.set(key, value);
  };
  for (const [name, value] of Object.entries(document)) {
    if (name.includes(".")) {
      set(name, value, true);
    } else if (SECTIONS.has(name)) {
      if (value === null) continue;
      if (!isMapping(value)) {
        warnings.push(`settings ${file}: ${name}: expected a mapping of keys (such as ${SETTING_KEYS.filter((k) => k.startsWith(`${name}.`)).join(", ")})`);
        continue;
      }
      for (const [sub, subValue] of Object.entries(value)) set(`${name}.${sub}`, subValue, false);
    } else {
      set(name, value, false);
    }
  }
  return values;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split("\n")[0] ?? message;
}

/**
 * A number of seconds (or a positive number) given as a YAML number or as text for `parse`; a YAML
 * number passes `range` too (a duration's 365-day bound, §18), as text does inside `parse`.
 */
function numeric(
  raw: unknown,
  origin: string,
  parse: (text: string, flag: string) => number,
  what: string,
  range?: (value: number, text: string, flag: string) => number,
  bound: "greater than zero" | "of zero or more" = "greater than zero",
): Parsed<number> {
  if (typeof raw === "number") {
    const inBound = bound === "of zero or more" ? raw >= 0 : raw > 0;
    if (!(Number.isFinite(raw) && inBound)) return { ok: false, problem: `expected ${what} ${bound}, got ${raw}` };
    return range === undefined ? { ok: true, value: raw } : checked(() => range(raw, String(raw), origin), origin);
  }
  if (typeof raw !== "string") return { ok: false, problem: `expected ${what}, got ${describeType(raw)}` };
  return checked(() => parse(raw, origin), origin);
}

/** A parser's UsageError as a problem of the key; its message starts with the origin we gave it, which is dropped. */
function checked<T>(parse: () => T, origin: string): Parsed<T> {
  try {
    return { ok: true, value: parse() };
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    return { ok: false, problem: error.message.slice(origin.length + 2) };
  }
}

function describeType(value: unknown): string {
  if (Array.isArray(value)) return "a list";
  if (value === null) return "nothing";
  return typeof value === "object" ? "a mapping" : `a ${typeof value}`;
}

const notifyMapping = z.strictObject({
  enabled: z.boolean().optional(),
  argv: z.array(z.string()).optional(),
  filter: z
    .strictObject({
      kinds: z.array(z.string()).optional(),
      ids: z.array(z.string()).optional(),
    })
    .optional(),
});

function parseNotify(raw: unknown, origin: string, file: string): Parsed<NotifySetting> {
  const noFilter: NotifyFilter = { kinds: null, ids: null };
  const projectDir = dirname(dirname(file));
  if (typeof raw === "string") {
    const compiled = compileTemplate(raw, origin);
    if (!compiled.ok) return { ok: false, problem: stripOrigin(compiled.warning, origin) };
    return { ok: true, value: { origin, projectDir, enabled: true, template: raw, filter: noFilter } };
  }
  const shape = notifyMapping.safeParse(raw);
  if (!shape.success) {
    const issue = shape.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? "" : `${issue.path.map(String).join(".")}: `;
    return { ok: false, problem: `expected a template string or a mapping {enabled, argv, filter}: ${where}${issue?.message ?? "invalid"}` };
  }
  const { enabled = true, argv, filter } = shape.data;
  if (argv === undefined && enabled) return { ok: false, problem: "argv is required when the callback is enabled" };
  if (argv !== undefined) {
    const compiled = compileArgvWords(argv, origin);
    if (!compiled.ok) return { ok: false, problem: stripOrigin(compiled.warning, origin) };
  }
  const kinds = filter?.kinds === undefined ? null : normalizeKinds(filter.kinds);
  if (kinds !== null && !kinds.ok) return kinds;
  const badId = filter?.ids?.find((id) => !isSafeId(id));
  if (badId !== undefined) return { ok: false, problem: `filter.ids: ${JSON.stringify(badId.slice(0, 40))} is not a valid id` };
  return {
    ok: true,
    value: {
      origin,
      projectDir,
      enabled,
      ...(argv === undefined ? {} : { argv }),
      filter: { kinds: kinds?.value ?? null, ids: filter?.ids ?? null },
    },
  };
}

function normalizeKinds(kinds: readonly string[]): Parsed<string[]> {
  const out: string[] = [];
  for (const kind of kinds) {
    const canonical = canonicalKind(kind);
    if (canonical === null || !EXECUTION_KINDS.includes(canonical)) {
      return { ok: false, problem: `filter.kinds: ${JSON.stringify(kind.slice(0, 40))} is not one of ${EXECUTION_KINDS.join(", ")}` };
    }
    if (!out.includes(canonical)) out.push(canonical);
  }
  return { ok: true, value: out };
}

/** compileTemplate's warnings read `<origin>: <problem>; the callback is disabled`; settings adds its own ending. */
function stripOrigin(warning: string, origin: string): string {
  const body = warning.startsWith(`${origin}: `) ? warning.slice(origin.length + 2) : warning;
  return body.replace(/; the callback is disabled$/, "");
}

function freezeNotify(setting: NotifySetting): NotifySetting {
  return Object.freeze({
    ...setting,
    ...(setting.argv === undefined ? {} : { argv: Object.freeze([...setting.argv]) }),
    filter: Object.freeze({
      kinds: setting.filter.kinds === null ? null : Object.freeze([...setting.filter.kinds]),
      ids: setting.filter.ids === null ? null : Object.freeze([...setting.filter.ids]),
    }),
  });
}
