-- Ids and run directories compare bytewise (COLLATE "C"), as on SQLite, whatever the database's own
-- collation: li finds ids by prefix and directories by what lies inside them with index range scans
-- (`id >= prefix AND id < prefix || U+10FFFF`), which only mean "starts with" in byte order. Under a
-- linguistic collation (en_US, ICU) 'Abc' sorts between 'a' and 'a' || U+10FFFF, so a prefix would find
-- ids it does not start. drizzle-kit has no collation option: this custom migration is where it is set.
ALTER TABLE "sessions" ALTER COLUMN "id" TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "invocations" ALTER COLUMN "id" TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "plays" ALTER COLUMN "id" TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "schedule_runs" ALTER COLUMN "id" TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "shows" ALTER COLUMN "id" TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "teams" ALTER COLUMN "id" TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "branches" ALTER COLUMN "id" TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "legs" ALTER COLUMN "run_id" TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "legs" ALTER COLUMN "state_root" TYPE text COLLATE "C";--> statement-breakpoint
ALTER TABLE "legs" ALTER COLUMN "artifact_root" TYPE text COLLATE "C";
