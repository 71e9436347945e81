// The credentials a child of li never gets (SPEC §18): PGPASSWORD, and LI_DB's password; the location stays.

import { describe, expect, test } from "bun:test";
import { locationWithoutPassword, withoutCredentials } from "../../src/util/credentials.ts";

describe("locationWithoutPassword", () => {
  test("a SQLite path and a URL without a password are passed on as they are", () => {
    expect(locationWithoutPassword("/home/ci/.li/state.db")).toBe("/home/ci/.li/state.db");
    const plain = "postgres://li_app@db.example.com:5432/li?sslmode=require&host=%2Frun%2Fpg";
    expect(locationWithoutPassword(plain)).toBe(plain);
  });

  test("a password in the user part or in the query is removed, the rest of the URL kept", () => {
    expect(locationWithoutPassword("postgres://li_app:s3cr%40t@db:5432/li")).toBe("postgres://li_app@db:5432/li");
    expect(locationWithoutPassword("postgresql://li_app@db/li?password=s3cret&sslmode=disable")).toBe("postgresql://li_app@db/li?sslmode=disable");
  });

  test("a postgres URL that does not parse is not passed on at all: it could hold anything", () => {
    expect(locationWithoutPassword("postgres://li_app:pw@[not-a-host/li")).toBeNull();
  });
});

describe("withoutCredentials", () => {
  const env = { PATH: "/usr/bin", PGPASSWORD: "pw", LI_DB: "postgres://u:pw@h/li", UNSET: undefined };

  test("drops PGPASSWORD, keeps LI_DB's location, and leaves the rest alone", () => {
    expect(withoutCredentials(env)).toEqual({ PATH: "/usr/bin", LI_DB: "postgres://u@h/li" });
  });

  test("a variable named to pass through is kept whole", () => {
    expect(withoutCredentials(env, ["PGPASSWORD", "LI_DB"])).toEqual({ PATH: "/usr/bin", PGPASSWORD: "pw", LI_DB: "postgres://u:pw@h/li" });
  });
});
