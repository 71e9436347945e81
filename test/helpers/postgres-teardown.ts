// Preloaded by bunfig.toml: stops the PostgreSQL test cluster once every test file has run (bun test
// runs no process exit handler). Costs nothing when no test started a cluster.
import { afterAll } from "bun:test";
import { stopPostgresCluster } from "./postgres.ts";

afterAll(() => stopPostgresCluster());
