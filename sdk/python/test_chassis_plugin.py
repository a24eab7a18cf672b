"""Unit tests of the Python SDK: `python3 -m unittest sdk/python/test_chassis_plugin.py`
(run by `cargo test` too)."""

import dataclasses
import json
import math
import os
import subprocess
import sys
import typing
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import chassis_plugin as cp  # noqa: E402


class Point(typing.TypedDict):
    x: int
    y: int


@dataclasses.dataclass
class Filter:
    word: str
    limit: int = 10


def schema(fn):
    return cp._Tool(fn, None, "d", None).schema


HERE = os.path.dirname(os.path.abspath(__file__))

# A plugin that registers nothing.
EMPTY_PLUGIN = """
import chassis_plugin as cp
@cp.plugin(name="t", version="1.0.0")
def t(ctx):
    pass
t.run()
"""


def plugin_process(program, text=True):
    """`program` on a fresh interpreter (`python3 -S`, no site) beside the
    SDK, its three streams piped; killed after 30 s, so a plugin that stops
    answering fails the test instead of hanging it."""
    import threading
    proc = subprocess.Popen([sys.executable, "-S", "-c", program], cwd=HERE, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=text,
                            env={"PYTHONPATH": HERE, "PATH": os.environ.get("PATH", "")})
    watchdog = threading.Timer(30, proc.kill)
    watchdog.daemon = True
    watchdog.start()
    return proc


class Schemas(unittest.TestCase):
    def test_scalars_and_defaults(self):
        def f(a: str, b: int, c: float, d: bool = False, e: None = None):
            pass
        s = schema(f)
        self.assertEqual(s["properties"], {"a": {"type": "string"}, "b": {"type": "integer"},
                                           "c": {"type": "number"}, "d": {"type": "boolean"},
                                           "e": {"type": "null"}})
        self.assertEqual(s["required"], ["a", "b", "c"])
        self.assertFalse(s["additionalProperties"])

    def test_containers_optional_literal(self):
        def f(a: typing.List[str], b: typing.Dict[str, int], c: typing.Optional[str] = None,
              d: typing.Literal["x", "y"] = "x"):
            pass
        p = schema(f)["properties"]
        self.assertEqual(p["a"], {"type": "array", "items": {"type": "string"}})
        self.assertEqual(p["b"], {"type": "object", "additionalProperties": {"type": "integer"}})
        self.assertEqual(p["c"], {"anyOf": [{"type": "string"}, {"type": "null"}]})
        self.assertEqual(p["d"], {"enum": ["x", "y"]})

    def test_typeddict_and_dataclass(self):
        def f(p: Point, q: Filter):
            pass
        props = schema(f)["properties"]
        self.assertEqual(props["p"]["required"], ["x", "y"])
        self.assertEqual(props["q"]["required"], ["word"])
        self.assertEqual(props["q"]["properties"]["limit"], {"type": "integer"})

    def test_a_dataclass_argument_arrives_as_one(self):
        seen = []

        def f(q: Filter):
            seen.append(q)
        tool = cp._Tool(f, None, "d", None)
        f(**tool.bind({"q": {"word": "milk"}}))
        self.assertEqual(seen, [Filter("milk", 10)])

    def test_unsupported_annotations_name_the_parameter(self):
        def f(a: set):
            pass
        with self.assertRaises(cp.PluginError) as e:
            schema(f)
        self.assertIn("parameter `a`", str(e.exception))
        def g(a):
            pass
        with self.assertRaises(cp.PluginError) as e:
            schema(g)
        self.assertIn("no type hint", str(e.exception))
        def h(*args: str):
            pass
        with self.assertRaises(cp.PluginError):
            schema(h)

    def test_bind_refuses_unknown_and_missing_arguments(self):
        def f(a: str, b: int = 1):
            pass
        tool = cp._Tool(f, None, "d", None)
        self.assertEqual(tool.bind({"a": "x"}), {"a": "x"})
        with self.assertRaises(TypeError):
            tool.bind({"b": 2})
        with self.assertRaises(TypeError):
            tool.bind({"a": "x", "c": 3})

    def test_methods_skip_self_and_async_is_detected(self):
        class K:
            def m(self, a: str) -> str:
                "M."
                return a
            async def n(self, a: str) -> str:
                "N."
                return a
        k = K()
        self.assertEqual(cp._Tool(k.m, None, None, None).schema["required"], ["a"])
        self.assertTrue(cp._Tool(k.n, None, None, None).is_async)
        self.assertEqual(cp._Tool(k.m, None, None, None).description, "M.")

    def test_a_tool_needs_a_description(self):
        def f(a: str):
            pass
        with self.assertRaises(cp.PluginError):
            cp._Tool(f, None, None, None)


