-- PostgreSQL only (SQLite's one watcher sees every commit through the file watch). Wake-ups for li watch that
-- say whom they concern (SPEC §14 "Many hosts"): a watcher LISTENs on its own host's channel and on the
-- fleet's, never on li_changes (li wait's, unchanged), so a leg's commit wakes only the watcher that has work
-- for it, and the others run no query. Channels are per schema: 'li_host_' || md5('<schema>:<machine id>')
-- and 'li_fleet_' || md5('<schema>'); the payload is '<schema>:'. Times and ids are never computed here.
-- A notice may be spurious (a watcher then looks and finds nothing); a missing one would cost it its poll.
--
-- A history row wakes: the host of each live handler it may be owed to (a leg registration's session's
-- terminal event; a standing handler's, by its kinds and ids), the host that leased the scheduled run whose
-- session ended (its pass settles the run), and every watcher for a scheduled run's own event (any host may
-- lease what it queued, or move what waited for it).
CREATE FUNCTION li_notify_watchers() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  host text;
BEGIN
  IF EXISTS (SELECT 1 FROM inserted WHERE entity_type = 'schedule_run') THEN
    PERFORM pg_notify('li_fleet_' || md5(TG_TABLE_SCHEMA), TG_TABLE_SCHEMA || ':');
  END IF;
  IF NOT EXISTS (SELECT 1 FROM inserted WHERE terminal_event = 1) THEN
    RETURN NULL;
  END IF;
  FOR host IN
    SELECT c.host_id FROM inserted t
      JOIN terminal_callbacks c ON c.scope = 'leg' AND c.session_id = t.entity_id AND c.enabled = 1 AND c.retired_at IS NULL
      WHERE t.entity_type = 'session' AND t.terminal_event = 1
    UNION
    SELECT c.host_id FROM inserted t
      JOIN terminal_callbacks c ON c.scope = 'standing' AND c.enabled = 1 AND c.retired_at IS NULL
      WHERE t.terminal_event = 1
        AND (c.filter_kinds IS NULL OR t.entity_type = ANY(SELECT jsonb_array_elements_text(c.filter_kinds::jsonb)))
        AND (c.filter_ids IS NULL OR t.entity_id = ANY(SELECT jsonb_array_elements_text(c.filter_ids::jsonb)))
    UNION
    SELECT split_part(r.leased_by, ':', 1) FROM inserted t
      JOIN schedule_runs r ON r.session_id = t.entity_id AND r.leased_by IS NOT NULL
      WHERE t.entity_type = 'session' AND t.terminal_event = 1
  LOOP
    PERFORM pg_notify('li_host_' || md5(TG_TABLE_SCHEMA || ':' || host), TG_TABLE_SCHEMA || ':');
  END LOOP;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER status_transitions_notify_watchers AFTER INSERT ON status_transitions
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION li_notify_watchers();
--> statement-breakpoint
-- A registration (or its re-enabling, retiring or move to another leg) can make a recorded event owed: its
-- own host's watcher looks. (A trigger with transition tables fires for one event kind: one per kind.)
CREATE FUNCTION li_notify_handler_hosts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  host text;
BEGIN
  FOR host IN SELECT DISTINCT host_id FROM changed LOOP
    PERFORM pg_notify('li_host_' || md5(TG_TABLE_SCHEMA || ':' || host), TG_TABLE_SCHEMA || ':');
  END LOOP;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER terminal_callbacks_insert_notify_hosts AFTER INSERT ON terminal_callbacks
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION li_notify_handler_hosts();
--> statement-breakpoint
CREATE TRIGGER terminal_callbacks_update_notify_hosts AFTER UPDATE ON terminal_callbacks
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION li_notify_handler_hosts();
--> statement-breakpoint
-- A schedule or a queue changed (added, paused, resumed, resized, moved to its next due time): every
-- watcher may have to lease, and the elected one to fire.
CREATE FUNCTION li_notify_fleet() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('li_fleet_' || md5(TG_TABLE_SCHEMA), TG_TABLE_SCHEMA || ':');
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER schedules_notify_fleet AFTER INSERT OR UPDATE OF paused, next_due_at ON schedules
  FOR EACH STATEMENT EXECUTE FUNCTION li_notify_fleet();
--> statement-breakpoint
CREATE TRIGGER queues_notify_fleet AFTER INSERT OR UPDATE OF parallel, scope, paused, lease_attempts ON queues
  FOR EACH STATEMENT EXECUTE FUNCTION li_notify_fleet();
