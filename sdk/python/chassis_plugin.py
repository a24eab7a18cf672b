"""chassis_plugin: write a chassis plugin in Python.

A plugin is a program chassis starts (``[plugins.NAME] command = ["python3",
"plugin.py"]``). It speaks the chassis plugin protocol (JSON-RPC 2.0, one
message per line on stdin/stdout; see ``docs/plugin-protocol.md``). This
module is the whole SDK: one file, the standard library only, Python 3.9+.
Vendor it beside your plugin.

    from chassis_plugin import plugin, ToolPolicy

    @plugin(name="greeter", version="1.0.0", provides={"greeting": "1.0.0"})
    def greeter(ctx):
        def greet(name: str, excited: bool = False) -> str:
            "Greet someone by name."
            return f"Hello, {name}{'!' if excited else '.'}"
        ctx.tools.register(greet, policy=ToolPolicy(idempotent=True))
        ctx.capabilities.provide("greeting", {"style": "warm"}, version="1.0.0")

    if __name__ == "__main__":
        greeter.run()

The declaration (name, version, provides, requires, optional) must equal the
plugin's TOML manifest; chassis checks it when the plugin starts. Tool
argument schemas are derived from type hints (str, int, float, bool, None,
list[T], dict[str, T], Optional[T], Literal[...], TypedDict, dataclasses);
any other annotation is a registration error naming the parameter.

stdout belongs to the protocol: the SDK keeps the original stdout for itself
and points file descriptor 1 and ``sys.stdout`` at stderr, so ``print()`` in
your code (or a library's) goes to chassis's log instead of breaking the
channel.
"""

# Only what every plugin needs is imported up front: a plugin's start is
# part of every mount. `inspect`, `dataclasses`, `traceback` and `typing`
# alone would add milliseconds to each, and `json` imports `re` (about 10 ms
# on an interpreter whose `site` did not import it already): see the JSON
# codec below.
import os
import sys
# `_thread`, not `threading`: `threading` imports `functools` and
# `collections` (3-5 ms on a fresh interpreter), and the SDK needs only
# locks and daemon threads (it ends the process with os._exit).
import _thread


__all__ = ["plugin", "Plugin", "PluginContext", "ToolPolicy", "Method", "PluginError",
           "InvokeError", "Bail", "Request", "Response", "PROTOCOL_VERSION", "traceparent"]

PROTOCOL_VERSION = "1.3"

# The `call_id` of the tool call being handled (see Provider.invoke), and
# the W3C `traceparent` of the request being handled (its `_meta`): context
# variables, made with the workers (`_start_context`), since nothing before
# them has either and loading `_contextvars` would be part of every mount.
_CALL = None
_TRACE = None


def _start_context():
    global _CALL, _TRACE
    if _CALL is None:
        try:
            from _contextvars import ContextVar  # what `contextvars` re-exports, without its import
        except ImportError:  # not CPython
            from contextvars import ContextVar
        _CALL = ContextVar("chassis_call", default=None)
        _TRACE = ContextVar("chassis_trace", default=None)


def traceparent():
    """The W3C `traceparent` of the request being handled (a tool call, an
    invoke, a hook or a route inside a run), or None: pass it to your own
    tracing so your spans join the run's trace. A thread your handler
    starts itself does not inherit it (contextvars): pass it along, or start
    the thread in `contextvars.copy_context().run`."""
    return None if _TRACE is None else _TRACE.get()

MAX_MESSAGE_BYTES = 16 << 20


# ---------------------------------------------------------------- JSON
#
# CPython's `json` module is a thin layer over its C accelerator `_json`;
# the layer's import compiles regular expressions (and imports `re`). The
# codec below calls the accelerator exactly as json.loads / json.dumps do
# with their defaults, so the results are the same. Where `_json` is
# missing (another Python), and for any text that does not parse, `json`
# itself answers: the same value, or its error with a position.

def _json_module():
    import json
    return json


def _not_serializable(o):
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


try:
    import _json

    class _Scanning:
        """What json.JSONDecoder() hands the C scanner."""
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__

    _scan = _json.make_scanner(_Scanning)
    _make_encoder, _encode_string = _json.make_encoder, _json.encode_basestring_ascii
    _JSON_SPACE = " \t\n\r"

    def _loads(data):
        """json.loads(data) for str, or bytes in UTF-8."""
        try:
            text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
            value, end = _scan(text, len(text) - len(text.lstrip(_JSON_SPACE)))
            if not text[end:].strip(_JSON_SPACE):
                return value
        except (ValueError, StopIteration):
            pass
        return _json_module().loads(data)  # not JSON: its error, with the position

    def _dumps(value, compact=False, default=_not_serializable):
        """json.dumps(value, default=default), with separators=(",", ":")
        when `compact`. An encoder per call, as json.dumps makes: it keeps
        the circular-reference markers of one value."""
        separators = (":", ",") if compact else (": ", ", ")
        encode = _make_encoder({}, default, _encode_string, None, separators[0], separators[1],
                               False, False, True)
        return "".join(encode(value, 0))
except (ImportError, AttributeError, TypeError):  # not CPython, or its accelerator changed
    def _loads(data):
        return _json_module().loads(data)

    def _dumps(value, compact=False, default=_not_serializable):
        separators = (",", ":") if compact else None
        return _json_module().dumps(value, separators=separators, default=default)

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INVALID_REQUEST = -32600
PARSE_ERROR = -32700
INTERNAL_ERROR = -32603
CANCELLED = -32800


