// One answer for an id nothing matches (§16): every command that takes an id exits 2 with the same one line.

import { afterEach, describe, expect, test } from "bun:test";
import { li } from "../helpers/cli.ts";
import { tempLedger, type TempLedger } from "../helpers/ledger.ts";
import { seedSession } from "../wait/seed.ts";

const open: TempLedger[] = [];
afterEach(() => {
  for (const t of open.splice(0)) t.ledger.close();
});

describe("an unknown id", () => {
  for (const command of ["wait", "show", "logs", "kill"]) {
    test(`li ${command} answers it with exit 2 and one line, the ledger unchanged`, async () => {
      const t = tempLedger();
      open.push(t);
      await seedSession(t.ledger, {});
      const before = await t.dump();
      const r = await li([command, "nope-nothing"], { home: t.paths.home });
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe("li: no run, session or branch matches 'nope-nothing'\n");
      expect(r.code).toBe(2);
      expect(await t.dump()).toEqual(before);
    });
  }
});
