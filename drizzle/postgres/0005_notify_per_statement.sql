-- PostgreSQL only. The registration notices of 0002_notify_triggers fire once per statement instead of
-- once per row: a bulk insert of registrations paid a plpgsql call per row (~9 µs each) for notices the
-- server folds into one anyway. A statement that changes no row may now notify: a spurious wake-up
-- costs a waiter one re-check, a missing one would cost it the safety poll.
DROP TRIGGER terminal_callbacks_notify ON terminal_callbacks;
--> statement-breakpoint
DROP TRIGGER consumers_notify ON consumers;
--> statement-breakpoint
CREATE TRIGGER terminal_callbacks_notify AFTER INSERT OR UPDATE OF enabled, retired_at, leg_id ON terminal_callbacks
  FOR EACH STATEMENT EXECUTE FUNCTION li_notify_registrations();
--> statement-breakpoint
CREATE TRIGGER consumers_notify AFTER INSERT OR UPDATE OF retired_at ON consumers
  FOR EACH STATEMENT EXECUTE FUNCTION li_notify_registrations();
