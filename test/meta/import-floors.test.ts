// The floors of the house, enforced (docs/architecture.md "Floors"): each folder under src/ stands on a
// floor, and a module imports only from floors below its own. A maintainer who changes a lower floor then
// knows that nothing below it breaks, and what above it may. Siblings on one floor import nothing of
// each other; no file imports itself back through others. The imports are read from the source (type-only
// and lazy ones too); the floors are declared here, once, top first.
//
// A folder is a folder directly under src/ (its subfolders are parts of it: ledger/sqlite is the ledger's);
// src/cli.ts, the entry, is a floor of its own.

import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { relative } from "node:path";
import { localImports, sourceFiles, SRC } from "../helpers/imports.ts";

/** Top first. A new folder goes on the floor its imports allow: below every folder that imports it, above every folder it imports. */
const FLOORS: readonly (readonly string[])[] = [
  ["cli.ts"],
  ["cli"],
  ["watch"],
  ["sweeps", "logs", "spool", "schedule"],
  ["legs"],
  ["settings"],
  ["notify", "wait"],
  ["ledger", "contracts", "host"],
  ["lifecycle", "util"],
];

const HERE = "test/meta/import-floors.test.ts";

/** One import, as paths relative to src/. */
interface Import {
  from: string;
  to: string;
}

/** The folder directly under src/ that holds `file`, or the file itself when it sits in src/. */
function unitOf(file: string): string {
  const slash = file.indexOf("/");
  return slash === -1 ? file : file.slice(0, slash);
}

const shown = (unit: string) => (unit.endsWith(".ts") ? `src/${unit}` : `src/${unit}/`);
const floorName = (floors: readonly (readonly string[])[], index: number) => `[${floors[index]!.join(", ")}]`;

/**
 * What breaks the house, one line each: a folder on no floor (with where it may go and how to say so), a
 * floor naming a folder that is gone, an import up a floor or across one, a circle of files or folders.
 * `units`: the folders (and src/ files) that exist.
 */
function houseProblems(imports: readonly Import[], units: readonly string[], floors: readonly (readonly string[])[]): string[] {
  const floorOf = new Map<string, number>();
  floors.forEach((floor, index) => floor.forEach((unit) => floorOf.set(unit, index)));
  const problems: string[] = [];
  const across = imports.filter((i) => unitOf(i.from) !== unitOf(i.to));

  for (const unit of units) {
    if (!floorOf.has(unit)) problems.push(placement(unit, across, floorOf, floors));
  }
  for (const unit of floorOf.keys()) {
    if (!units.includes(unit)) problems.push(`FLOORS in ${HERE} names ${shown(unit)}, which does not exist: take "${unit}" out of it`);
  }
  for (const { from, to } of across) {
    const [a, b] = [floorOf.get(unitOf(from)), floorOf.get(unitOf(to))];
    if (a === undefined || b === undefined || a < b) continue;
    if (a === b) {
      problems.push(`src/${from} imports src/${to}: ${unitOf(from)} and ${unitOf(to)} share the floor ${floorName(floors, a)}, and siblings import nothing of each other; move what both need down a floor, or give one a floor of its own above the other in FLOORS (${HERE})`);
    } else {
      problems.push(`src/${from} imports src/${to}, up from the floor ${floorName(floors, a)} to ${floorName(floors, b)}: move what it needs down to ${floorName(floors, a)} or below, or have the floor above hand it down`);
    }
  }
  for (const cycle of circles(imports.map((i) => [i.from, i.to] as const))) {
    problems.push(`a circle of files: ${cycle.map((file) => `src/${file}`).join(" → ")}`);
  }
  for (const cycle of circles(across.map((i) => [unitOf(i.from), unitOf(i.to)] as const))) {
    const steps = cycle.slice(1).map((unit, k) => across.find((i) => unitOf(i.from) === cycle[k] && unitOf(i.to) === unit)!);
    problems.push(`a circle of folders: ${cycle.map(shown).join(" → ")} (${steps.map((i) => `src/${i.from} imports src/${i.to}`).join("; ")})`);
  }
  return problems;
}