class PluginError(Exception):
    """A mistake in the plugin's own code or registrations."""


class Bail(Exception):
    """Raised by a `bail` hook: refuse the operation, with a reason."""


class InvokeError(Exception):
    """A capability method call that chassis or the provider refused."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Request:
    """An HTTP request to one of the plugin's routes (`chassis serve` answers
    them under /plugins/ENTRY/...): method, path (under the entry), query
    (a dict of lists), headers (lowercase names; never credentials), body
    (text)."""

    def __init__(self, params):
        from urllib.parse import parse_qs
        self.method = params.get("method", "GET")
        self.path = params.get("path", "/")
        self.query = parse_qs(params.get("query", ""))
        self.headers = dict(params.get("headers") or {})
        self.body = params.get("body", "")

    def json(self):
        """The body parsed as JSON."""
        return _loads(self.body) if self.body else None


class Response:
    """What a route answers when a status or headers matter; a route may also
    return a str (200, text/plain) or any JSON value (200, application/json)."""

    def __init__(self, body="", status=200, headers=None):
        self.body = body
        self.status = int(status)
        self.headers = dict(headers or {})

    def wire(self):
        body, headers = self.body, {k.lower(): str(v) for k, v in self.headers.items()}
        if not isinstance(body, str):
            body = _dumps(body)
            headers.setdefault("content-type", "application/json")
        return {"status": self.status, "headers": headers, "body": body}


class Method:
    """A method of a provided capability: `fn` (its schemas from its type
    hints: the arguments', and the result's from its return annotation,
    which chassis then holds the answers to), and the permissions a
    caller's manifest must declare."""

    def __init__(self, fn, name=None, description=None, permissions=(), input_schema=None,
                 result_schema=None):
        self.fn = fn
        self.name = name
        self.description = description
        self.permissions = list(permissions)
        self.input_schema = input_schema
        self.result_schema = result_schema


class ToolPolicy:
    """How chassis treats calls of a tool (chassis's ToolPolicy)."""

    def __init__(self, permissions=(), idempotent=False, side_effects=(), timeout_seconds=None,
                 cost_class=None, approval_required=False):
        self.permissions = permissions
        self.idempotent = idempotent
        self.side_effects = side_effects
        self.timeout_seconds = timeout_seconds
        self.cost_class = cost_class
        self.approval_required = approval_required

    def __repr__(self):
        return f"ToolPolicy({self.to_wire()!r})"

    def to_wire(self):
        out = {
            "permissions": list(self.permissions),
            "idempotent": self.idempotent,
            "side_effects": list(self.side_effects),
            "approval_required": self.approval_required,
        }
        if self.timeout_seconds is not None:
            out["timeout_seconds"] = self.timeout_seconds
        if self.cost_class is not None:
            out["cost_class"] = self.cost_class
        return out


# ---------------------------------------------------------------- schemas

_NONE = type(None)
_EMPTY = object()  # a parameter without an annotation or a default
_PLAIN = (str, bool, int, float, dict, list, _NONE)  # hints whose JSON value is the argument
_CO_VARARGS, _CO_VARKEYWORDS, _CO_COROUTINE = 0x04, 0x08, 0x80


def _print_exc():
    import traceback
    traceback.print_exc(file=sys.stderr)


