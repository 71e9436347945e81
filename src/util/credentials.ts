// The credentials li consumes from its environment (SPEC §18): the ledger's location and its password. They
// are li's to use, not the leg command's or a handler's: a leg runs whatever a repository put in its build,
// and a handler whatever its registration says, so neither gets them unless the user passes one on.

/** Declared once: `LI_DB` (a postgres:// URL may carry a password) and libpq's `PGPASSWORD`. */
export const CREDENTIAL_VARIABLES: readonly string[] = Object.freeze(["LI_DB", "PGPASSWORD"]);

/** `env` without the credential variables, except those named in `passed` (`li agent --pass-env NAME`). */
export function withoutCredentials(env: Readonly<Record<string, string | undefined>>, passed: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (CREDENTIAL_VARIABLES.includes(key) && !passed.includes(key)) continue;
    out[key] = value;
  }
  return out;
}
