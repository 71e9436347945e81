import { describe, expect, test } from "bun:test";
import fs from "node:fs";
import path from "node:path";
import { resolvePgTarget } from "../../../src/ledger/postgres/options.ts";
import { passfilePassword } from "../../../src/ledger/postgres/passfile.ts";
import { tempDir } from "../../helpers/temp-dirs.ts";

function passfile(text: string, mode = 0o600): string {
  const file = path.join(tempDir("li-pgpass-"), "pgpass");
  fs.writeFileSync(file, text, { mode });
  fs.chmodSync(file, mode);
  return file;
}

const target = { host: "db.example", port: 5432, database: "li", user: "builder" };

describe("the password file (PGPASSFILE, ~/.pgpass), as libpq reads it", () => {
  test("the first line whose host, port, database and user match (or are *) gives the password", () => {
    const file = passfile("# comment\nother:5432:li:builder:nope\ndb.example:5432:*:builder:s3cret\n*:*:*:*:fallback\n");
    expect(passfilePassword(target, { PGPASSFILE: file })).toBe("s3cret");
    expect(passfilePassword({ ...target, user: "someone" }, { PGPASSFILE: file })).toBe("fallback");
  });

  test("\\: and \\\\ are a colon and a backslash; a socket directory matches localhost", () => {
    const file = passfile("localhost:5432:li:builder:pa\\:ss\\\\word\n");
    expect(passfilePassword({ ...target, host: "/run/postgresql" }, { PGPASSFILE: file })).toBe("pa:ss\\word");
  });

  test("~/.pgpass when PGPASSFILE is unset", () => {
    const home = tempDir("li-pgpass-home-");
    fs.writeFileSync(path.join(home, ".pgpass"), "*:*:*:*:from-home\n", { mode: 0o600 });
    expect(passfilePassword(target, { HOME: home })).toBe("from-home");
  });

  test("a file group or others may read is ignored, as libpq ignores it; so is a symlink", () => {
    expect(passfilePassword(target, { PGPASSFILE: passfile("*:*:*:*:leaked\n", 0o644) })).toBeUndefined();
    const link = path.join(tempDir("li-pgpass-"), "link");
    fs.symlinkSync(passfile("*:*:*:*:linked\n"), link);
    expect(passfilePassword(target, { PGPASSFILE: link })).toBeUndefined();
  });

  test("the URL's password and PGPASSWORD come first; the file fills in only when neither is given", () => {
    const env = { PGPASSFILE: passfile("*:*:*:*:from-file\n") };
    expect(resolvePgTarget("postgres://builder@db.example/li", env).password).toBe("from-file");
    expect(resolvePgTarget("postgres://builder:in-url@db.example/li", env).password).toBe("in-url");
    expect(resolvePgTarget("postgres://builder@db.example/li", { ...env, PGPASSWORD: "from-env" }).password).toBe("from-env");
  });
});
