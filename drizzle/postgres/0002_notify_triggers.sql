-- PostgreSQL only (SQLite wakes its waiters by watching the database file): NOTIFY on every commit that
-- can end a wait or owe a delivery, and on every kill request (SPEC §14). NOTIFY is delivered at commit,
-- never for a rolled-back write. Channels are per database, so each payload starts with the schema's
-- name and a listener ignores other schemas' notices. Times and ids are never computed here.
-- li_changes: '<schema>:<highest seq inserted>' for history rows, '<schema>:' for registrations.
CREATE FUNCTION li_notify_transitions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('li_changes', TG_TABLE_SCHEMA || ':' || (SELECT COALESCE(MAX(seq), 0) FROM inserted)::text);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER status_transitions_notify AFTER INSERT ON status_transitions
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION li_notify_transitions();
--> statement-breakpoint
-- A registration (or its re-enabling) can make an already recorded event owed: the watcher must look.
-- Identical payloads in one transaction are folded into one notice by the server.
CREATE FUNCTION li_notify_registrations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('li_changes', TG_TABLE_SCHEMA || ':');
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER terminal_callbacks_notify AFTER INSERT OR UPDATE OF enabled, retired_at, leg_id ON terminal_callbacks
  FOR EACH ROW EXECUTE FUNCTION li_notify_registrations();
--> statement-breakpoint
CREATE TRIGGER consumers_notify AFTER INSERT OR UPDATE OF retired_at ON consumers
  FOR EACH ROW EXECUTE FUNCTION li_notify_registrations();
--> statement-breakpoint
-- li_kill: '<schema>:<leg id>' when a kill request is recorded on a leg (li kill from any host); the
-- leg's supervisor listens for its own id (and reads kill_requested_at at each heartbeat as the fallback).
CREATE FUNCTION li_notify_kill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('li_kill', TG_TABLE_SCHEMA || ':' || NEW.id);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER legs_kill_notify AFTER UPDATE OF kill_requested_at ON legs
  FOR EACH ROW WHEN (NEW.kill_requested_at IS NOT NULL AND NEW.kill_requested_at IS DISTINCT FROM OLD.kill_requested_at)
  EXECUTE FUNCTION li_notify_kill();
