-- PostgreSQL only (SQLite's watchers see every commit through the file watch). A queue created, resized,
-- rescoped, paused or resumed (li queue set/pause/resume) wakes every watcher (li_changes, '<schema>:' as
-- a registration does), so a change is seen at its next pass, not its next poll (§19).
CREATE TRIGGER queues_notify AFTER INSERT OR UPDATE OF parallel, scope, paused, lease_attempts ON queues
  FOR EACH STATEMENT EXECUTE FUNCTION li_notify_registrations();
