CREATE TABLE "admin_events" (
	"id" text PRIMARY KEY NOT NULL,
	"event_type" text NOT NULL,
	"entity_type" text,
	"entity_id" text,
	"actor" text,
	"justification" text,
	"payload" text,
	"created_at" double precision NOT NULL
);
--> statement-breakpoint
CREATE TABLE "branches" (
	"id" text PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"name" text,
	"metadata" text,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL
);
--> statement-breakpoint
CREATE TABLE "consumers" (
	"name" text PRIMARY KEY NOT NULL,
	"watermark" bigint NOT NULL,
	"registered_at" double precision NOT NULL,
	"retired_at" double precision
);
--> statement-breakpoint
CREATE TABLE "invocations" (
	"id" text PRIMARY KEY NOT NULL,
	"status" text NOT NULL,
	"status_reason_code" text,
	"status_reason_summary" text,
	"status_evidence_refs" text,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL,
	"started_at" double precision,
	"ended_at" double precision,
	CONSTRAINT "invocations_status_check" CHECK ("invocations"."status" IN ('running', 'completed', 'completed_empty', 'failed', 'timed_out', 'aborted', 'cancelled'))
);
--> statement-breakpoint
CREATE TABLE "legs" (
	"id" text PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"seq" integer NOT NULL,
	"run_id" text NOT NULL,
	"state_root" text NOT NULL,
	"artifact_root" text NOT NULL,
	"command" text NOT NULL,
	"cwd" text,
	"pid" bigint,
	"pid_start_ticks" bigint,
	"boot_id" text,
	"host_id" text,
	"host_name" text,
	"command_pid" bigint,
	"command_start_ticks" bigint,
	"started_at" double precision NOT NULL,
	"heartbeat_at" double precision,
	"kill_requested_at" double precision,
	"ended_at" double precision,
	"status" text NOT NULL,
	"reason_code" text,
	"exit_code" integer,
	"deferred" integer DEFAULT 0 NOT NULL,
	"first_msg_id" text,
	"last_msg_id" text,
	CONSTRAINT "legs_status_check" CHECK ("legs"."status" IN ('running', 'completed', 'completed_empty', 'failed', 'timed_out', 'aborted', 'cancelled'))
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" text PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"branch_id" text,
	"leg_id" text,
	"role" text NOT NULL,
	"content" text NOT NULL,
	"truncated" integer DEFAULT 0 NOT NULL,
	"created_at" double precision NOT NULL
);
--> statement-breakpoint
CREATE TABLE "plays" (
	"id" text PRIMARY KEY NOT NULL,
	"status" text NOT NULL,
	"status_reason_code" text,
	"status_reason_summary" text,
	"status_evidence_refs" text,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL,
	"session_id" text,
	"started_at" double precision,
	"ended_at" double precision,
	"exit_code" integer,
	CONSTRAINT "plays_status_check" CHECK ("plays"."status" IN ('pending', 'prepared', 'running', 'running_complete', 'gated', 'gate_failed', 'redoing', 'merged', 'escalated', 'blocked', 'aborted_after_finish'))
);
--> statement-breakpoint
CREATE TABLE "schedule_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"status" text NOT NULL,
	"status_reason_code" text,
	"status_reason_summary" text,
	"status_evidence_refs" text,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL,
	"invocation_id" text,
	"started_at" double precision,
	"ended_at" double precision,
	"exit_code" integer,
	CONSTRAINT "schedule_runs_status_check" CHECK ("schedule_runs"."status" IN ('queued', 'waiting_dependency', 'running', 'retry_wait', 'completed', 'failed', 'timed_out', 'skipped', 'cancelled'))
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" text PRIMARY KEY NOT NULL,
	"progression_id" text,
	"first_msg_id" text,
	"last_msg_id" text,
	"status" text NOT NULL,
	"status_reason_code" text,
	"status_reason_summary" text,
	"status_evidence_refs" text,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL,
	"started_at" double precision,
	"ended_at" double precision,
	"invocation_id" text,
	"artifacts_path" text,
	"artifact_contract_json" text,
	"artifact_verification_json" text,
	"node_metadata" text,
	"exit_code" integer,
	"current_leg_id" text,
	"linked_session_id" text,
	CONSTRAINT "sessions_status_check" CHECK ("sessions"."status" IN ('running', 'completed', 'completed_empty', 'failed', 'timed_out', 'aborted', 'cancelled'))
);
--> statement-breakpoint
CREATE TABLE "shows" (
	"id" text PRIMARY KEY NOT NULL,
	"status" text NOT NULL,
	"status_reason_code" text,
	"status_reason_summary" text,
	"status_evidence_refs" text,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL,
	CONSTRAINT "shows_status_check" CHECK ("shows"."status" IN ('active', 'imported', 'completed', 'aborted'))
);
--> statement-breakpoint
CREATE TABLE "status_transitions" (
	"id" text PRIMARY KEY NOT NULL,
	"seq" bigint NOT NULL,
	"entity_type" text NOT NULL,
	"entity_id" text NOT NULL,
	"previous_status" text,
	"status" text NOT NULL,
	"reason_code" text NOT NULL,
	"reason_summary" text,
	"evidence_refs" text,
	"source" text NOT NULL,
	"actor" text,
	"created_at" double precision NOT NULL,
	"metadata" text,
	"terminal_event" integer DEFAULT 0 NOT NULL,
	"leg_id" text,
	CONSTRAINT "status_transitions_source_check" CHECK ("status_transitions"."source" IN ('executor', 'agent', 'admin', 'system'))
);
--> statement-breakpoint
CREATE TABLE "teams" (
	"id" text PRIMARY KEY NOT NULL,
	"status" text NOT NULL,
	"status_reason_code" text,
	"status_reason_summary" text,
	"status_evidence_refs" text,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL,
	CONSTRAINT "teams_status_check" CHECK ("teams"."status" IN ('active', 'archived'))
);
--> statement-breakpoint
CREATE TABLE "terminal_callbacks" (
	"id" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"name" text,
	"consumer" text NOT NULL,
	"session_id" text,
	"leg_id" text,
	"argv" text NOT NULL,
	"filter_kinds" text,
	"filter_ids" text,
	"origin" text NOT NULL,
	"host_id" text NOT NULL,
	"enabled" integer DEFAULT 1 NOT NULL,
	"created_at" double precision NOT NULL,
	"retired_at" double precision,
	CONSTRAINT "terminal_callbacks_scope_check" CHECK ("terminal_callbacks"."scope" IN ('leg', 'standing'))
);
--> statement-breakpoint
CREATE TABLE "terminal_deliveries" (
	"transition_id" text NOT NULL,
	"consumer" text NOT NULL,
	"state" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"claimed_until" double precision,
	"next_attempt_at" double precision,
	"acked_at" double precision,
	"created_at" double precision NOT NULL,
	"updated_at" double precision NOT NULL,
	CONSTRAINT "terminal_deliveries_transition_id_consumer_pk" PRIMARY KEY("transition_id","consumer"),
	CONSTRAINT "terminal_deliveries_state_check" CHECK ("terminal_deliveries"."state" IN ('claimed', 'retry', 'acked', 'dead'))
);
--> statement-breakpoint
CREATE INDEX "admin_events_entity_idx" ON "admin_events" USING btree ("entity_type","entity_id","created_at");--> statement-breakpoint
CREATE INDEX "admin_events_type_idx" ON "admin_events" USING btree ("event_type");--> statement-breakpoint
CREATE INDEX "branches_session_idx" ON "branches" USING btree ("session_id","created_at","id");--> statement-breakpoint
CREATE INDEX "invocations_status_idx" ON "invocations" USING btree ("status","updated_at","id");--> statement-breakpoint
CREATE INDEX "invocations_updated_idx" ON "invocations" USING btree ("updated_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "legs_run_id_idx" ON "legs" USING btree ("run_id");--> statement-breakpoint
CREATE UNIQUE INDEX "legs_session_seq_idx" ON "legs" USING btree ("session_id","seq");--> statement-breakpoint
CREATE INDEX "legs_open_idx" ON "legs" USING btree ("ended_at");--> statement-breakpoint
CREATE INDEX "legs_state_root_idx" ON "legs" USING btree ("state_root");--> statement-breakpoint
CREATE INDEX "legs_artifact_root_idx" ON "legs" USING btree ("artifact_root");--> statement-breakpoint
CREATE INDEX "messages_session_idx" ON "messages" USING btree ("session_id","created_at","id");--> statement-breakpoint
CREATE INDEX "messages_leg_idx" ON "messages" USING btree ("leg_id");--> statement-breakpoint
CREATE INDEX "plays_status_idx" ON "plays" USING btree ("status","updated_at","id");--> statement-breakpoint
CREATE INDEX "plays_updated_idx" ON "plays" USING btree ("updated_at","id");--> statement-breakpoint
CREATE INDEX "plays_session_idx" ON "plays" USING btree ("session_id");--> statement-breakpoint
CREATE INDEX "schedule_runs_status_idx" ON "schedule_runs" USING btree ("status","updated_at","id");--> statement-breakpoint
CREATE INDEX "schedule_runs_updated_idx" ON "schedule_runs" USING btree ("updated_at","id");--> statement-breakpoint
CREATE INDEX "schedule_runs_invocation_idx" ON "schedule_runs" USING btree ("invocation_id");--> statement-breakpoint
CREATE INDEX "sessions_status_idx" ON "sessions" USING btree ("status","updated_at","id");--> statement-breakpoint
CREATE INDEX "sessions_invocation_idx" ON "sessions" USING btree ("invocation_id","updated_at","id");--> statement-breakpoint
CREATE INDEX "sessions_updated_idx" ON "sessions" USING btree ("updated_at","id");--> statement-breakpoint
CREATE INDEX "sessions_running_idx" ON "sessions" USING btree ("status","id") WHERE "sessions"."status" = 'running';--> statement-breakpoint
CREATE INDEX "sessions_linked_idx" ON "sessions" USING btree ("linked_session_id");--> statement-breakpoint
CREATE INDEX "shows_status_idx" ON "shows" USING btree ("status","updated_at","id");--> statement-breakpoint
CREATE INDEX "shows_updated_idx" ON "shows" USING btree ("updated_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "status_transitions_seq_idx" ON "status_transitions" USING btree ("seq");--> statement-breakpoint
CREATE INDEX "status_transitions_entity_idx" ON "status_transitions" USING btree ("entity_type","entity_id","created_at","seq");--> statement-breakpoint
CREATE INDEX "status_transitions_events_idx" ON "status_transitions" USING btree ("terminal_event","seq");--> statement-breakpoint
CREATE INDEX "teams_status_idx" ON "teams" USING btree ("status","updated_at","id");--> statement-breakpoint
CREATE INDEX "teams_updated_idx" ON "teams" USING btree ("updated_at","id");--> statement-breakpoint
CREATE UNIQUE INDEX "terminal_callbacks_consumer_idx" ON "terminal_callbacks" USING btree ("consumer");--> statement-breakpoint
CREATE INDEX "terminal_callbacks_session_idx" ON "terminal_callbacks" USING btree ("session_id","created_at","id");--> statement-breakpoint
CREATE INDEX "terminal_callbacks_leg_idx" ON "terminal_callbacks" USING btree ("leg_id");--> statement-breakpoint
CREATE INDEX "terminal_callbacks_live_idx" ON "terminal_callbacks" USING btree ("scope","host_id") WHERE "terminal_callbacks"."retired_at" IS NULL;--> statement-breakpoint
CREATE INDEX "terminal_deliveries_consumer_idx" ON "terminal_deliveries" USING btree ("consumer","state");--> statement-breakpoint
CREATE INDEX "terminal_deliveries_state_idx" ON "terminal_deliveries" USING btree ("state","updated_at","consumer");