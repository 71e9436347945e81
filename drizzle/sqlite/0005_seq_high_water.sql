CREATE TABLE `seq_high_water` (
	`id` integer PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL,
	CONSTRAINT "seq_high_water_one_row_check" CHECK("seq_high_water"."id" = 1)
);
--> statement-breakpoint
-- Seeded from the history as it stands, so a ledger pruned before this migration still never reuses a seq above it.
INSERT INTO seq_high_water (id, seq) SELECT 1, COALESCE(MAX(seq), 0) FROM status_transitions;
