// The JavaScript side of the canonical-JSON differential (issue 7 §5; FORMATS.md §3.2): each
// input line is the hex of one UTF-8 JSON text; each output line is `ok <hex of the canonical
// text>`, `nonfinite` (it parsed, but holds a number JSON.stringify would print as null) or
// `rejected` (JSON.parse threw). The canonical text is JSON.stringify of every scalar with object
// keys sorted by the default sort (UTF-16 code units), built without relying on the engine's
// property order (which puts integer-like keys first).
import { createInterface } from "node:readline";

class NonFinite extends Error {}

function canonical(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  if (typeof v === "object") {
    const keys = Object.keys(v).sort();
    return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
  }
  if (typeof v === "number" && !Number.isFinite(v)) throw new NonFinite();
  return JSON.stringify(v);
}

const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  const text = Buffer.from(line.trim(), "hex").toString("utf8");
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    process.stdout.write("rejected\n");
    continue;
  }
  try {
    const out = canonical(value);
    process.stdout.write("ok " + Buffer.from(out, "utf8").toString("hex") + "\n");
  } catch (e) {
    if (!(e instanceof NonFinite)) throw e;
    process.stdout.write("nonfinite\n");
  }
}
