//! What `chassis plugin new` writes: the SDKs (embedded in the binary, so
//! a scaffold needs nothing but `python3` or `node`) and one template per
//! language. `{{name}}` is the plugin's name.

/// The Python SDK.
pub const PYTHON_SDK: &str = include_str!("../../../sdk/python/chassis_plugin.py");
/// The JavaScript SDK (compiled from TypeScript).
pub const JS_SDK: &str = include_str!("../../../sdk/typescript/chassis_plugin.js");
/// Its type declarations, for editors.
pub const JS_SDK_TYPES: &str = include_str!("../../../sdk/typescript/chassis_plugin.d.ts");

/// The manifest both templates share: an include file of the composition.
pub const MANIFEST: &str = r#"# The manifest of the process plugin `{{name}}`: include it from your
# composition (`include = ["{{dir}}/plugin.toml"]`). It is authoritative:
# `chassis check`, `snapshot` and `diff` read it without starting the
# plugin, and at start the plugin's own declaration and tools must equal it.
version = 1

[plugins.{{name}}]
version = "0.1.0"
command = [{{command}}]
# What the plugin's identity hashes: editing one is a change (a new
# generation restarts it; `chassis serve` reloads when one is saved).
files = [{{files}}]
provides = { {{capability}} = "1.0.0" }

[[plugins.{{name}}.tools]]
name = "{{tool}}"
description = "Echo a text back, with the plugin's greeting."
args = { type = "object", properties = { text = { type = "string" } }, required = ["text"], additionalProperties = false }
# Its policy (idempotent, permissions) is what the plugin registers; a
# `[policy.tools.{{tool}}]` table in your composition overrides it.
# Tools not declared here, policies and hooks are pinned in `chassis.lock`
# by `chassis tools FILE --update-lock`, so the pure commands see them.

[entries.{{name}}]
plugin = "{{name}}"
config.greeting = "hello"
"#;

/// The Python plugin.
pub const PYTHON_PLUGIN: &str = r#""""The chassis plugin `{{name}}`.

Run by chassis as `python3 plugin.py` (see plugin.toml); `chassis plugin
check {{dir}}/plugin.toml` checks it against the plugin protocol, and
`python3 {{dir}}/test_plugin.py` runs its tests.
"""

from chassis_plugin import ToolPolicy, plugin


@plugin(name="{{name}}", version="0.1.0", provides={"{{capability}}": "1.0.0"})
def setup(ctx):
    greeting = ctx.config.get("greeting", "hello")

    def {{tool}}(text: str) -> str:
        "Echo a text back, with the plugin's greeting."
        return f"{greeting}: {text}"

    ctx.tools.register({{tool}}, policy=ToolPolicy(idempotent=True))
    ctx.capabilities.provide("{{capability}}", {"greeting": greeting}, version="1.0.0")


if __name__ == "__main__":
    setup.run()
"#;

/// The Python plugin's test: it starts the plugin as chassis does and
/// speaks the protocol to it (standard library only).
pub const PYTHON_TEST: &str = r#""""Tests of the plugin `{{name}}`: `python3 test_plugin.py`."""

import json
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class PluginTest(unittest.TestCase):
    def setUp(self):
        self.proc = subprocess.Popen([sys.executable, "plugin.py"], cwd=HERE, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0

    def tearDown(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()

    def call(self, method, params):
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method,
                                          "params": params}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        self.assertEqual(reply["id"], self.next_id)
        return reply

    def test_echo(self):
        init = self.call("initialize", {"protocol_version": "1.0", "chassis_version": "test",
                                        "entry": "{{name}}"})
        self.assertEqual(init["result"]["plugin"]["name"], "{{name}}")
        setup = self.call("setup", {"entry": "{{name}}", "scope": "/", "config": {"greeting": "hi"},
                                    "requirements": {}})
        self.assertEqual([t["name"] for t in setup["result"]["tools"]], ["{{tool}}"])
        out = self.call("tools/call", {"name": "{{tool}}", "arguments": {"text": "ping"},
                                       "run_id": "r", "generation_id": "g"})
        self.assertEqual(out["result"]["content"], "hi: ping")


if __name__ == "__main__":
    unittest.main()
"#;

/// The JavaScript plugin.
pub const JS_PLUGIN: &str = r#"// The chassis plugin `{{name}}`.
//
// Run by chassis as `node plugin.js` (see plugin.toml); `chassis plugin check
// {{dir}}/plugin.toml` checks it against the plugin protocol, and
// `node {{dir}}/test_plugin.js` runs its tests. Types: chassis_plugin.d.ts.
const { plugin, s } = require("./chassis_plugin");

module.exports = plugin(
  { name: "{{name}}", version: "0.1.0", provides: { "{{capability}}": "1.0.0" } },
  (ctx) => {
    const greeting = ctx.config.greeting ?? "hello";
    ctx.tools.register(
      {
        name: "{{tool}}",
        description: "Echo a text back, with the plugin's greeting.",
        inputSchema: s.object({ text: s.string() }),
        policy: { idempotent: true },
      },
      ({ text }) => `${greeting}: ${text}`,
    );
    ctx.capabilities.provide("{{capability}}", { version: "1.0.0", value: { greeting } });
  },
);

if (require.main === module) module.exports.run();
"#;

/// The JavaScript plugin's test (`node:test`, Node 18+).
pub const JS_TEST: &str = r#"// Tests of the plugin `{{name}}`: `node test_plugin.js`.
const { test } = require("node:test");
const assert = require("node:assert");
const { spawn } = require("node:child_process");
const readline = require("node:readline");

test("echo", async () => {
  const proc = spawn(process.execPath, ["plugin.js"], { cwd: __dirname, stdio: ["pipe", "pipe", "inherit"] });
  const lines = readline.createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  let id = 0;
  const call = async (method, params) => {
    id += 1;
    proc.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    const reply = JSON.parse((await lines.next()).value);
    assert.strictEqual(reply.id, id);
    return reply;
  };
  try {
    const init = await call("initialize", { protocol_version: "1.0", chassis_version: "test", entry: "{{name}}" });
    assert.strictEqual(init.result.plugin.name, "{{name}}");
    const setup = await call("setup", { entry: "{{name}}", scope: "/", config: { greeting: "hi" }, requirements: {} });
    assert.deepStrictEqual(setup.result.tools.map((t) => t.name), ["{{tool}}"]);
    const out = await call("tools/call", { name: "{{tool}}", arguments: { text: "ping" }, run_id: "r", generation_id: "g" });
    assert.strictEqual(out.result.content, "hi: ping");
  } finally {
    proc.kill();
  }
});
"#;
