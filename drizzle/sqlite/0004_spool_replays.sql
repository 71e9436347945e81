CREATE TABLE `spool_replays` (
	`id` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`leg_id` text NOT NULL,
	`host_id` text,
	`spooled_at` real NOT NULL,
	`replayed_at` real NOT NULL
);