class Agents(unittest.TestCase):
    def test_an_agent_crosses_with_only_the_fields_given(self):
        ctx = cp.PluginContext({"entry": "e"})
        ctx.agents.register("researcher", "You research.", tools=["search"], max_steps=3,
                            budget={"model_calls": 3})
        self.assertEqual(ctx._agents, [{"name": "researcher", "prompt": "You research.",
                                        "tools": ["search"], "max_steps": 3,
                                        "budget": {"model_calls": 3}}])
        with self.assertRaises(cp.PluginError):
            ctx.agents.register("researcher", "again")
        with self.assertRaises(cp.PluginError):
            ctx.agents.register("other", "p", tools="search")
        ctx._sealed = True
        with self.assertRaises(cp.PluginError):
            ctx.agents.register("late", "too late")


class Json(unittest.TestCase):
    """The SDK's codec calls CPython's accelerator itself; it must answer
    what json.loads / json.dumps answer."""

    VALUES = [None, True, False, 0, -7, 2 ** 70, 1.5, -0.0, 1e300, "", "plain", "caf\u00e9 \u2603 \U0001f600",
              "quote \" backslash \\ control \x01\n\t", [], {}, [1, [2, [3, {"a": None}]]],
              {"z": 1, "a": [True, {"nested": "\u00e9"}], "": 0}]

    def test_dumps_and_loads_agree_with_json(self):
        for value in self.VALUES:
            self.assertEqual(cp._dumps(value), json.dumps(value))
            self.assertEqual(cp._dumps(value, compact=True), json.dumps(value, separators=(",", ":")))
            text = json.dumps(value)
            self.assertEqual(cp._loads(text), json.loads(text))
            self.assertEqual(cp._loads((" \t" + text + " \r\n").encode("utf-8")), value)
        self.assertTrue(math.isnan(cp._loads("NaN")))
        self.assertEqual(cp._loads('{"a": Infinity}'), {"a": float("inf")})
        self.assertEqual(cp._dumps({"when": object}, compact=True, default=str),
                         json.dumps({"when": object}, separators=(",", ":"), default=str))

    def test_what_is_not_json_gets_jsons_own_errors(self):
        for text in ['{"a":', "{} x", "", "\ufeff{}", '"\x01"', "[1,]", b"\xff"]:
            with self.assertRaises(ValueError) as ours:
                cp._loads(text)
            with self.assertRaises(ValueError) as theirs:
                json.loads(text)
            self.assertEqual(str(ours.exception), str(theirs.exception))
        with self.assertRaises(TypeError) as ours:
            cp._dumps({"x": object()})
        self.assertIn("Object of type object is not JSON serializable", str(ours.exception))
        loop = []
        loop.append(loop)
        with self.assertRaises(ValueError):
            cp._dumps(loop)
        self.assertEqual(cp._dumps([loop[:0], loop[:0]]), "[[], []]")  # nothing left over from the failure


