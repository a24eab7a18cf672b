"""A `database` capability backed by SQLite (standard library only).

Its methods are what consumers call through chassis: `insert` needs the
caller to declare `database.write`, `search` needs `database.read`.
"""

import sqlite3
import threading

from chassis_plugin import Method, plugin


@plugin(name="notes-db", version="1.0.0", provides={"database": "1.0.0"})
def notes_db(ctx):
    path = ctx.config.get("path", ":memory:")
    db = sqlite3.connect(path, check_same_thread=False)
    lock = threading.Lock()
    db.execute("create table if not exists notes (text text not null)")
    ctx.cleanup("close the database", db.close)

    def insert(text: str) -> int:
        "Store a note; answers how many notes there are."
        with lock:
            db.execute("insert into notes values (?)", (text,))
            db.commit()
            return db.execute("select count(*) from notes").fetchone()[0]

    def search(word: str) -> list[str]:
        "The notes that contain a word."
        with lock:
            rows = db.execute("select text from notes where text like ? order by rowid", (f"%{word}%",))
            return [r[0] for r in rows]

    ctx.capabilities.provide(
        "database",
        {"engine": "sqlite"},
        version="1.0.0",
        methods=[
            Method(insert, permissions=["database.write"]),
            Method(search, permissions=["database.read"]),
        ],
    )


if __name__ == "__main__":
    notes_db.run()
