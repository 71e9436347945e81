DROP INDEX `admin_events_entity_idx`;--> statement-breakpoint
CREATE INDEX `admin_events_entity_idx` ON `admin_events` (`entity_type`,`entity_id`,`created_at`,`id`);