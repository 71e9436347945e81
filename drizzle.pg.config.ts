// drizzle-kit reads the PostgreSQL schema from here (`npm run db:generate` runs both configs, then embeds both sets).
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "postgresql",
  schema: "./src/ledger/postgres/schema.ts",
  out: "./drizzle/postgres",
});
