// A second real process removing a session the way a prune does, in one transaction (its branch too,
// unless told to keep it). Usage: remove-session.ts LI_HOME SESSION_ID keep|drop
import { ledgerRows, type SqlParam } from "../../helpers/ledger-rows.ts";

const [liHome, id, keep] = process.argv.slice(2) as [string, string, string];
const statements: [string, ...SqlParam[]][] = ["terminal_callbacks", "messages", "legs"].map((table) => [`DELETE FROM ${table} WHERE session_id = ?`, id]);
if (keep !== "keep") statements.push(["DELETE FROM branches WHERE session_id = ?", id]);
statements.push(["DELETE FROM status_transitions WHERE entity_type = 'session' AND entity_id = ?", id], ["DELETE FROM sessions WHERE id = ?", id]);
const rows = ledgerRows(liHome);
await rows.runAll(statements);
await rows.close();