/** Where an unplaced folder may stand, from what it imports and what imports it, as one line saying how to put it there. */
function placement(unit: string, across: readonly Import[], floorOf: ReadonlyMap<string, number>, floors: readonly (readonly string[])[]): string {
  const placed = (u: string) => floorOf.get(u) !== undefined;
  const importers = across.filter((i) => unitOf(i.to) === unit && placed(unitOf(i.from)));
  const imported = across.filter((i) => unitOf(i.from) === unit && placed(unitOf(i.to)));
  const lowestImporter = Math.max(-1, ...importers.map((i) => floorOf.get(unitOf(i.from))!));
  const highestImported = Math.min(floors.length, ...imported.map((i) => floorOf.get(unitOf(i.to))!));
  const names = (list: readonly Import[], side: "from" | "to") => [...new Set(list.map((i) => unitOf(i[side])))].join(", ");
  const why = [importers.length > 0 ? `imported by ${names(importers, "from")}` : "", imported.length > 0 ? `imports ${names(imported, "to")}` : ""].filter(Boolean).join("; ");
  const head = `${shown(unit)} is on no floor: in ${HERE}, add "${unit}" to FLOORS`;
  if (lowestImporter >= highestImported) {
    const up = importers.find((i) => floorOf.get(unitOf(i.from)) === lowestImporter)!;
    const down = imported.find((i) => floorOf.get(unitOf(i.to)) === highestImported)!;
    return `${shown(unit)} is on no floor and fits none: src/${up.from} on ${floorName(floors, lowestImporter)} imports src/${up.to}, yet src/${down.from} imports src/${down.to} on ${floorName(floors, highestImported)}, which is not below it; split the folder, then add each part to FLOORS in ${HERE}`;
  }
  // Lowest first: a folder placed as low as its imports allow leaves the most room above it.
  const lowest = highestImported - 1;
  // A folder never shares the entry's floor (src/cli.ts): the highest a folder may go is the first floor of folders.
  const highest = Math.max(lowestImporter + 1, floors.findIndex((floor) => floor.some((u) => !u.endsWith(".ts"))));
  const on = lowest < highest ? "" : `on ${floorName(floors, lowest)}${lowest > highest ? ` or any floor above it up to ${floorName(floors, highest)}` : ""}, or `;
  const own = highestImported < floors.length ? `just above ${floorName(floors, highestImported)}` : "at the bottom";
  return `${head}, ${on}as a floor of its own ${own}${why ? ` (${why})` : ""}; and draw it in docs/architecture.md "Floors"`;
}