class Startup(unittest.TestCase):
    """Importing the SDK is part of every mount: on a fresh interpreter (no
    `site`) it loads none of the modules that cost milliseconds, and schemas
    of builtin hints come out the same without `typing` as with it."""

    def test_import_loads_nothing_heavy_and_schemas_need_no_typing(self):
        union = "int | None" if sys.version_info >= (3, 10) else "int"
        program = f"""
import sys
import chassis_plugin as cp
heavy = sorted(m for m in ("re", "json", "typing", "threading", "queue", "contextvars", "inspect",
                           "dataclasses", "functools", "collections", "asyncio") if m in sys.modules)
def f(a: str, b: list[str], c: dict[str, float], d: {union} = None, e: list = None) -> str:
    pass
schema = cp._Tool(f, None, "d", None).schema
bound = cp._Tool(f, None, "d", None).bind({{"a": "x", "b": ["y"], "c": {{}}}})
after = sorted(m for m in ("re", "json", "typing") if m in sys.modules)
sys.stdout.write(cp._dumps({{"heavy": heavy, "schema": schema, "bound": bound, "after": after}}))
"""
        out = subprocess.run([sys.executable, "-S", "-c", program], cwd=HERE, capture_output=True,
                             text=True, env={"PYTHONPATH": HERE, "PATH": os.environ.get("PATH", "")})
        self.assertEqual(out.returncode, 0, out.stderr)
        seen = json.loads(out.stdout)
        self.assertEqual(seen["heavy"], [])
        self.assertEqual(seen["after"], [])
        self.assertEqual(seen["bound"], {"a": "x", "b": ["y"], "c": {}})
        namespace = {}
        exec(f"def f(a: str, b: list[str], c: dict[str, float], d: {union} = None, e: list = None) -> str:\n"
             "    pass", namespace)
        self.assertEqual(seen["schema"], schema(namespace["f"]))  # here `typing` is loaded

    def test_a_hint_naming_a_class_in_a_string_resolves_without_typing_loaded(self):
        program = """
import sys
import chassis_plugin as cp
class Item(dict):
    pass
def f(items: list["Item"], by_name: dict[str, "Item"]) -> str:
    pass
hints = cp._type_hints(f)
sys.stdout.write(repr((hints["items"].__args__, hints["by_name"].__args__)))
"""
        out = subprocess.run([sys.executable, "-S", "-c", program], cwd=HERE, capture_output=True,
                             text=True, env={"PYTHONPATH": HERE, "PATH": os.environ.get("PATH", "")})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, "((<class '__main__.Item'>,), (<class 'str'>, <class '__main__.Item'>))")

    def test_threading_knows_the_main_thread_once_the_plugin_runs(self):
        # Before 3.13, the first thread to import `threading` is taken for
        # the main one: `run()` imports it first, so a handler's `logging`
        # (or `asyncio`) finds the main thread where it is.
        program = """
import os, sys
import chassis_plugin as cp
@cp.plugin(name="t", version="1.0.0")
def t(ctx):
    def which() -> str:
        "Which thread."
        import threading
        return str(threading.current_thread() is threading.main_thread())
    ctx.tools.register(which)
t.run()
"""
        lines = [
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":"1.2"}}',
            '{"jsonrpc":"2.0","id":2,"method":"setup","params":{"entry":"e"}}',
            '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"which","arguments":{},"run_id":"r"}}',
        ]
        proc = plugin_process(program)
        answers = []
        for line in lines:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            answers.append(json.loads(proc.stdout.readline()))
        proc.stdin.close()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
        self.assertEqual(answers[2]["result"], {"content": "False", "is_error": False}, answers)


