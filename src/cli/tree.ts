// The command tree: every command's words, one-line summary and lazy module. Subcommands load lazily so
// start-up pays only for the command it runs; help, completion and the tree test walk this one list.

import type { LiCommand } from "./command.ts";
import { isGroup, type Command, type Group } from "./tree-node.ts";

type Loaded = LiCommand<any, any>;

/** A command: its summary (for the group's help, without loading it) and the export that declares it. */
function cmd<M>(summary: string, load: () => Promise<M>, pick: (m: M) => Loaded): Command {
  return { summary, load: () => load().then((m) => pick(m) as LiCommand) };
}
const events = () => import("./commands/events.ts");
const completion = () => import("./commands/completion.ts");
const schedule = () => import("./commands/schedule.ts");
const queue = () => import("./commands/queue.ts");

export const TREE: Group = {
  description: "li — a run ledger for build and agent machines",
  examples: ["li agent -- make test", "li wait $(li agent --detach -- make e2e)"],
  commands: {
    agent: cmd("run a command as a tracked leg: li agent [options] -- <command…>", () => import("./commands/agent.ts"), (m) => m.default),
    wait: cmd("block until runs are terminal; one frozen line per run", () => import("./commands/wait.ts"), (m) => m.default),
    ls: cmd("list recent sessions and other entities", () => import("./commands/ls.ts"), (m) => m.default),
    show: cmd("one entity with its legs, history, verification and notices", () => import("./commands/show.ts"), (m) => m.default),
    logs: cmd("what a session's legs printed; -f follows the live leg", () => import("./commands/logs.ts"), (m) => m.default),
    kill: cmd("stop a running leg (or every stale one) and record it cancelled", () => import("./commands/kill.ts"), (m) => m.default),
    ui: cmd("a read-only web page of the runs, live, from this binary", () => import("./commands/ui.ts"), (m) => m.default),
    watch: cmd("the service: durable delivery, phantom reaping, linked finalizing, optional prune", () => import("./commands/watch.ts"), (m) => m.default),
    events: {
      description: "terminal events: consumers, acknowledgements, standing handlers, delivery",
      examples: ["li events consumers add ci", "li events owed --consumer=ci --json"],
      fallback: cmd("list events owed to a consumer, or dead deliveries", events, (m) => m.list),
      commands: {
        consumers: {
          description: "register or retire a consumer that acknowledges by hand",
          examples: ["li events consumers add ci", "li events consumers retire ci"],
          commands: {
            add: cmd("register NAME: owed every terminal event committed from now on", events, (m) => m.consumersAdd),
            retire: cmd("retire NAME, releasing what it was still owed", events, (m) => m.consumersRetire),
          },
        },
        handlers: {
          description: "standing handlers: a command run on every matching terminal event, on the host that added it",
          examples: ["li events handlers add notify-ci --kind=session -- ./notify {status}", "li events handlers ls"],
          commands: {
            add: cmd("add a standing handler: li events handlers add NAME [--kind K…] [--id ID…] -- ARGV…", events, (m) => m.handlersAdd),
            rm: cmd("remove a standing handler, releasing what it was owed", events, (m) => m.handlersRm),
            ls: cmd("list the standing handlers", events, (m) => m.handlersLs),
          },
        },
        owed: cmd("the events owed to a consumer (unacknowledged, oldest first)", events, (m) => m.owed),
        ack: cmd("acknowledge events for a consumer (idempotent)", events, (m) => m.ack),
        dead: cmd("deliveries that failed every attempt", events, (m) => m.dead),
        deliver: cmd("deliver what this host's handlers are owed, once", events, (m) => m.deliver),
      },
    },
    schedule: {
      description: "cron schedules: a watcher submits each due time's run to a queue, once across the fleet",
      examples: ['li schedule add nightly --cron "0 2 * * *" --queue builds -- make nightly', "li schedule ls --json"],
      commands: {
        add: cmd('add a schedule: li schedule add NAME --cron "EXPR" [--tz ZONE] [--overlap skip|queue] [--missed skip|latest] --queue Q -- CMD…', schedule, (m) => m.add),
        ls: cmd("list the schedules with their next due time and newest decision", schedule, (m) => m.ls),
        rm: cmd("remove a schedule (its runs stay)", schedule, (m) => m.rm),
        pause: cmd("stop a schedule firing until resumed", schedule, (m) => m.pause),
        resume: cmd("resume a paused schedule from its next due time", schedule, (m) => m.resume),
      },
    },
    queue: {
      description: "queues of scheduled runs (li agent --queue): limits per host or fleet, pause and resume",
      examples: ["li queue set gpu --parallel=2 --fleet", "li queue ls"],
      commands: {
        set: cmd("create or change a queue: --parallel N, --per-host or --fleet, --lease-attempts N", queue, (m) => m.set),
        ls: cmd("each queue: limit, running, queued, waiting, oldest wait", queue, (m) => m.ls),
        pause: cmd("stop leasing a queue's runs (running legs go on)", queue, (m) => m.pause),
        resume: cmd("lease a paused queue's runs again", queue, (m) => m.resume),
      },
    },
    reasons: cmd("the reason-code vocabulary", () => import("./commands/reasons.ts"), (m) => m.default),
    trust: cmd("let a project's .li/settings.yaml run its notify handler (li trust [PATH], --list, --revoke=PATH)", () => import("./commands/trust.ts"), (m) => m.default),
    state: {
      description: "create, repair and inspect ledger entities",
      examples: ["li state create play", "li state migrate --check"],
      commands: {
        create: cmd("create an invocation, play, schedule_run, show or team", () => import("./commands/state-create.ts"), (m) => m.default),
        "set-status": cmd("move an entity through the guarded write (audited repairs)", () => import("./commands/state-set-status.ts"), (m) => m.default),
        transitions: cmd("the status history of one entity", () => import("./commands/state-transitions.ts"), (m) => m.default),
        doctor: cmd("sweep running sessions whose current leg is stale and dead", () => import("./commands/state-doctor.ts"), (m) => m.default),
        prune: cmd("delete terminal sessions past retention", () => import("./commands/state-prune.ts"), (m) => m.default),
        migrate: cmd("create the ledger and apply its migrations now; --check only reports", () => import("./commands/state-migrate.ts"), (m) => m.default),
      },
    },
    completion: {
      description: "print a shell completion script generated from this command tree",
      examples: ["source <(li completion bash)", "li completion fish > ~/.config/fish/completions/li.fish"],
      commands: {
        bash: cmd("the bash completion script", completion, (m) => m.bash(TREE)),
        zsh: cmd("the zsh completion script", completion, (m) => m.zsh(TREE)),
        fish: cmd("the fish completion script", completion, (m) => m.fish(TREE)),
        ids: cmd("recent ids from the ledger, one a line, for the scripts (nothing when it is missing or slow)", completion, (m) => m.ids),
      },
    },
  },
};

/** Every command's words, walked from the tree (tests drive every command from this). */
export function commandPaths(group: Group = TREE, prefix: string[] = []): string[][] {
  return Object.entries(group.commands).flatMap(([name, node]) => (isGroup(node) ? commandPaths(node, [...prefix, name]) : [[...prefix, name]]));
}

/** Every group's words (the tree itself is `[]`), for tests and completion. */
export function groupPaths(group: Group = TREE, prefix: string[] = []): string[][] {
  return [prefix, ...Object.entries(group.commands).flatMap(([name, node]) => (isGroup(node) ? groupPaths(node, [...prefix, name]) : []))];
}
