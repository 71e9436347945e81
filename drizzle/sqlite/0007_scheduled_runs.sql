CREATE TABLE `queues` (
	`name` text PRIMARY KEY NOT NULL,
	`parallel` integer NOT NULL,
	`scope` text NOT NULL,
	`paused` integer DEFAULT 0 NOT NULL,
	`lease_attempts` integer NOT NULL,
	`created_at` real NOT NULL,
	`updated_at` real NOT NULL,
	CONSTRAINT "queues_scope_check" CHECK("queues"."scope" IN ('host', 'fleet')),
	CONSTRAINT "queues_parallel_check" CHECK("queues"."parallel" >= 0),
	CONSTRAINT "queues_lease_attempts_check" CHECK("queues"."lease_attempts" >= 1)
);
--> statement-breakpoint
CREATE TABLE `schedule_run_deps` (
	`run_id` text NOT NULL,
	`depends_on_kind` text NOT NULL,
	`depends_on_id` text NOT NULL,
	`created_at` real NOT NULL,
	PRIMARY KEY(`run_id`, `depends_on_id`),
	CONSTRAINT "schedule_run_deps_kind_check" CHECK("schedule_run_deps"."depends_on_kind" IN ('schedule_run', 'session', 'invocation', 'play'))
);
--> statement-breakpoint
CREATE INDEX `schedule_run_deps_target_idx` ON `schedule_run_deps` (`depends_on_id`,`run_id`);--> statement-breakpoint
CREATE TABLE `watch_hosts` (
	`host_id` text PRIMARY KEY NOT NULL,
	`host_name` text,
	`labels` text NOT NULL,
	`seen_at` real NOT NULL
);
--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_schedule_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`status` text NOT NULL,
	`status_reason_code` text,
	`status_reason_summary` text,
	`status_evidence_refs` text,
	`created_at` real NOT NULL,
	`updated_at` real NOT NULL,
	`invocation_id` text,
	`started_at` real,
	`ended_at` real,
	`exit_code` integer,
	`queue` text,
	`request_json` text,
	`needs` text,
	`leased_by` text,
	`lease_expires_at` real,
	`lease_seconds` real,
	`attempts` integer DEFAULT 0 NOT NULL,
	`session_id` text,
	`chain_parent_id` text,
	`chain_depth` integer DEFAULT 0 NOT NULL,
	`retries` integer DEFAULT 0 NOT NULL,
	`retry_delay` real,
	`retry_backoff` text,
	`retry_jitter` integer DEFAULT 0 NOT NULL,
	`retry_at` real,
	CONSTRAINT "schedule_runs_status_check" CHECK("__new_schedule_runs"."status" IN ('queued', 'waiting_dependency', 'running', 'retry_wait', 'completed', 'failed', 'timed_out', 'skipped', 'cancelled')),
	CONSTRAINT "schedule_runs_backoff_check" CHECK("__new_schedule_runs"."retry_backoff" IS NULL OR "__new_schedule_runs"."retry_backoff" IN ('fixed', 'exp'))
);
--> statement-breakpoint
INSERT INTO `__new_schedule_runs`("id", "status", "status_reason_code", "status_reason_summary", "status_evidence_refs", "created_at", "updated_at", "invocation_id", "started_at", "ended_at", "exit_code", "queue", "request_json", "needs", "leased_by", "lease_expires_at", "lease_seconds", "attempts", "session_id", "chain_parent_id", "chain_depth", "retries", "retry_delay", "retry_backoff", "retry_jitter", "retry_at") SELECT "id", "status", "status_reason_code", "status_reason_summary", "status_evidence_refs", "created_at", "updated_at", "invocation_id", "started_at", "ended_at", "exit_code", "queue", "request_json", "needs", "leased_by", "lease_expires_at", "lease_seconds", "attempts", "session_id", "chain_parent_id", "chain_depth", "retries", "retry_delay", "retry_backoff", "retry_jitter", "retry_at" FROM `schedule_runs`;--> statement-breakpoint
DROP TABLE `schedule_runs`;--> statement-breakpoint
ALTER TABLE `__new_schedule_runs` RENAME TO `schedule_runs`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `schedule_runs_status_idx` ON `schedule_runs` (`status`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `schedule_runs_updated_idx` ON `schedule_runs` (`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `schedule_runs_invocation_idx` ON `schedule_runs` (`invocation_id`);--> statement-breakpoint
CREATE INDEX `schedule_runs_queue_idx` ON `schedule_runs` (`queue`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `schedule_runs_lease_idx` ON `schedule_runs` (`status`,`lease_expires_at`) WHERE "schedule_runs"."status" = 'running';--> statement-breakpoint
CREATE INDEX `schedule_runs_retry_idx` ON `schedule_runs` (`status`,`retry_at`) WHERE "schedule_runs"."status" = 'retry_wait';--> statement-breakpoint
CREATE INDEX `schedule_runs_session_idx` ON `schedule_runs` (`session_id`);--> statement-breakpoint
CREATE INDEX `schedule_runs_chain_idx` ON `schedule_runs` (`chain_parent_id`);