class Threads(unittest.TestCase):
    """`setup` runs on the main thread while a reader thread keeps reading,
    so a setup may wait on chassis from anywhere; the workers (and
    `threading`) start only once setup is answered."""

    def converse(self, program, script):
        """Run `program` on `python3 -S` playing chassis: `script` is a list
        of lines to send, or callables that take the plugin's next message
        and return the line to send back (or None to send nothing)."""
        proc = plugin_process(program)
        seen = []
        try:
            for step in script:
                if callable(step):
                    line = proc.stdout.readline()
                    self.assertTrue(line, proc.stderr.read() if proc.poll() is not None else "no answer")
                    msg = json.loads(line)
                    seen.append(msg)
                    step = step(msg)
                    if step is None:
                        continue
                proc.stdin.write(step + "\n")
                proc.stdin.flush()
        finally:
            proc.stdin.close()
            proc.wait(timeout=10)
            proc.stdout.close()
            proc.stderr.close()
        return seen

    INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocol_version":"1.2"}}'
    SETUP = '{"jsonrpc":"2.0","id":2,"method":"setup","params":{"entry":"e","requirements":{"db":{"provider":"p","version":"1.0.0","value":null}}}}'

    @staticmethod
    def answer(result):
        def reply(msg):
            assert msg.get("method") == "capability/invoke", msg
            return json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"result": result(msg["params"])}})
        return reply

    def test_setup_runs_on_the_main_thread_before_the_workers(self):
        program = """
import sys
import chassis_plugin as cp
@cp.plugin(name="t", version="1.0.0")
def t(ctx):
    loaded = "threading" in sys.modules
    import threading
    main = threading.current_thread() is threading.main_thread()
    def where() -> str:
        "Where setup ran."
        return cp._dumps({"loaded": loaded, "main": main})
    ctx.tools.register(where)
t.run()
"""
        call = '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"where","arguments":{}}}'
        seen = self.converse(program, [self.INIT, lambda m: None, self.SETUP, lambda m: call, lambda m: None])
        self.assertIn("result", seen[1], seen)
        where = json.loads(seen[2]["result"]["content"])
        self.assertTrue(where["main"], where)
        if sys.version_info < (3, 13):
            # The mount does not wait for `threading` (milliseconds on a fresh interpreter).
            self.assertFalse(where["loaded"], where)

    def test_a_setup_waits_on_a_provider_from_its_body_a_thread_or_a_coroutine(self):
        program = """
import _thread, asyncio
import chassis_plugin as cp
@cp.plugin(name="t", version="1.0.0", requires={"db": ">=1"})
async def t(ctx):
    db = ctx.require("db")
    got = [db.invoke("get", key="body")]
    done = _thread.allocate_lock()
    done.acquire()
    def other():
        got.append(db.invoke("get", key="thread"))
        done.release()
    _thread.start_new_thread(other, ())
    done.acquire()
    await asyncio.sleep(0)
    got.append(db.invoke("get", key="coroutine"))
    def answers() -> str:
        "What setup was told."
        return ",".join(got)
    ctx.tools.register(answers)
t.run()
"""
        echo = self.answer(lambda params: params["arguments"]["key"] + "!")
        call = '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"answers","arguments":{}}}'
        seen = self.converse(program, [self.INIT, lambda m: None, self.SETUP, echo, echo, echo,
                                       lambda m: call, lambda m: None])
        self.assertIn("result", seen[4], seen)
        self.assertEqual(seen[5]["result"]["content"], "body!,thread!,coroutine!", seen)

    def test_a_teardown_during_setup_runs_its_cleanups_so_far_and_exits_at_once(self):
        # chassis unmounts the plugin while its setup sleeps (an interrupt,
        # a shutdown): `$/cancel` for the setup, then `teardown`. Both are
        # answered at once, the cleanups the setup registered so far run,
        # and the process exits — long before the setup would return.
        import time
        program = """
import sys, time
import chassis_plugin as cp
@cp.plugin(name="t", version="1.0.0")
def t(ctx):
    ctx.cleanup("say so", lambda: print("cleaned up", file=sys.stderr))
    time.sleep(30)
t.run()
"""
        cancel = '{"jsonrpc":"2.0","method":"$/cancel","params":{"id":2}}'
        teardown = '{"jsonrpc":"2.0","id":3,"method":"teardown","params":{}}'
        proc = plugin_process(program)
        started = time.monotonic()
        for line in [self.INIT, self.SETUP]:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
        self.assertIn("result", json.loads(proc.stdout.readline()))
        time.sleep(0.3)
        for line in [cancel, teardown]:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(2)]
        self.assertEqual(proc.wait(timeout=10), 0)
        self.assertLess(time.monotonic() - started, 10)
        said = proc.stderr.read()
        proc.stdin.close()
        proc.stdout.close()
        proc.stderr.close()
        self.assertEqual((answers[0]["id"], answers[0]["error"]["code"]), (2, cp.CANCELLED), answers)
        self.assertEqual((answers[1]["id"], answers[1]["result"]), (3, {}), answers)
        self.assertIn("cleaned up", said)

    def test_a_request_before_setup_is_answered(self):
        program = EMPTY_PLUGIN
        early = '{"jsonrpc":"2.0","id":9,"method":"nope","params":{}}'
        seen = self.converse(program, [self.INIT, lambda m: early, lambda m: self.SETUP, lambda m: None])
        self.assertEqual(seen[1]["error"]["code"], cp.METHOD_NOT_FOUND, seen)
        self.assertIn("result", seen[2], seen)


