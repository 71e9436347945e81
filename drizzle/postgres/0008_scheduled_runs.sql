CREATE TABLE "queues" (
	"name" text PRIMARY KEY NOT NULL,
	"parallel" integer NOT NULL,
	"scope" text NOT NULL,
	"paused" integer DEFAULT 0 NOT NULL,
	"lease_attempts" integer NOT NULL,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL,
	CONSTRAINT "queues_scope_check" CHECK ("queues"."scope" IN ('host', 'fleet')),
	CONSTRAINT "queues_parallel_check" CHECK ("queues"."parallel" >= 0),
	CONSTRAINT "queues_lease_attempts_check" CHECK ("queues"."lease_attempts" >= 1)
);
--> statement-breakpoint
CREATE TABLE "schedule_run_deps" (
	"run_id" text NOT NULL,
	"depends_on_kind" text NOT NULL,
	"depends_on_id" text NOT NULL,
	"created_at" double precision NOT NULL,
	CONSTRAINT "schedule_run_deps_run_id_depends_on_id_pk" PRIMARY KEY("run_id","depends_on_id"),
	CONSTRAINT "schedule_run_deps_kind_check" CHECK ("schedule_run_deps"."depends_on_kind" IN ('schedule_run', 'session', 'invocation', 'play'))
);
--> statement-breakpoint
CREATE TABLE "watch_hosts" (
	"host_id" text PRIMARY KEY NOT NULL,
	"host_name" text,
	"labels" text NOT NULL,
	"seen_at" double precision NOT NULL
);
--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "queue" text;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "request_json" text;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "needs" text;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "leased_by" text;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "lease_expires_at" double precision;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "lease_seconds" double precision;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "attempts" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "session_id" text;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "chain_parent_id" text;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "chain_depth" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "retries" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "retry_delay" double precision;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "retry_backoff" text;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "retry_jitter" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD COLUMN "retry_at" double precision;--> statement-breakpoint
CREATE INDEX "schedule_run_deps_target_idx" ON "schedule_run_deps" USING btree ("depends_on_id","run_id");--> statement-breakpoint
CREATE INDEX "schedule_runs_queue_idx" ON "schedule_runs" USING btree ("queue","status","created_at","id");--> statement-breakpoint
CREATE INDEX "schedule_runs_lease_idx" ON "schedule_runs" USING btree ("status","lease_expires_at") WHERE "schedule_runs"."status" = 'running';--> statement-breakpoint
CREATE INDEX "schedule_runs_retry_idx" ON "schedule_runs" USING btree ("status","retry_at") WHERE "schedule_runs"."status" = 'retry_wait';--> statement-breakpoint
CREATE INDEX "schedule_runs_session_idx" ON "schedule_runs" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "schedule_runs_chain_idx" ON "schedule_runs" USING btree ("chain_parent_id");--> statement-breakpoint
ALTER TABLE "schedule_runs" ADD CONSTRAINT "schedule_runs_backoff_check" CHECK ("schedule_runs"."retry_backoff" IS NULL OR "schedule_runs"."retry_backoff" IN ('fixed', 'exp'));