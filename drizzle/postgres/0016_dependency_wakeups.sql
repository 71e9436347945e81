-- PostgreSQL only. A run submitted with --after a session, invocation or play waits for that entity to end;
-- 0015_watcher_wakeups woke the watchers only for a scheduled run's own events, so a waiting run whose
-- dependency was not a scheduled run moved on only at a watcher's safety poll. Now the terminal event of
-- any entity a run waits for wakes every watcher (li_fleet_<md5 of the schema>): any of them settles it.
CREATE OR REPLACE FUNCTION li_notify_watchers() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  host text;
BEGIN
  IF EXISTS (SELECT 1 FROM inserted WHERE entity_type = 'schedule_run')
     OR EXISTS (SELECT 1 FROM inserted t JOIN schedule_run_deps d ON d.depends_on_id = t.entity_id AND d.depends_on_kind = t.entity_type
                WHERE t.terminal_event = 1) THEN
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
