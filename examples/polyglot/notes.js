// Tools over the `database` capability, in JavaScript (Node >= 18, no
// dependencies): `remember` and `recall` call the provider's methods
// through chassis, which checks this plugin's permissions.
const { plugin, s } = require("./chassis_plugin");

plugin(
  { name: "notes", version: "1.0.0", requires: { database: ">=1,<2" } },
  (ctx) => {
    const db = ctx.require("database");
    // stdout belongs to the protocol; the SDK sends console.log to stderr.
    console.log(`notes: mounted on ${db.provider}'s ${db.key} (${db.value.engine})`);
    ctx.tools.register(
      {
        name: "remember",
        description: "Remember a note.",
        inputSchema: s.object({ text: s.string() }),
        policy: { permissions: ["notes.write"] },
      },
      async ({ text }) => {
        const count = await db.invoke("insert", { text });
        return `remembered; ${count} note(s) in ${db.value.engine}`;
      },
    );
    ctx.tools.register(
      {
        name: "recall",
        description: "Recall the notes that contain a word.",
        inputSchema: s.object({ word: s.string() }),
        policy: { idempotent: true, permissions: ["notes.read"] },
      },
      async ({ word }) => {
        const found = await db.invoke("search", { word });
        return found.length ? found.join("\n") : "nothing found";
      },
    );
  },
).run();
