ALTER TABLE `sessions` ADD `host_name` text;--> statement-breakpoint
ALTER TABLE `sessions` ADD `host_machine` text;--> statement-breakpoint
-- Backfill: each session's current leg's host name and the machine part of its host id (MACHINE:BOOT).
UPDATE `sessions` SET
  `host_name` = (SELECT l.`host_name` FROM `legs` l WHERE l.`id` = `sessions`.`current_leg_id`),
  `host_machine` = (SELECT CASE WHEN instr(l.`host_id`, ':') > 0 THEN substr(l.`host_id`, 1, instr(l.`host_id`, ':') - 1) ELSE l.`host_id` END FROM `legs` l WHERE l.`id` = `sessions`.`current_leg_id`)
WHERE `current_leg_id` IS NOT NULL;--> statement-breakpoint
CREATE INDEX `sessions_host_name_idx` ON `sessions` (`host_name`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `sessions_host_machine_idx` ON `sessions` (`host_machine`,`updated_at`,`id`);
