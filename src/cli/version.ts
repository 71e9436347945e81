// li's version (package.json), and the commit and target baked in at build time (scripts/build.ts --define).
import pkg from "../../package.json" with { type: "json" };

// Replaced by `bun build --define`; unset when li runs from source (tests, `bun src/cli.ts`).
declare const LI_BUILD_COMMIT: string | undefined;
declare const LI_BUILD_TARGET: string | undefined;

export const VERSION: string = pkg.version;
export const COMMIT: string = typeof LI_BUILD_COMMIT === "string" ? LI_BUILD_COMMIT : "unknown";
export const TARGET: string = typeof LI_BUILD_TARGET === "string" ? LI_BUILD_TARGET : "source";

/** `li 0.1.0 (commit 1a2b3c4d5e6f, linux-x64)`, or one JSON object for scripts. */
export function versionText(json: boolean): string {
  return json ? JSON.stringify({ version: VERSION, commit: COMMIT, target: TARGET }) + "\n" : `li ${VERSION} (commit ${COMMIT}, ${TARGET})\n`;
}
