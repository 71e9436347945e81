CREATE TABLE "spool_replays" (
	"id" text PRIMARY KEY NOT NULL,
	"session_id" text NOT NULL,
	"leg_id" text NOT NULL,
	"host_id" text,
	"spooled_at" double precision NOT NULL,
	"replayed_at" double precision NOT NULL
);
