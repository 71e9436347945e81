ALTER TABLE "sessions" ADD COLUMN "host_name" text;--> statement-breakpoint
ALTER TABLE "sessions" ADD COLUMN "host_machine" text;--> statement-breakpoint
-- Backfill: each session's current leg's host name and the machine part of its host id (MACHINE:BOOT).
UPDATE "sessions" s SET "host_name" = l."host_name", "host_machine" = split_part(l."host_id", ':', 1)
FROM "legs" l WHERE l."id" = s."current_leg_id";--> statement-breakpoint
CREATE INDEX "sessions_host_name_idx" ON "sessions" USING btree ("host_name","updated_at","id");--> statement-breakpoint
CREATE INDEX "sessions_host_machine_idx" ON "sessions" USING btree ("host_machine","updated_at","id");
