-- PostgreSQL only (SQLite's watchers see every commit through the file watch). A schedule added, paused,
-- resumed or moved to its next due time wakes the watchers (li_changes, '<schema>:' as a registration
-- does), so a watcher that knows when the next schedule falls due need not ask the ledger before then.
CREATE TRIGGER schedules_notify AFTER INSERT OR UPDATE OF paused, next_due_at ON schedules
  FOR EACH STATEMENT EXECUTE FUNCTION li_notify_registrations();
