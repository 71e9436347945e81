// The PostgreSQL every PostgreSQL benchmark runs against: the test helper's throwaway cluster on loopback
// (started on first use, fsync off, as the tests run it) and one fresh database of the bench's own,
// dropped again — and the cluster stopped — by `dispose` when the bench ends.

import { asSuperuser, postgresCluster, stopPostgresCluster, type PgCluster } from "../test/helpers/postgres.ts";

export interface BenchDatabase {
  cluster: PgCluster;
  name: string;
  /** The superuser's URL of the database (loopback is trusted: no password). */
  url: string;
  /** Drops the database and stops the cluster. */
  dispose(): Promise<void>;
}

/** A fresh database `name` (one left by an earlier, interrupted run is dropped first). */
export async function benchDatabase(name: string): Promise<BenchDatabase> {
  const cluster = postgresCluster();
  const drop = () => asSuperuser((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  await drop();
  await asSuperuser((sql) => sql.unsafe(`CREATE DATABASE ${name}`));
  return {
    cluster,
    name,
    url: cluster.url(name),
    async dispose() {
      try {
        await drop();
      } finally {
        stopPostgresCluster();
      }
    },
  };
}