def _say(line):
    """One line on stderr, if stderr still takes it."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _as_json(value):
    """What a value JSON has no form for becomes: a dataclass its object (at
    any depth, as its schema says), anything else its `str`."""
    if _is_dataclass(type(value)):
        return sys.modules["dataclasses"].asdict(value)
    return str(value)


def _is_dataclass(annotation):
    return isinstance(annotation, type) and hasattr(annotation, "__dataclass_fields__")


def _dataclass_fields(annotation):
    """(name, required) of each field of a dataclass (the user's code has
    imported `dataclasses` already)."""
    missing = sys.modules["dataclasses"].MISSING
    for f in annotation.__dataclass_fields__.values():
        if getattr(f, "_field_type", None) is not None and str(f._field_type) != "_FIELD":
            continue  # ClassVar, InitVar
        yield f.name, f.default is missing and f.default_factory is missing


def _parameters(fn, where):
    """(name, has_default) of each parameter of a plain function or method,
    read from its code object (no `inspect`)."""
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    if code is None:
        raise PluginError(f"{where}: register a function or a method, not {type(fn).__name__}")
    if code.co_flags & (_CO_VARARGS | _CO_VARKEYWORDS):
        raise PluginError(f"{where}: *args and **kwargs have no schema")
    names = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    if func is not fn:  # a bound method: skip `self`
        names = names[1:]
    positional = code.co_argcount - (1 if func is not fn else 0)
    defaults = func.__defaults__ or ()
    first_default = positional - len(defaults)
    kwdefaults = func.__kwdefaults__ or {}
    out = []
    for i, name in enumerate(names):
        has_default = (i >= first_default) if i < positional else (name in kwdefaults)
        out.append((name, has_default))
    return out, bool(code.co_flags & _CO_COROUTINE)


def _first_paragraph(doc):
    lines = [line.strip() for line in (doc or "").strip().splitlines()]
    out = []
    for line in lines:
        if not line:
            break
        out.append(line)
    return " ".join(out)


def _schema_of(annotation, where):
    """The JSON Schema of a type hint; PluginError names `where` otherwise."""
    if annotation is _EMPTY:
        raise PluginError(f"{where} has no type hint; chassis derives the argument schema from it")
    if annotation is str:
        return {"type": "string"}
    if annotation is bool:
        return {"type": "boolean"}
    if annotation is int:
        return {"type": "integer"}
    if annotation is float:
        return {"type": "number"}
    if annotation is None or annotation is _NONE:
        return {"type": "null"}
    if annotation is dict:
        return {"type": "object"}
    if annotation is list:
        return {"type": "array"}
    typing = sys.modules.get("typing")  # loaded when a hint below comes from it
    if typing is not None and annotation is typing.Any:
        return {}
    origin, args = _origin_and_args(annotation)
    if origin is list:
        if not args:
            return {"type": "array"}
        return {"type": "array", "items": _schema_of(args[0], where)}
    if origin is dict:
        if len(args) != 2 or args[0] is not str:
            raise PluginError(f"{where}: only dict[str, T] has a JSON Schema")
        return {"type": "object", "additionalProperties": _schema_of(args[1], where)}
    if (typing is not None and origin is typing.Union) or _is_union_type(annotation):
        options = [a for a in args if a is not _NONE]
        schemas = [_schema_of(a, where) for a in options]
        if len(options) != len(args):
            schemas.append({"type": "null"})
        return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    if typing is not None and origin is typing.Literal:
        return {"enum": list(args)}
    if _is_typeddict(annotation):
        hints = _type_hints(annotation)
        required = sorted(getattr(annotation, "__required_keys__", hints.keys()))
        return {
            "type": "object",
            "properties": {k: _schema_of(v, f"{where}.{k}") for k, v in hints.items()},
            "required": required,
            "additionalProperties": False,
        }
    if _is_dataclass(annotation):
        hints = _type_hints(annotation)
        props, required = {}, []
        for name, needed in _dataclass_fields(annotation):
            props[name] = _schema_of(hints.get(name, _EMPTY), f"{where}.{name}")
            if needed:
                required.append(name)
        return {"type": "object", "properties": props, "required": required, "additionalProperties": False}
    raise PluginError(f"{where} is annotated `{annotation!r}`, which has no JSON Schema here "
                      "(use str, int, float, bool, None, list, list[T], dict, dict[str, T], Any, "
                      "Optional, Literal, TypedDict or a dataclass)")


_UNION_TYPE = type(int | str) if sys.version_info >= (3, 10) else None


def _is_union_type(annotation):
    """`int | None` (Python 3.10+), which needs no `typing`."""
    return _UNION_TYPE is not None and isinstance(annotation, _UNION_TYPE)


def _origin_and_args(annotation):
    """typing.get_origin and get_args. Without `typing` loaded, a hint can
    only be a builtin generic (`list[str]`: its `__origin__` and `__args__`
    are what typing answers) or `X | Y` (its `__args__` are; it has no
    `__origin__`, and `_is_union_type` recognises it)."""
    typing = sys.modules.get("typing")
    if typing is not None:
        return typing.get_origin(annotation), typing.get_args(annotation)
    return getattr(annotation, "__origin__", None), getattr(annotation, "__args__", ())


def _names_a_string(hint):
    """Whether a hint is, or holds (`list["Item"]`), one written as a string,
    which only typing.get_type_hints resolves."""
    if isinstance(hint, str):
        return True
    args = getattr(hint, "__args__", None)
    return isinstance(args, tuple) and any(_names_a_string(a) for a in args)


def _type_hints(obj):
    """typing.get_type_hints(obj). `typing` is imported only when the answer
    needs it: a hint written as a string, a Python before 3.11 (whose
    get_type_hints makes a parameter defaulting to None Optional), or
    `typing` already loaded (then it answers, as always)."""
    annotations = getattr(getattr(obj, "__func__", obj), "__annotations__", None)
    if isinstance(obj, type) or not isinstance(annotations, dict) or sys.version_info < (3, 11) \
            or "typing" in sys.modules or any(_names_a_string(a) for a in annotations.values()):
        import typing
        return typing.get_type_hints(obj)
    return {name: _NONE if hint is None else hint for name, hint in annotations.items()}


def _is_typeddict(annotation):
    return isinstance(annotation, type) and issubclass(annotation, dict) and hasattr(annotation, "__annotations__") \
        and hasattr(annotation, "__total__")


def _from_json(value, annotation):
    """Turn JSON arguments into dataclasses where the hint asks for one."""
    if annotation is None or annotation in _PLAIN:
        return value
    if _is_dataclass(annotation) and isinstance(value, dict):
        hints = _type_hints(annotation)
        return annotation(**{k: _from_json(v, hints.get(k)) for k, v in value.items()})
    origin, args = _origin_and_args(annotation)
    if origin is list and args and isinstance(value, list):
        return [_from_json(v, args[0]) for v in value]
    typing = sys.modules.get("typing")
    if typing is not None and origin is typing.Union and value is not None:
        for a in args:
            if a is not _NONE:
                return _from_json(value, a)
    return value


class _Tool:
    def __init__(self, fn, name, description, policy, what="tool", schema=None):
        self.fn = fn
        self.name = name or fn.__name__
        self.description = description or _first_paragraph(getattr(fn, "__doc__", None))
        if not self.description and what == "tool":
            raise PluginError(f"tool `{self.name}` needs a description (a docstring or description=...)")
        self.policy = policy or ToolPolicy()
        where = f"{what} `{self.name}`"
        self.parameters, self.is_async = _parameters(fn, where)
        try:
            hints = _type_hints(fn)
        except Exception as e:  # noqa: BLE001 - a broken annotation is the user's error
            raise PluginError(f"{where}: its type hints do not resolve: {e}") from e
        self.hints = hints
        self.required = [p for p, has_default in self.parameters if not has_default]
        self.known = frozenset(p for p, _ in self.parameters)
        if schema is not None:
            self.schema = schema  # given explicitly: nothing derived
            return
        props = {p: _schema_of(hints.get(p, _EMPTY), f"{where}, parameter `{p}`")
                 for p, _ in self.parameters}
        self.schema = {"type": "object", "properties": props, "required": self.required,
                       "additionalProperties": False}

    def wire(self):
        return {"name": self.name, "description": self.description,
                "input_schema": self.schema, "policy": self.policy.to_wire()}

    def bind(self, arguments):
        """The keyword arguments of a call; TypeError when they do not fit."""
        if not isinstance(arguments, dict):
            raise TypeError("arguments must be an object")
        if not self.known.issuperset(arguments):
            unknown = sorted(set(arguments) - self.known)
            raise TypeError(f"unexpected argument(s): {', '.join(unknown)}")
        missing = [p for p in self.required if p not in arguments]
        if missing:
            raise TypeError(f"missing argument(s): {', '.join(missing)}")
        return {k: _from_json(v, self.hints.get(k)) for k, v in arguments.items()}


# ---------------------------------------------------------------- context

class _Tools:
    def __init__(self, ctx):
        self._ctx = ctx

    def register(self, fn=None, *, name=None, description=None, policy=None):
        """Register `fn` as a tool (also usable as a decorator)."""
        def add(f):
            self._ctx._check_open()
            tool = _Tool(f, name, description, policy)
            if tool.name in self._ctx._tools:
                raise PluginError(f"tool `{tool.name}` is registered twice")
            self._ctx._tools[tool.name] = tool
            return f
        return add(fn) if fn is not None else add


_HOOK_MODES = ("observe", "transform", "bail")


class _Hooks:
    def __init__(self, ctx):
        self._ctx = ctx

    def register(self, event, fn, mode="observe", priority=0, error_policy="record"):
        """Call `fn(event, payload)` on `event`. It returns None to go on,
        a new payload (a dict) to transform (mode="transform"), or raises
        Bail(reason) to refuse (mode="bail")."""
        self._ctx._check_open()
        mode = getattr(mode, "value", mode)
        if mode not in _HOOK_MODES:
            raise PluginError(f"hook mode `{mode}` is not one of {', '.join(_HOOK_MODES)}")
        if error_policy not in ("record", "raise"):
            raise PluginError(f"error_policy `{error_policy}` is not `record` or `raise`")
        self._ctx._hooks.append((fn, {"event": getattr(event, "value", event), "mode": mode,
                                      "priority": int(priority), "error_policy": error_policy}))


class _Routes:
    def __init__(self, ctx):
        self._ctx = ctx

    def register(self, method, path, fn):
        """Answer `method` requests to `path` (under /plugins/ENTRY; exact, or
        a prefix ending in `/*`) with `fn(request)`. Routes are pinned in
        chassis.lock (`chassis tools FILE --update-lock`)."""
        self._ctx._check_open()
        method = str(method).upper()
        if method not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            raise PluginError(f"route method `{method}` is not GET, POST, PUT, PATCH or DELETE")
        if not str(path).startswith("/"):
            raise PluginError(f"route path `{path}` must start with `/`")
        self._ctx._routes.append((fn, {"method": method, "path": str(path)}))


class _Agents:
    def __init__(self, ctx):
        self._ctx = ctx

    def register(self, name, prompt, *, description="", tools=None, sub_agents=(),
                 model=None, model_version=None, max_steps=None, budget=None,
                 temperature=None, max_tokens=None, default_input=None, revision=None):
        """Define the agent `name` (the fields of an `[agents.NAME]` table):
        chassis's loop runs it, and other agents may list it in `sub_agents`.
        Agents are pinned in chassis.lock (`chassis tools FILE --update-lock`)."""
        self._ctx._check_open()
        if isinstance(tools, str) or isinstance(sub_agents, str):
            raise PluginError(f"agent `{name}`: `tools` and `sub_agents` are lists of names")
        if any(a["name"] == name for a in self._ctx._agents):
            raise PluginError(f"agent `{name}` is registered twice")
        wire = {"name": str(name), "prompt": str(prompt)}
        optional = {"description": description or None, "tools": None if tools is None else list(tools),
                    "sub_agents": list(sub_agents) or None, "model": model,
                    "model_version": model_version, "max_steps": max_steps,
                    "budget": dict(budget) if budget else None, "temperature": temperature,
                    "max_tokens": max_tokens, "default_input": default_input, "revision": revision}
        wire.update({k: v for k, v in optional.items() if v is not None})
        _dumps(wire)  # what is not JSON fails here, not in chassis
        self._ctx._agents.append(wire)


class _Capabilities:
    def __init__(self, ctx):
        self._ctx = ctx

    def provide(self, key, value=None, version=None, methods=()):
        """Provide capability `key` at `version`; `value` crosses as JSON,
        `methods` (functions or Method objects) are what consumers call.
        A value with no methods is shared state: read-only, and readable
        by consumers in any language (a Rust plugin as `SharedState`)."""
        self._ctx._check_open()
        if version is None:
            raise PluginError(f"capability `{key}` needs version=...")
        _dumps(value)  # a value that is not JSON fails here, not in chassis
        wire, table = [], {}
        for m in methods:
            m = m if isinstance(m, Method) else Method(m)
            t = _Tool(m.fn, m.name, m.description, None, what="method", schema=m.input_schema)
            if t.name in table:
                raise PluginError(f"method `{t.name}` of `{key}` is registered twice")
            table[t.name] = t
            method = {"name": t.name, "description": t.description,
                      "input_schema": t.schema, "permissions": m.permissions}
            result = m.result_schema
            if result is None and t.hints.get("return") not in (None, _NONE):
                try:
                    result = _schema_of(t.hints["return"], f"method `{t.name}`, its return value")
                except PluginError:
                    result = None  # a return hint with no JSON Schema promises nothing
            if result is not None:
                method["result_schema"] = result
            wire.append(method)
        self._ctx._methods[key] = table
        self._ctx._capabilities.append({"key": key, "version": str(version), "value": value,
                                        "methods": wire})


class PluginContext:
    """What setup receives: register effects, read config and providers."""

    def __init__(self, params, plugin=None):
        self._plugin = plugin
        self.entry = params.get("entry", "")
        self.scope = params.get("scope", "/")
        self.config = params.get("config") or {}
        self._requirements = params.get("requirements") or {}
        self._tools = {}
        self._hooks = []
        self._routes = []
        self._agents = []
        self._methods = {}
        self._capabilities = []
        self._cleanups = []
        self._sealed = False
        self.tools = _Tools(self)
        self.hooks = _Hooks(self)
        self.routes = _Routes(self)
        self.agents = _Agents(self)
        self.capabilities = _Capabilities(self)

    def _check_open(self):
        if self._sealed:
            raise PluginError("setup is over: register effects during setup")

    def require(self, key):
        """The provider bound to requirement `key`: `.value` is its JSON
        value, `.invoke(method, **arguments)` (or `.method(**arguments)`)
        calls its methods through chassis."""
        bound = self._requirements.get(key)
        if bound is None:
            raise PluginError(f"`{key}` is not bound: declare it in requires= and in the manifest")
        return Provider(self._plugin, key, bound)

    def get(self, key):
        """Like require, but None when nothing is bound (optional requirements)."""
        return self.require(key) if key in self._requirements else None

    def cleanup(self, description, fn):
        """Run `fn` at teardown (in reverse order of registration)."""
        self._cleanups.append((description, fn))


class Provider:
    """A provider bound to one requirement."""

    def __init__(self, plugin, key, bound):
        self._plugin = plugin
        self.key = key
        self.provider = bound.get("provider")
        self.version = bound.get("version")
        self.value = bound.get("value")

    def invoke(self, method, **arguments):
        """Call `method` of this capability; raises InvokeError when chassis
        or the provider refuses. Blocks: call it from a tool or method."""
        params = {"key": self.key, "method": method, "arguments": arguments}
        call = None if _CALL is None else _CALL.get()
        if call is not None:
            params["call_id"] = call
        reply = self._plugin._request("capability/invoke", params)
        return reply.get("result") if isinstance(reply, dict) else reply

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda **arguments: self.invoke(name, **arguments)


# ---------------------------------------------------------------- protocol

class Plugin:
    """A plugin: its declaration and its setup function."""

    def __init__(self, setup, name, version, provides=None, requires=None, optional=None,
                 permissions=None, max_concurrency=None):
        self.setup = setup
        self.info = {
            "name": name,
            "version": str(version),
            "provides": {k: ([str(x) for x in v] if isinstance(v, (list, tuple)) else [str(v)])
                         for k, v in (provides or {}).items()},
            "requires": dict(requires or {}),
            "optional": dict(optional or {}),
        }
        self.permissions = list(permissions or [])
        self.max_concurrency = max_concurrency
        self._ctx = None
        # The context of a setup under way (its cleanups run if chassis
        # tears the plugin down before the setup returns).
        self._setting_up = None
        self._out = None
        self._stopping = False
        self._write_lock = _thread.allocate_lock()
        self._pool = None
        self._loop = None
        self._loop_lock = _thread.allocate_lock()
        self._cancelled = set()
        self._inflight = set()
        self._cancel_lock = _thread.allocate_lock()
        self._next_id = 0
        self._waiting = {}
        self._waiting_lock = _thread.allocate_lock()
        self._handlers = {"initialize": self._initialize, "setup": self._setup,
                          "tools/call": self._tools_call, "capability/invoke": self._invoke,
                          "hooks/dispatch": self._dispatch, "http/request": self._http,
                          "teardown": self._teardown}

    def __call__(self, *args, **kwargs):
        return self.setup(*args, **kwargs)

    # -- I/O

    def _send(self, message):
        line = _dumps(message, compact=True, default=_as_json)
        with self._write_lock:
            try:
                self._out.write(line + "\n")
                self._out.flush()
            except (BrokenPipeError, ConnectionResetError):
                # chassis no longer reads (it closed the connection: a line
                # on stdout that was not a message, or it stopped). Nothing
                # more can be answered: exit, and say so in one line rather
                # than a traceback, which would crowd out of chassis's error
                # the stderr lines the plugin wrote itself.
                _say("chassis_plugin: chassis closed the connection; exiting")
                self._exit(1)

    def _reply(self, id_, result=None, error=None):
        with self._cancel_lock:
            self._inflight.discard(id_)
            if id_ in self._cancelled:
                self._cancelled.discard(id_)
                return
        msg = {"jsonrpc": "2.0", "id": id_}
        if error is not None:
            msg["error"] = {"code": error[0], "message": error[1]}
        else:
            msg["result"] = result
        self._send(msg)

    def _request(self, method, params):
        """Send a request to chassis and wait for its answer (from any
        thread but the reader's, which delivers it)."""
        with self._waiting_lock:
            self._next_id += 1
            id_ = f"p{self._next_id}"
            done = _thread.allocate_lock()
            done.acquire()  # released once: by the answer, or when the process ends
            slot = self._waiting[id_] = [done, None]
        self._send({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
        done.acquire()
        msg = slot[1]
        if msg is None:
            raise InvokeError(INTERNAL_ERROR, "chassis closed the connection")
        if "error" in msg:
            err = msg["error"] or {}
            raise InvokeError(err.get("code", INTERNAL_ERROR), err.get("message", "error"))
        return msg.get("result")

    def _answered(self, msg):
        with self._waiting_lock:
            slot = self._waiting.pop(msg.get("id"), None)
            if slot is not None:
                slot[1] = msg
                slot[0].release()

    def _await(self, value):
        if hasattr(value, "__await__"):
            import asyncio  # only plugins with async code pay for it

            with self._loop_lock:
                if self._loop is None:
                    self._loop = asyncio.new_event_loop()
                    _thread.start_new_thread(self._loop.run_forever, ())
            return asyncio.run_coroutine_threadsafe(_as_coroutine(value), self._loop).result()
        return value

    # -- methods

    def _initialize(self, params):
        theirs = str(params.get("protocol_version", ""))
        if theirs.split(".")[0] != PROTOCOL_VERSION.split(".")[0]:
            raise _RpcError(INVALID_PARAMS, f"this plugin speaks protocol {PROTOCOL_VERSION}, not {theirs}")
        out = {"protocol_version": PROTOCOL_VERSION, "plugin": self.info}
        if self.max_concurrency is not None:
            out["max_concurrency"] = self.max_concurrency
        return out

    def _setup(self, params):
        if not isinstance(params, dict) or "entry" not in params:
            raise _RpcError(INVALID_PARAMS, "setup needs an object with `entry`")
        ctx = PluginContext(params, self)
        self._setting_up = ctx
        try:
            self._await(self.setup(ctx))
        finally:
            self._setting_up = None
        ctx._sealed = True
        self._ctx = ctx
        return {"capabilities": ctx._capabilities, "tools": [t.wire() for t in ctx._tools.values()],
                "hooks": [wire for _, wire in ctx._hooks],
                "routes": [wire for _, wire in ctx._routes], "agents": ctx._agents}

    def _tools_call(self, params):
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            raise _RpcError(INVALID_PARAMS, "tools/call needs `name` and `arguments`")
        tool = self._ctx._tools.get(params["name"]) if self._ctx else None
        if tool is None:
            raise _RpcError(INVALID_PARAMS, f"no tool `{params['name']}`")
        try:
            bound = tool.bind(params.get("arguments") or {})
        except TypeError as e:
            raise _RpcError(INVALID_PARAMS, f"bad arguments for `{tool.name}`: {e}") from e
        # An invoke made while handling the call (from this thread, or the
        # coroutine, which copies the context) runs under the call's run.
        call = _CALL.set(params.get("call_id"))
        try:
            result = self._await(tool.fn(**bound))
        except Exception as e:  # noqa: BLE001 - a failing tool is an answer
            _print_exc()
            return {"content": f"{type(e).__name__}: {e}", "is_error": True}
        finally:
            _CALL.reset(call)
        content = result if isinstance(result, (str, int, float, bool, list, dict)) or result is None else str(result)
        return {"content": "" if content is None else content, "is_error": False}

    def _invoke(self, params):
        if not isinstance(params, dict):
            raise _RpcError(INVALID_PARAMS, "capability/invoke needs an object")
        table = self._ctx._methods.get(params.get("key")) if self._ctx else None
        method = table.get(params.get("method")) if table is not None else None
        if method is None:
            raise _RpcError(INVALID_PARAMS, f"no method `{params.get('method')}` of `{params.get('key')}`")
        try:
            bound = method.bind(params.get("arguments") or {})
        except TypeError as e:
            raise _RpcError(INVALID_PARAMS, f"bad arguments for `{method.name}`: {e}") from e
        # What the method invokes in turn stays in the tool call that
        # invoked it (chassis's token for that call, 1.3).
        call = _CALL.set(params.get("call_id"))
        try:
            return {"result": self._await(method.fn(**bound))}
        except InvokeError as e:
            raise _RpcError(e.code, str(e)) from e
        except Exception as e:  # noqa: BLE001 - the caller gets the error
            _print_exc()
            raise _RpcError(INTERNAL_ERROR, f"{type(e).__name__}: {e}") from e
        finally:
            _CALL.reset(call)

    def _dispatch(self, params):
        hooks = self._ctx._hooks if self._ctx else []
        index = params.get("hook") if isinstance(params, dict) else None
        if not isinstance(index, int) or not 0 <= index < len(hooks):
            raise _RpcError(INVALID_PARAMS, f"no hook {index!r}")
        fn, _ = hooks[index]
        try:
            out = self._await(fn(params.get("event"), params.get("payload")))
        except Bail as e:
            return {"action": "bail", "reason": str(e)}
        if out is None:
            return {"action": "continue"}
        return {"action": "transform", "payload": out}

    def _http(self, params):
        routes = self._ctx._routes if self._ctx else []
        index = params.get("route") if isinstance(params, dict) else None
        if not isinstance(index, int) or not 0 <= index < len(routes):
            raise _RpcError(INVALID_PARAMS, f"no route {index!r}")
        fn, _ = routes[index]
        try:
            out = self._await(fn(Request(params)))
        except Exception as e:  # noqa: BLE001 - a failing route is a 500
            _print_exc()
            return {"status": 500, "headers": {"content-type": "text/plain"},
                    "body": f"{type(e).__name__}: {e}"}
        if isinstance(out, Response):
            return out.wire()
        if out is None:
            return {"status": 204, "headers": {}, "body": ""}
        if isinstance(out, str):
            return {"status": 200, "headers": {"content-type": "text/plain; charset=utf-8"}, "body": out}
        return Response(out).wire()

    def _teardown(self, _params):
        ctx = self._ctx or self._setting_up
        for description, fn in reversed(ctx._cleanups if ctx else []):
            try:
                self._await(fn())
            except Exception:  # noqa: BLE001 - keep tearing down
                print(f"cleanup `{description}` failed:", file=sys.stderr)
                _print_exc()
        return {}

    def _handle(self, id_, method, params):
        handler = self._handlers.get(method)
        meta = params.get("_meta") if isinstance(params, dict) else None
        # Before the workers (initialize, setup) no request carries one.
        trace = None if _TRACE is None else _TRACE.set(meta.get("traceparent") if isinstance(meta, dict) else None)
        try:
            if handler is None:
                raise _RpcError(METHOD_NOT_FOUND, f"no method `{method}`")
            result = handler(params if params is not None else {})
            self._reply(id_, result=result)
        except _RpcError as e:
            self._reply(id_, error=(e.code, e.message))
        except PluginError as e:
            self._reply(id_, error=(INTERNAL_ERROR, str(e)))
        except SystemExit as e:
            # sys.exit() in a handler (a worker thread) ends the process, as
            # it would in a script.
            sys.stderr.flush()
            os._exit(e.code if isinstance(e.code, int) else 1)
        except Exception as e:  # noqa: BLE001 - never let one request kill the process
            _print_exc()
            self._reply(id_, error=(INTERNAL_ERROR, f"{type(e).__name__}: {e}"))
        finally:
            if trace is not None:
                _TRACE.reset(trace)
        return method

    def run(self):
        """Serve chassis on stdin/stdout until teardown or end of input."""
        # Keep the real stdout for the protocol; everything else that writes
        # to stdout (print, C extensions) goes to stderr.
        self._out = os.fdopen(os.dup(1), "w", encoding="utf-8")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        # A reader thread takes the messages; this (main) thread runs
        # `setup` and `teardown`, so the plugin's own code starts where a
        # script's does, and a setup may block on anything (a provider's
        # invoke, a thread of its own, a coroutine): the reader keeps
        # reading. The reader runs only this module's code.
        self._main = _Mailbox()
        _thread.start_new_thread(self._read, ())
        try:
            while True:
                id_, method, params = self._main.get()
                if method == "setup":
                    self._handle(id_, method, params)
                    # Only now, once chassis has its answer (the mount is
                    # not kept waiting for it): the workers, for the calls
                    # to come.
                    self._workers()
                elif method == "teardown":
                    self._handle(id_, method, params)
                    self._exit()
                else:  # a request that came before the workers were started
                    self._workers().submit(self._handle, id_, method, params)
        except KeyboardInterrupt:
            self._exit(130)
        except BaseException:  # noqa: BLE001 - end the process, never hang half alive
            _print_exc()
            self._exit(1)

    def _workers(self):
        """The worker pool, started on the main thread before any worker
        exists: before 3.13 `threading` takes whichever thread imports it
        first for the main one, so it is imported here first (a handler
        importing `logging` or `asyncio` in a worker would otherwise)."""
        if self._pool is None:
            if sys.version_info < (3, 13):
                import threading  # noqa: F401
            _start_context()
            self._pool = _Pool(self.max_concurrency or 8)
        return self._pool

    def _read(self):
        # Whatever stops the reader ends the process (chassis then restarts
        # it): a plugin that no longer reads must not look alive. The end of
        # input before `teardown` (chassis closed the connection, or died)
        # ends it quietly, with status 1: it was not asked to stop.
        try:
            self._read_lines()
        except BaseException:  # noqa: BLE001
            _print_exc()
            self._exit(1)
        self._exit(0 if self._stopping else 1)

    def _read_lines(self):
        stdin = sys.stdin.buffer
        while True:
            # The message and its newline: 16 MiB of message is allowed.
            line = stdin.readline(MAX_MESSAGE_BYTES + 2)
            if not line:
                break
            if len(line) - line.endswith(b"\n") > MAX_MESSAGE_BYTES:
                print("a message longer than 16 MiB; stopping", file=sys.stderr)
                break
            if not line.strip():
                continue
            try:
                msg = _loads(line)
            except ValueError:
                self._send({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "not JSON"}})
                continue
            if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or "method" not in msg:
                if isinstance(msg, dict) and ("result" in msg or "error" in msg):
                    self._answered(msg)
                    continue
                self._send({"jsonrpc": "2.0", "id": msg.get("id") if isinstance(msg, dict) else None,
                            "error": {"code": INVALID_REQUEST, "message": "not a JSON-RPC request"}})
                continue
            method, params, id_ = msg["method"], msg.get("params"), msg.get("id")
            if not isinstance(id_, (str, int, float, type(None))) or not isinstance(method, str):
                self._send({"jsonrpc": "2.0", "id": None,
                            "error": {"code": INVALID_REQUEST,
                                      "message": "a request's id is a string or a number, its method a string"}})
                continue
            if "id" not in msg:
                if method == "$/cancel" and isinstance(params, dict):
                    self._cancel(params.get("id"))
                continue
            if method == "initialize":
                self._handle(id_, method, params)  # the SDK's own answer: no plugin code runs
            elif method == "teardown":
                self._stopping = True
                if self._setting_up is not None:
                    # chassis unmounts the plugin while its setup still runs
                    # on the main thread (an interrupt, a shutdown; it
                    # cancelled the setup first): the setup is abandoned,
                    # the cleanups it registered so far run here, and the
                    # process exits, rather than after the setup returns.
                    self._handle(id_, method, params)
                    self._exit()
                self._main.put((id_, method, params))
            else:
                with self._cancel_lock:
                    self._inflight.add(id_)
                pool = self._pool
                if pool is None or method == "setup":
                    self._main.put((id_, method, params))
                else:
                    pool.submit(self._handle, id_, method, params)

    def _exit(self, code=0):
        with self._waiting_lock:
            for slot in self._waiting.values():
                slot[0].release()
            self._waiting.clear()
        try:
            self._out.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)

    def _cancel(self, id_):
        # The work cannot be interrupted in a thread; its answer is dropped
        # and chassis hears that it was cancelled at once. A request already
        # answered is left alone.
        with self._cancel_lock:
            if id_ not in self._inflight:
                return
            self._inflight.discard(id_)
            self._cancelled.add(id_)
        msg = {"jsonrpc": "2.0", "id": id_, "error": {"code": CANCELLED, "message": "cancelled"}}
        self._send(msg)


class _Pool:
    """Worker threads started as requests need them, up to `size`: a plugin
    that answers one call at a time starts one."""

    def __init__(self, size):
        try:
            from _queue import SimpleQueue  # what queue.SimpleQueue is, without heapq
        except ImportError:  # not CPython
            from queue import SimpleQueue
        self._jobs = SimpleQueue()
        self._size = size
        self._started = 0
        self._idle = 0
        self._lock = _thread.allocate_lock()

    def submit(self, fn, *args):
        with self._lock:
            start = self._idle == 0 and self._started < self._size
            if start:
                self._started += 1
            else:
                self._idle -= 1
        self._jobs.put((fn, args))
        if start:
            _thread.start_new_thread(self._work, ())

    def _work(self):
        while True:
            fn, args = self._jobs.get()
            try:
                fn(*args)
            except BaseException:  # noqa: BLE001 - a worker outlives any job
                _print_exc()
            finally:
                with self._lock:
                    self._idle += 1


# How long the main thread sleeps before it looks for a signal to handle.
_MAIN_WAKE_SECONDS = 0.5


class _Mailbox:
    """A queue with one consumer (the main thread) made of two `_thread`
    locks: the main thread's work arrives before the workers, and `_queue`
    loads with them. `_wake` is held while there may be nothing to take."""

    def __init__(self):
        self._items = []
        self._guard = _thread.allocate_lock()
        self._wake = _thread.allocate_lock()
        self._wake.acquire()

    def put(self, item):
        with self._guard:
            self._items.append(item)
            if self._wake.locked():
                self._wake.release()

    def get(self):
        while True:
            with self._guard:
                if self._items:
                    return self._items.pop(0)
            # Never an unbounded wait: a signal that lands just before the
            # thread blocks wakes nothing, so an interrupt (Ctrl-C) would
            # wait for the next message. Waking twice a second lets Python
            # run its handler.
            self._wake.acquire(timeout=_MAIN_WAKE_SECONDS)


class _RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


async def _as_coroutine(awaitable):
    return await awaitable


def plugin(name, version, provides=None, requires=None, optional=None, permissions=None,
           max_concurrency=None):
    """Declare a plugin; decorates its setup function (sync or async)."""
    def wrap(setup):
        return Plugin(setup, name, version, provides, requires, optional, permissions, max_concurrency)
    return wrap
