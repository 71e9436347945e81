DROP INDEX `branches_session_idx`;--> statement-breakpoint
CREATE INDEX `branches_session_idx` ON `branches` (`session_id`,`created_at`,`id`);--> statement-breakpoint
DROP INDEX `invocations_status_idx`;--> statement-breakpoint
CREATE INDEX `invocations_updated_idx` ON `invocations` (`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `invocations_status_idx` ON `invocations` (`status`,`updated_at`,`id`);--> statement-breakpoint
DROP INDEX `messages_session_idx`;--> statement-breakpoint
CREATE INDEX `messages_session_idx` ON `messages` (`session_id`,`created_at`,`id`);--> statement-breakpoint
DROP INDEX `plays_status_idx`;--> statement-breakpoint
CREATE INDEX `plays_updated_idx` ON `plays` (`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `plays_status_idx` ON `plays` (`status`,`updated_at`,`id`);--> statement-breakpoint
DROP INDEX `schedule_runs_status_idx`;--> statement-breakpoint
CREATE INDEX `schedule_runs_updated_idx` ON `schedule_runs` (`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `schedule_runs_status_idx` ON `schedule_runs` (`status`,`updated_at`,`id`);--> statement-breakpoint
DROP INDEX `sessions_status_idx`;--> statement-breakpoint
DROP INDEX `sessions_invocation_idx`;--> statement-breakpoint
DROP INDEX `sessions_updated_idx`;--> statement-breakpoint
CREATE INDEX `sessions_running_idx` ON `sessions` (`status`,`id`) WHERE "sessions"."status" = 'running';--> statement-breakpoint
CREATE INDEX `sessions_status_idx` ON `sessions` (`status`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `sessions_invocation_idx` ON `sessions` (`invocation_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `sessions_updated_idx` ON `sessions` (`updated_at`,`id`);--> statement-breakpoint
DROP INDEX `shows_status_idx`;--> statement-breakpoint
CREATE INDEX `shows_updated_idx` ON `shows` (`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `shows_status_idx` ON `shows` (`status`,`updated_at`,`id`);--> statement-breakpoint
DROP INDEX `status_transitions_entity_idx`;--> statement-breakpoint
CREATE INDEX `status_transitions_entity_idx` ON `status_transitions` (`entity_type`,`entity_id`,`created_at`,`seq`);--> statement-breakpoint
DROP INDEX `teams_status_idx`;--> statement-breakpoint
CREATE INDEX `teams_updated_idx` ON `teams` (`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `teams_status_idx` ON `teams` (`status`,`updated_at`,`id`);--> statement-breakpoint
DROP INDEX `terminal_callbacks_session_idx`;--> statement-breakpoint
CREATE INDEX `terminal_callbacks_session_idx` ON `terminal_callbacks` (`session_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `legs_state_root_idx` ON `legs` (`state_root`);--> statement-breakpoint
CREATE INDEX `legs_artifact_root_idx` ON `legs` (`artifact_root`);--> statement-breakpoint
CREATE INDEX `terminal_deliveries_state_idx` ON `terminal_deliveries` (`state`,`updated_at`,`consumer`);