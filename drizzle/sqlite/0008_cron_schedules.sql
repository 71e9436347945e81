CREATE TABLE `schedule_fires` (
	`schedule_id` text NOT NULL,
	`due_at` real NOT NULL,
	`outcome` text NOT NULL,
	`run_id` text,
	`host_id` text,
	`decided_at` real NOT NULL,
	PRIMARY KEY(`schedule_id`, `due_at`),
	CONSTRAINT "schedule_fires_outcome_check" CHECK("schedule_fires"."outcome" IN ('fired', 'skipped_missed', 'skipped_overlap'))
);
--> statement-breakpoint
CREATE TABLE `schedules` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`cron` text NOT NULL,
	`time_zone` text NOT NULL,
	`overlap` text NOT NULL,
	`missed` text NOT NULL,
	`queue` text NOT NULL,
	`request_json` text NOT NULL,
	`paused` integer DEFAULT 0 NOT NULL,
	`next_due_at` real,
	`last_run_id` text,
	`created_at` real NOT NULL,
	`updated_at` real NOT NULL,
	CONSTRAINT "schedules_overlap_check" CHECK("schedules"."overlap" IN ('skip', 'queue')),
	CONSTRAINT "schedules_missed_check" CHECK("schedules"."missed" IN ('skip', 'latest'))
);
--> statement-breakpoint
CREATE UNIQUE INDEX `schedules_name_idx` ON `schedules` (`name`);--> statement-breakpoint
CREATE INDEX `schedules_due_idx` ON `schedules` (`next_due_at`) WHERE "schedules"."paused" = 0;