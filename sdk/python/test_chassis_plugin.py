"""Unit tests of the Python SDK: `python3 -m unittest sdk/python/test_chassis_plugin.py`
(run by `cargo test` too)."""

import dataclasses
import os
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


if __name__ == "__main__":
    unittest.main()
