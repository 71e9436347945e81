// The ownership checks the entry point begins early (src/cli/owned-paths.ts, SPEC §18): main.ts judges
// those answers once, for the same paths; any other check looks afresh, so an early answer is never
// reused for a later command or for other paths.

import { expect, test } from "bun:test";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beginOwnedPathChecks, requireOwnedPaths } from "../../src/cli/owned-paths.ts";
import { resolvePaths } from "../../src/ledger/location.ts";
import { ForeignPathError } from "../../src/util/ownership.ts";
import { tempDir } from "../helpers/ledger.ts";

const homeWithSettings = () => {
  const home = tempDir("li-owned-");
  chmodSync(home, 0o700);
  mkdirSync(join(home, "runs"), { mode: 0o700 });
  writeFileSync(join(home, "settings.yaml"), "", { mode: 0o600 });
  return home;
};

test("the checks begun early are judged once; the next check of the same paths looks again and refuses what changed", async () => {
  const home = homeWithSettings();
  const paths = resolvePaths({ env: { LI_HOME: home } });
  beginOwnedPathChecks(paths);
  // main.ts judges the begun checks (all fine); then the settings file becomes writable by others.
  await requireOwnedPaths(paths);
  chmodSync(join(home, "settings.yaml"), 0o666);
  const refused = await requireOwnedPaths(paths).then(() => null, (error: unknown) => error);
  expect(refused).toBeInstanceOf(ForeignPathError);
  expect((refused as Error).message).toContain(`the settings file ${home}/settings.yaml is writable by group or others`);
});

test("checks begun for other paths are not taken: a command's own paths are checked afresh", async () => {
  const begunHome = homeWithSettings();
  const home = homeWithSettings();
  chmodSync(join(home, "settings.yaml"), 0o666);
  beginOwnedPathChecks(resolvePaths({ env: { LI_HOME: begunHome } }));
  const refused = await requireOwnedPaths(resolvePaths({ env: { LI_HOME: home } })).then(() => null, (error: unknown) => error);
  expect(refused).toBeInstanceOf(ForeignPathError);
});

test("a path made foreign before the begun checks ran is refused by them", async () => {
  const home = homeWithSettings();
  chmodSync(join(home, "settings.yaml"), 0o666);
  const paths = resolvePaths({ env: { LI_HOME: home } });
  beginOwnedPathChecks(paths);
  await expect(requireOwnedPaths(paths)).rejects.toBeInstanceOf(ForeignPathError);
});
