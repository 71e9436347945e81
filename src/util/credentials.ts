// The credentials li consumes from its environment (SPEC §18): the ledger's password, wherever it is given.
// They are li's to use, not the leg command's or a handler's: a leg runs whatever a repository put in its
// build, and a handler whatever its registration says, so neither gets them unless the user passes one on.
// The ledger's location is no secret, and a command or handler that calls li (a nested leg, `li show {id}`)
// must reach the same ledger: `LI_DB` is passed on without its password.

/** Declared once: `LI_DB` (a postgres:// URL may carry a password) and libpq's `PGPASSWORD`. */
export const CREDENTIAL_VARIABLES: readonly string[] = Object.freeze(["LI_DB", "PGPASSWORD"]);

const POSTGRES_URL = /^postgres(ql)?:\/\//i;

/**
 * `LI_DB` as a child may see it: a SQLite path as it is; a postgres URL without its password (`:PASSWORD@`,
 * `?password=`), so a child authenticates by its own means (the password file) or is refused loudly, never
 * quietly pointed elsewhere; null for a URL that does not parse (it could hold anything).
 */
export function locationWithoutPassword(value: string): string | null {
  if (!POSTGRES_URL.test(value)) return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.password === "" && !url.searchParams.has("password")) return value;
  url.password = "";
  url.searchParams.delete("password");
  return url.toString();
}

/**
 * `env` without the credentials li consumed, except those named in `passed` (`li agent --pass-env NAME`):
 * `PGPASSWORD` is left out, `LI_DB` loses its password.
 */
export function withoutCredentials(env: Readonly<Record<string, string | undefined>>, passed: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (!CREDENTIAL_VARIABLES.includes(key) || passed.includes(key)) {
      out[key] = value;
      continue;
    }
    const kept = key === "LI_DB" ? locationWithoutPassword(value) : null;
    if (kept !== null) out[key] = kept;
  }
  return out;
}
