#!/usr/bin/env python3
"""A scripted MCP server for chassis's integration tests (stdlib only).

Speaks newline-delimited JSON-RPC 2.0 on stdio, the `initialize` handshake
era (protocolVersion "2025-06-18"), with tools that misbehave on purpose so a
test can drive a client through crashes, hangs, noise and tool-list changes.

Environment:
  SCRIPTED_LOG   file to append one JSON line per received message to
                 (flushed per line); unparseable lines are logged as
                 {"unparsed": "<line>"}.
  SCRIPTED_MODE  "garbage_start": print a non-JSON line to stdout first;
                 "exit_on_start": exit with status 3 before reading anything;
                 "upgrade_on_crash": `crash` creates SCRIPTED_STATE first
                 (the restarted server offers `extra`).
  SCRIPTED_STATE a file: `flip` creates it, and a server started while it
                 exists offers `extra` from the start (an upgraded server,
                 as seen by a restart or a second process).
  SCRIPTED_ECHO_ENV the name of a variable whose value the server echoes
                 in its `serverInfo.name`, in the `echo` tool's description
                 and as the default of its `text` argument (a server that
                 leaks the secret it was started with).

Tools (each with an inputSchema):
  echo {text}  -> text content equal to `text`
  crash        -> the process exits with status 1 mid-call, no reply
  hang         -> never replies (stdin is still read and logged, so a
                  `notifications/cancelled` shows up in SCRIPTED_LOG)
  env          -> text content = JSON object of the server's os.environ
  noisy        -> 200 lines on stderr, then "ok"
  garbage      -> a `this is not json` line on stdout, then a valid reply
  flip         -> adds tool `extra`, sends
                  `notifications/tools/list_changed`, then replies "flipped"
                  (in that order: a client has the notification before the
                  reply)
  extra        -> (only after flip) "extra"
  big {bytes}  -> text content of `bytes` characters (a runaway reply)

Also: `ping` -> {}, notifications are logged and ignored, any other request
-> JSON-RPC error -32601. SCRIPTED_PAGE_SIZE=N pages `tools/list` (N tools
per page, `nextCursor` until the last).
"""

import json
import os
import sys

PROTOCOL_VERSION = "2025-06-18"
SERVER_INFO = {"name": "scripted", "version": "1.0.0"}

NO_ARGS = {"type": "object", "properties": {}, "additionalProperties": False}

TOOLS = [
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "what to echo"}},
            "required": ["text"],
            "additionalProperties": False,
        },
    },
    {"name": "crash", "description": "Exit the server (status 1) without replying.", "inputSchema": NO_ARGS},
    {"name": "hang", "description": "Never reply.", "inputSchema": NO_ARGS},
    {"name": "env", "description": "The server's environment, as JSON.", "inputSchema": NO_ARGS},
    {"name": "noisy", "description": "Write 200 lines to stderr, then reply ok.", "inputSchema": NO_ARGS},
    {"name": "garbage", "description": "Write a non-JSON line to stdout, then reply.", "inputSchema": NO_ARGS},
    {"name": "flip", "description": "Add the tool `extra`, notify, then reply.", "inputSchema": NO_ARGS},
    {
        "name": "big",
        "description": "Reply with `bytes` characters of text.",
        "inputSchema": {
            "type": "object",
            "properties": {"bytes": {"type": "integer"}},
            "required": ["bytes"],
        },
    },
]

EXTRA_TOOL = {"name": "extra", "description": "Appears after flip.", "inputSchema": NO_ARGS}

_log_file = None


def log_message(entry):
    if _log_file is None:
        return
    _log_file.write(json.dumps(entry, separators=(",", ":")) + "\n")
    _log_file.flush()


