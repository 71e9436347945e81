// The vocabularies of cron schedules (SPEC §19), declared once: the CLI's flags, the schema's CHECKs and
// the watcher's decisions derive from these lists.

/** What happens to due times that passed while no watcher could fire them. */
export const MISSED_POLICIES = ["skip", "latest"] as const;
export type MissedPolicy = (typeof MISSED_POLICIES)[number];

/** What a due time does while the schedule's previous run is still queued, waiting or running. */
export const OVERLAP_POLICIES = ["skip", "queue"] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/** How one due time was decided: a run submitted, or a skipped run recorded with its reason. */
export const FIRE_OUTCOMES = ["fired", "skipped_missed", "skipped_overlap"] as const;
export type FireOutcome = (typeof FIRE_OUTCOMES)[number];

/** The reason each outcome's schedule_run carries. */
export const FIRE_REASONS = {
  fired: "schedule.fired.due",
  skipped_missed: "schedule.skipped.missed_fire",
  skipped_overlap: "schedule.skipped.overlap",
} as const satisfies Record<FireOutcome, string>;
