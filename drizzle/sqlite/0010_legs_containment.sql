ALTER TABLE `legs` ADD `containment` text;--> statement-breakpoint
ALTER TABLE `legs` ADD `cgroup_path` text;--> statement-breakpoint
ALTER TABLE `legs` ADD `cpu_user_seconds` real;--> statement-breakpoint
ALTER TABLE `legs` ADD `cpu_system_seconds` real;--> statement-breakpoint
ALTER TABLE `legs` ADD `peak_rss_bytes` integer;