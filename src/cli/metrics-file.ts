// `li watch --metrics-file PATH`: the /metrics text written atomically (a temp file renamed over PATH,
// so node_exporter's textfile collector never reads half a file) at start, every interval, and at stop.
import fs from "node:fs";
import path from "node:path";
import { UsageError } from "../util/errors.ts";
import { writeFileAtomic } from "../util/atomic-file.ts";
import { metricsText, type MetricsSource } from "./metrics.ts";

export const METRICS_FILE_INTERVAL_MS = 15_000;

/** The path as given, refused (exit 2) when its directory is missing or it names a directory. */
export function validMetricsFile(flag: string): string {
  const file = path.resolve(flag);
  const dir = path.dirname(file);
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new UsageError(`--metrics-file: ${dir} is not a directory`);
  if (fs.existsSync(file) && fs.statSync(file).isDirectory()) throw new UsageError(`--metrics-file: ${file} is a directory`);
  return file;
}

export interface MetricsFileWriter {
  /** Writes once more and stops. */
  stop(): Promise<void>;
}

export function startMetricsFile(file: string, source: MetricsSource, onError: (message: string) => void, intervalMs = METRICS_FILE_INTERVAL_MS): MetricsFileWriter {
  let writing: Promise<void> = Promise.resolve();
  const write = () => {
    writing = writing.then(async () => {
      try {
        writeFileAtomic(file, await metricsText(source), 0o644, { fsync: false });
      } catch (error) {
        // The ledger down or the disk full: the file keeps its last whole text, and the next write tries again.
        onError(`--metrics-file ${file}: ${error instanceof Error ? error.message : String(error)}`);
      }
    });
    return writing;
  };
  void write();
  const timer = setInterval(() => void write(), intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await write();
    },
  };
}
