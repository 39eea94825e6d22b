"""The TypedDicts of latch_client.types against api/openapi.json: each has
exactly its schema's fields, the required ones required, and Optional
exactly where the schema allows null."""

import json
import os
import typing
import unittest

from latch_client import types as T

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "api", "openapi.json")

CHECKED = ["Execution", "SubmitResponse", "Lease", "HeartbeatResponse", "Tenant", "TenantCreated", "APIKey",
           "APIKeyInfo", "Schedule", "RateLimit", "StepRecorded", "Step", "Attempt", "StreamTicket",
           "SignalResponse", "ChildRef", "Spawned", "EventStart", "PublishResponse", "Subscription"]


class TypesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        with open(DOC, encoding="utf-8") as f:
            cls.schemas = json.load(f)["components"]["schemas"]

    def resolve(self, s: dict) -> dict:
        if "$ref" in s:
            return self.resolve(self.schemas[s["$ref"].split("/")[-1]])
        if "allOf" in s:
            parts = [self.resolve(p) for p in s["allOf"]]
            props: dict = {}
            for p in parts:
                props.update(p.get("properties", {}))
            return {"properties": props, "required": [r for p in parts for r in p.get("required", [])]}
        return s

    def nullable(self, p: dict) -> bool:
        if "$ref" in p:
            return self.nullable(self.schemas[p["$ref"].split("/")[-1]])
        alts = p.get("oneOf") or p.get("anyOf")
        if alts:
            return any(self.nullable(a) for a in alts)
        t = p.get("type")
        if t is None and "enum" not in p and "const" not in p:
            return True  # any JSON
        return t == "null" or (isinstance(t, list) and "null" in t)

    def test_every_typeddict_matches_its_schema(self) -> None:
        exported = {n for n, v in vars(T).items() if isinstance(v, type) and hasattr(v, "__required_keys__")
                    and not n.startswith("_")}
        self.assertEqual(exported, set(CHECKED), "a TypedDict without a check, or a check without a TypedDict")
        for name in CHECKED:
            td = getattr(T, name)
            schema = self.resolve(self.schemas[name])
            props = schema["properties"]
            with self.subTest(name):
                self.assertEqual(set(td.__annotations__) | set(td.__required_keys__) | set(td.__optional_keys__),
                                 set(props), f"{name}: the fields")
                self.assertEqual(set(td.__required_keys__), set(schema.get("required", [])),
                                 f"{name}: required exactly when the schema requires it")
                hints = typing.get_type_hints(td)
                for field, ps in props.items():
                    h = hints[field]
                    optional = h is typing.Any or type(None) in typing.get_args(h)
                    self.assertEqual(optional, self.nullable(ps),
                                     f"{name}.{field}: Optional exactly where the schema allows null ({h})")


if __name__ == "__main__":
    unittest.main()
