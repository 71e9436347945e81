// `notify.on_terminal` as notify reads it (SPEC §9.1, §15): the settings parse it, a leg's registration applies it.

export interface NotifyFilter {
  /** Execution kinds the handler is for; null = every kind. */
  readonly kinds: readonly string[] | null;
  /** Entity ids the handler is for; null = every id. */
  readonly ids: readonly string[] | null;
}

/** `notify.on_terminal`, kept raw; `argv.ts` compiles it when a registration is written. */
export interface NotifySetting {
  /** Names the key and the file, for warnings: `settings /p/.li/settings.yaml: notify.on_terminal`. */
  readonly origin: string;
  /**
   * The directory a relative program (`./notify.sh`) is taken from: the project holding the file's
   * `.li/` (for `$LI_HOME/settings.yaml`, the directory holding LI_HOME), whatever li's working directory.
   */
  readonly projectDir?: string;
  readonly enabled: boolean;
  /** The string form. */
  readonly template?: string;
  /** The mapping form's `argv` words. */
  readonly argv?: readonly string[];
  readonly filter: NotifyFilter;
}

/**
 * Whether the settings handler gives a leg its default registration (§9.1, §15): it must be enabled,
 * its kinds (when given) must include `session`, and its ids (when given) must name the session or the branch.
 */
export function notifyAppliesToLeg(setting: NotifySetting | null, leg: { readonly sessionId: string; readonly branchId: string }): boolean {
  if (setting === null || !setting.enabled) return false;
  const { kinds, ids } = setting.filter;
  if (kinds !== null && !kinds.includes("session")) return false;
  if (ids !== null && !ids.includes(leg.sessionId) && !ids.includes(leg.branchId)) return false;
  return true;
}
