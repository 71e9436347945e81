// drizzle-kit reads the SQLite schema from here; `npm run db:generate` writes drizzle/ and the embedded module.
import { defineConfig } from "drizzle-kit";

export default defineConfig({
  dialect: "sqlite",
  schema: "./src/ledger/sqlite/schema.ts",
  out: "./drizzle/sqlite",
});