class Faults(unittest.TestCase):
    """The SDK never hangs half alive, and what a method answers crosses as
    its schema says."""

    def test_a_request_with_an_id_json_rpc_has_not_is_refused_and_reading_goes_on(self):
        bad = '{"jsonrpc":"2.0","id":[1],"method":"nope"}'
        good = '{"jsonrpc":"2.0","id":2,"method":"nope"}'
        seen = Threads().converse(EMPTY_PLUGIN, [bad, lambda m: good, lambda m: None])
        self.assertEqual(seen[0]["error"]["code"], cp.INVALID_REQUEST, seen)
        self.assertEqual((seen[1]["id"], seen[1]["error"]["code"]), (2, cp.METHOD_NOT_FOUND), seen)

    def test_an_interrupt_ends_the_process_cleanly(self):
        import signal
        # Python's own handler, whatever this test inherited (a background
        # job starts with SIGINT ignored).
        program = "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n" + EMPTY_PLUGIN
        proc = plugin_process(program)
        proc.stdin.write(Threads.INIT + "\n")
        proc.stdin.flush()
        self.assertIn("result", json.loads(proc.stdout.readline()))
        proc.send_signal(signal.SIGINT)
        self.assertEqual(proc.wait(timeout=10), 130)
        said = proc.stderr.read()
        proc.stdin.close()
        proc.stdout.close()
        proc.stderr.close()
        self.assertNotIn("Fatal Python error", said)

    def test_a_closed_connection_ends_the_process_in_one_line_with_status_1(self):
        # chassis stops reading stdout (a stray line on it broke the
        # protocol): the answer cannot be written, and the plugin exits
        # without a traceback that would crowd its own stderr lines out of
        # chassis's error.
        program = "import sys\nprint('my own words', file=sys.stderr)\n" + EMPTY_PLUGIN
        proc = plugin_process(program)
        proc.stdout.close()
        proc.stdin.write(Threads.INIT + "\n")
        proc.stdin.flush()
        self.assertEqual(proc.wait(timeout=10), 1)
        said = proc.stderr.read()
        proc.stdin.close()
        proc.stderr.close()
        self.assertNotIn("Traceback", said)
        self.assertNotIn("BrokenPipe", said)
        self.assertEqual(said.splitlines(), ["my own words", "chassis_plugin: chassis closed the connection; exiting"])
        # The end of input before `teardown`: status 1 without a word; after
        # it, 0.
        for script, status in [([Threads.INIT], 1), ([Threads.INIT, '{"jsonrpc":"2.0","id":2,"method":"teardown","params":{}}'], 0)]:
            proc = plugin_process(EMPTY_PLUGIN)
            for line in script:
                proc.stdin.write(line + "\n")
                proc.stdin.flush()
                self.assertIn("result", json.loads(proc.stdout.readline()))
            proc.stdin.close()
            self.assertEqual(proc.wait(timeout=10), status, script)
            said = proc.stderr.read()
            proc.stdout.close()
            proc.stderr.close()
            self.assertEqual(said, "", script)

    def test_dataclasses_cross_as_objects_at_any_depth_and_return_hints_give_result_schemas(self):
        program = """
import dataclasses
import chassis_plugin as cp
@dataclasses.dataclass
class Item:
    name: str
    count: int
@cp.plugin(name="t", version="1.0.0", provides={"stock": "1.0.0"})
def t(ctx):
    def items() -> list[Item]:
        "The items."
        return [Item("a", 1), Item("b", 2)]
    def raw() -> bytes:
        "No JSON Schema for bytes: no promise."
        return "x"
    def nothing() -> None:
        "Says nothing."
    ctx.capabilities.provide("stock", None, version="1.0.0", methods=[items, raw, nothing])
t.run()
"""
        invoke = '{"jsonrpc":"2.0","id":3,"method":"capability/invoke","params":{"key":"stock","method":"items","arguments":{}}}'
        seen = Threads().converse(program, [Threads.INIT, lambda m: None, Threads.SETUP,
                                            lambda m: invoke, lambda m: None])
        methods = {m["name"]: m for m in seen[1]["result"]["capabilities"][0]["methods"]}
        item = {"type": "object", "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
                "required": ["name", "count"], "additionalProperties": False}
        self.assertEqual(methods["items"]["result_schema"], {"type": "array", "items": item})
        self.assertNotIn("result_schema", methods["raw"])
        self.assertNotIn("result_schema", methods["nothing"])
        self.assertEqual(seen[2]["result"]["result"], [{"name": "a", "count": 1}, {"name": "b", "count": 2}])


class Limits(unittest.TestCase):
    def test_a_message_of_16_mib_is_read_and_a_longer_one_stops_the_plugin(self):
        program = EMPTY_PLUGIN
        def send(size):
            head, tail = '{"jsonrpc":"2.0","id":9,"method":"nope","params":{"pad":"', '"}}'
            line = head + "x" * (size - len(head) - len(tail)) + tail
            self.assertEqual(len(line), size)
            proc = plugin_process(program, text=False)
            proc.stdin.write((line + "\n").encode())
            proc.stdin.flush()
            answer = proc.stdout.readline()  # stdin stays open until then
            proc.stdin.close()
            proc.wait(timeout=30)
            said = proc.stderr.read().decode()
            proc.stdout.close()
            proc.stderr.close()
            return answer.decode(), said

        out, err = send(cp.MAX_MESSAGE_BYTES)
        self.assertEqual(json.loads(out)["error"]["code"], cp.METHOD_NOT_FOUND, err)
        out, err = send(cp.MAX_MESSAGE_BYTES + 1)
        self.assertEqual(out, "")
        self.assertIn("longer than 16 MiB", err)


if __name__ == "__main__":
    unittest.main()
