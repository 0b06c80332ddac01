// The clients' own validators, run on tool lists for Fathom's tests (tests/rules/test_oracles.py).
//
// stdin: {"lists": {"<name>": <tools/list result: {"tools": [...]}>}}
// stdout: {"<name>": {"sdk": {"ok": bool, "paths": ["tools.0.inputSchema.properties", ...]},
//                     "ajv2020": [{"index": i, "compiled": bool, "message": "..."}]}}
//
// "sdk": the MCP TypeScript SDK's ListToolsResultSchema (what Claude Code, Claude Desktop and Cursor validate
// tools/list with). "ajv2020": Ajv's JSON Schema 2020-12 validator compiling each tool's outputSchema, as the
// 2020-12-only validators of Claude's clients do ("The default validator supports JSON Schema 2020-12 only").
import { ListToolsResultSchema } from "@modelcontextprotocol/sdk/types.js";
import Ajv2020Module from "ajv/dist/2020.js";

const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on("data", (chunk) => chunks.push(chunk));
    process.stdin.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    process.stdin.on("error", reject);
  });
}

function sdk(result) {
  const parsed = ListToolsResultSchema.safeParse(result);
  if (parsed.success) return { ok: true, paths: [] };
  return { ok: false, paths: parsed.error.issues.map((issue) => issue.path.join(".")) };
}

function ajv2020(result) {
  const out = [];
  (Array.isArray(result.tools) ? result.tools : []).forEach((tool, index) => {
    if (tool === null || typeof tool !== "object" || !("outputSchema" in tool)) return;
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    try {
      ajv.compile(tool.outputSchema);
      out.push({ index, compiled: true, message: "" });
    } catch (error) {
      out.push({ index, compiled: false, message: String(error && error.message ? error.message : error) });
    }
  });
  return out;
}

const input = JSON.parse(await readStdin());
const answer = {};
for (const [name, result] of Object.entries(input.lists)) {
  answer[name] = { sdk: sdk(result), ajv2020: ajv2020(result) };
}
process.stdout.write(JSON.stringify(answer));