/** Each circle in the directed graph `edges`, as one path that starts and ends at the same node (a node's own import included). */
function circles(edges: readonly (readonly [string, string])[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const [a, b] of edges) (next.get(a) ?? next.set(a, new Set()).get(a)!).add(b);
  // Tarjan's strongly connected components; each one with a cycle is reported once, by a shortest way round.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component = new Set<string>();
    for (let member = stack.pop()!; ; member = stack.pop()!) {
      onStack.delete(member);
      component.add(member);
      if (member === node) break;
    }
    if (component.size > 1 || next.get(node)?.has(node)) found.push(wayRound(node, component, next));
  };
  for (const node of [...next.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

/** The shortest path from `start` back to itself inside `component` (breadth first). */
function wayRound(start: string, component: ReadonlySet<string>, next: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const to of [...(next.get(node) ?? [])].sort()) {
      if (!component.has(to)) continue;
      if (to === start) {
        const between: string[] = [];
        for (let at = node; at !== start; at = cameFrom.get(at)!) between.unshift(at);
        return [start, ...between, start];
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start, start];
}

describe("the floors of the house", () => {
  const floors = [["top"], ["middle", "side"], ["bottom"]];
  const units = ["top", "middle", "side", "bottom"];

  test("an import down a floor is fine; up one, or across to a sibling, is named with the fix", () => {
    expect(houseProblems([{ from: "top/a.ts", to: "middle/b.ts" }, { from: "middle/b.ts", to: "bottom/c.ts" }], units, floors)).toEqual([]);
    expect(houseProblems([{ from: "bottom/c.ts", to: "middle/b.ts" }], units, floors)).toEqual([
      "src/bottom/c.ts imports src/middle/b.ts, up from the floor [bottom] to [middle, side]: move what it needs down to [bottom] or below, or have the floor above hand it down",
    ]);
    expect(houseProblems([{ from: "middle/b.ts", to: "side/d.ts" }], units, floors)).toEqual([
      `src/middle/b.ts imports src/side/d.ts: middle and side share the floor [middle, side], and siblings import nothing of each other; move what both need down a floor, or give one a floor of its own above the other in FLOORS (${HERE})`,
    ]);
  });

  test("a circle of files is named by its way round, a circle of folders by its imports", () => {
    const files = [
      { from: "middle/a.ts", to: "middle/b.ts" },
      { from: "middle/b.ts", to: "middle/c.ts" },
      { from: "middle/c.ts", to: "middle/a.ts" },
    ];
    expect(houseProblems(files, units, floors)).toEqual(["a circle of files: src/middle/a.ts → src/middle/b.ts → src/middle/c.ts → src/middle/a.ts"]);
    const folders = [
      { from: "new/a.ts", to: "other/b.ts" },
      { from: "other/c.ts", to: "new/d.ts" },
    ];
    const problems = houseProblems(folders, [...units, "new", "other"], floors);
    expect(problems).toContain("a circle of folders: src/new/ → src/other/ → src/new/ (src/new/a.ts imports src/other/b.ts; src/other/c.ts imports src/new/d.ts)");
  });

  test("a folder on no floor is told in one line where it may go and how to declare it", () => {
    const imports = [
      { from: "top/a.ts", to: "queues/q.ts" },
      { from: "queues/q.ts", to: "bottom/c.ts" },
    ];
    expect(houseProblems(imports, [...units, "queues"], floors)).toEqual([
      `src/queues/ is on no floor: in ${HERE}, add "queues" to FLOORS, on [middle, side], or as a floor of its own just above [bottom] (imported by top; imports bottom); and draw it in docs/architecture.md "Floors"`,
    ]);
    const tight = [
      { from: "middle/a.ts", to: "queues/q.ts" },
      { from: "queues/q.ts", to: "bottom/c.ts" },
    ];
    expect(houseProblems(tight, [...units, "queues"], floors)).toEqual([
      `src/queues/ is on no floor: in ${HERE}, add "queues" to FLOORS, as a floor of its own just above [bottom] (imported by middle; imports bottom); and draw it in docs/architecture.md "Floors"`,
    ]);
    // Nothing imports it yet: any floor of folders above what it imports, never the entry's.
    expect(houseProblems([{ from: "queues/q.ts", to: "bottom/c.ts" }], ["main.ts", ...units, "queues"], [["main.ts"], ...floors])).toEqual([
      `src/queues/ is on no floor: in ${HERE}, add "queues" to FLOORS, on [middle, side] or any floor above it up to [top], or as a floor of its own just above [bottom] (imports bottom); and draw it in docs/architecture.md "Floors"`,
    ]);
    const none = [
      { from: "bottom/c.ts", to: "queues/q.ts" },
      { from: "queues/q.ts", to: "top/a.ts" },
    ];
    expect(houseProblems(none, [...units, "queues"], floors)).toEqual([
      `src/queues/ is on no floor and fits none: src/bottom/c.ts on [bottom] imports src/queues/q.ts, yet src/queues/q.ts imports src/top/a.ts on [top], which is not below it; split the folder, then add each part to FLOORS in ${HERE}`,
    ]);
    expect(houseProblems([], units.slice(1), floors)).toEqual([`FLOORS in ${HERE} names src/top/, which does not exist: take "top" out of it`]);
  });

  test("src/ keeps them: every import runs down a floor, and nothing imports itself back", () => {
    const imports = sourceFiles().flatMap((file) => {
      const from = relative(SRC, file);
      return localImports(file, readFileSync(file, "utf8")).map((to) => ({ from, to }));
    });
    const units = readdirSync(SRC, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() || entry.name.endsWith(".ts"))
      .map((entry) => entry.name);
    expect(houseProblems(imports, units, FLOORS)).toEqual([]);
  });
});