def write_line(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def send(message):
    write_line(json.dumps(message, separators=(",", ":")))


def reply(msg_id, result):
    send({"jsonrpc": "2.0", "id": msg_id, "result": result})


def error(msg_id, code, message):
    send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


def text_result(text):
    return {"content": [{"type": "text", "text": text}], "isError": False}


def call_tool(msg_id, params, tools):
    name = params.get("name")
    args = params.get("arguments") or {}
    if name not in {t["name"] for t in tools}:
        error(msg_id, -32602, f"unknown tool: {name}")
        return
    if name == "echo":
        text = args.get("text")
        if not isinstance(text, str):
            error(msg_id, -32602, "echo: `text` must be a string")
            return
        reply(msg_id, text_result(text))
    elif name == "crash":
        state = os.environ.get("SCRIPTED_STATE")
        if state and os.environ.get("SCRIPTED_MODE") == "upgrade_on_crash":
            with open(state, "w", encoding="utf-8") as f:
                f.write("upgraded\n")
        sys.stderr.write("scripted: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(1)
    elif name == "hang":
        pass  # never reply; the main loop keeps reading stdin
    elif name == "env":
        reply(msg_id, text_result(json.dumps(dict(os.environ), sort_keys=True)))
    elif name == "noisy":
        for i in range(200):
            sys.stderr.write(f"scripted: noisy line {i}\n")
        sys.stderr.flush()
        reply(msg_id, text_result("ok"))
    elif name == "big":
        reply(msg_id, text_result("x" * int(args.get("bytes", 0))))
    elif name == "garbage":
        write_line("this is not json")
        reply(msg_id, text_result("after garbage"))
    elif name == "flip":
        if EXTRA_TOOL not in tools:
            tools.append(EXTRA_TOOL)
        state = os.environ.get("SCRIPTED_STATE")
        if state:
            with open(state, "w", encoding="utf-8") as f:
                f.write("flipped\n")
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        reply(msg_id, text_result("flipped"))
    elif name == "extra":
        reply(msg_id, text_result("extra"))


def handle(message, tools):
    if not isinstance(message, dict):
        error(None, -32600, "invalid request")
        return
    method = message.get("method")
    msg_id = message.get("id")
    is_request = "id" in message and method is not None
    if method is None:
        return  # a response to something we never sent: ignore
    if not is_request:
        return  # notifications (initialized, cancelled, ...) are only logged
    params = message.get("params") or {}
    if method == "initialize":
        reply(
            msg_id,
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": SERVER_INFO,
            },
        )
    elif method == "ping":
        reply(msg_id, {})
    elif method == "tools/list":
        # SCRIPTED_PAGE_SIZE=N lists N tools per page, with `nextCursor`.
        size = int(os.environ.get("SCRIPTED_PAGE_SIZE", "0") or 0)
        if size <= 0:
            reply(msg_id, {"tools": list(tools)})
        else:
            cursor = (message.get("params") or {}).get("cursor")
            start = int(cursor) if cursor else 0
            page = {"tools": list(tools[start:start + size])}
            if start + size < len(tools):
                page["nextCursor"] = str(start + size)
            reply(msg_id, page)
    elif method == "tools/call":
        call_tool(msg_id, params, tools)
    else:
        error(msg_id, -32601, f"method not found: {method}")


def main():
    global _log_file
    mode = os.environ.get("SCRIPTED_MODE", "")
    if mode == "exit_on_start":
        sys.exit(3)
    log_path = os.environ.get("SCRIPTED_LOG")
    if log_path:
        _log_file = open(log_path, "a", encoding="utf-8")
    if mode == "garbage_start":
        write_line("this is not json")
    tools = [dict(t) for t in TOOLS]
    echoed = os.environ.get(os.environ.get("SCRIPTED_ECHO_ENV", ""), "")
    if echoed:
        SERVER_INFO["name"] = f"scripted {echoed}"
        echo = json.loads(json.dumps(tools[0]))
        echo["description"] += f" Token: {echoed}"
        echo["inputSchema"]["properties"]["text"]["default"] = echoed
        tools[0] = echo
    state = os.environ.get("SCRIPTED_STATE")
    if state and os.path.exists(state):
        tools.append(dict(EXTRA_TOOL))
    for raw in sys.stdin.buffer:
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except ValueError:
            log_message({"unparsed": line})
            error(None, -32700, "parse error")
            continue
        log_message(message)
        handle(message, tools)


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        os._exit(0)
