ALTER TABLE "legs" ADD COLUMN "containment" text;--> statement-breakpoint
ALTER TABLE "legs" ADD COLUMN "cgroup_path" text;--> statement-breakpoint
ALTER TABLE "legs" ADD COLUMN "cpu_user_seconds" double precision;--> statement-breakpoint
ALTER TABLE "legs" ADD COLUMN "cpu_system_seconds" double precision;--> statement-breakpoint
ALTER TABLE "legs" ADD COLUMN "peak_rss_bytes" bigint;