"""The SDK natively: configuration parsing and `decide`'s order of hooks, on the bindings that
`componentize-py bindings` writes (their directory first on `PYTHONPATH`; host/tests/
policy_langs.rs runs this as `python3 -m unittest discover guest/python/tests`)."""

import dataclasses
import json
import unittest
from typing import List
from unittest import mock

import weir_policy
from weir_policy import ConfigError, Context, Pod, Policy, Verdict, annotation, label
from wit_world.exports import policy as hooks
from wit_world.imports import types


def pod(name: str, ip: str, labels=(), annotations=()) -> types.Pod:
    kv = lambda pairs: [types.KeyValue(k, v) for k, v in pairs]
    return types.Pod(
        "ns", name, f"{name}-uid", kv(labels), kv(annotations), "node-1", "", "", ip, [ip],
        "Running", [], False, True, None, [],
    )


def service(publish_not_ready=False) -> types.Service:
    return types.Service(
        "ns", "web", "web-uid", [], [], None, [], "ClusterIP", "10.96.0.10", ["10.96.0.10"],
        ["IPv4"], [], publish_not_ready, None, False,
    )


def candidate(p: types.Pod, ready=True, with_verdict=True) -> hooks.Candidate:
    port = types.EndpointPort("http", 8080, "TCP", None)
    address = types.EndpointAddress(p.pod_ip, "", p.node_name, None)
    verdict = hooks.Verdict(True, ready, ready, False, address) if with_verdict else None
    return hooks.Candidate(p, [port], verdict)


def a_pass(config="") -> hooks.Pass:
    return hooks.Pass(hooks.Output.ENDPOINTS, hooks.Family.IPV4, service(), config)


class Sample(Policy):
    name: str = "x"
    share: float = 0.5
    count: int = 3
    enabled: bool = False
    patterns: List[str] = ["*"]


class ConfigTest(unittest.TestCase):
    def test_empty_config_gives_the_defaults(self):
        for text in ["", "  \n"]:
            p = Sample.from_config(text)
            self.assertEqual((p.name, p.share, p.count, p.enabled, p.patterns), ("x", 0.5, 3, False, ["*"]))

    def test_camel_case_keys_set_snake_case_fields(self):
        class Camel(Policy):
            override_publish_not_ready: bool = False

        self.assertTrue(Camel.from_config('{"overridePublishNotReady": true}').override_publish_not_ready)

    def test_values_are_checked_against_the_annotations(self):
        p = Sample.from_config('{"share": 1, "patterns": ["a", "b"], "enabled": true}')
        self.assertEqual((p.share, p.patterns, p.enabled), (1.0, ["a", "b"], True))
        for text, wanted in [
            ('{"name": 1}', "invalid type for `name`: number `1`, expected a string"),
            ('{"count": true}', "invalid type for `count`: boolean `true`, expected an integer"),
            ('{"count": 1.5}', "invalid type for `count`: number `1.5`, expected an integer"),
            ('{"patterns": "a"}', 'invalid type for `patterns`: string "a", expected a list'),
            ('{"patterns": ["a", 2]}', "invalid type for `patterns[1]`: number `2`, expected a string"),
            ('{"names": "a"}', "unknown field `names`, expected one of"),
            ("[1]", "expected an object, found a list"),
            ("{", "invalid policy configuration"),
        ]:
            with self.subTest(text):
                with self.assertRaises(ConfigError) as err:
                    Sample.from_config(text)
                self.assertIn(wanted, str(err.exception))

    def test_a_configured_list_is_not_shared_with_the_default(self):
        Sample.from_config('{"patterns": ["a"]}').patterns.append("b")
        self.assertEqual(Sample().patterns, ["*"])


class Recorder(Policy):
    """Records the hooks' calls; leaves out `b`, marks `c` not ready, drops port `http` of `d`."""

    def __init__(self, **fields):
        super().__init__(**fields)
        self.calls = []

    def include(self, ctx, p):
        self.calls.append(("include", p.name))
        return p.name != "b"

    def ports(self, ctx, p, ports):
        self.calls.append(("ports", p.name))
        if p.name == "d":
            ports.clear()

    def verdict(self, ctx, verdict):
        self.calls.append(("verdict", verdict.pod.name))
        if verdict.pod.name == "c":
            verdict.ready = False

    def verdicts(self, ctx, verdicts):
        self.calls.append(("verdicts", [v.pod.name for v in verdicts]))


class DecideTest(unittest.TestCase):
    def test_the_default_policy_changes_nothing(self):
        cands = [candidate(pod("a", "10.0.0.1")), candidate(pod("b", "10.0.0.2"), with_verdict=False)]
        choices = weir_policy.decide(Policy(), a_pass(), cands)
        self.assertEqual(
            choices, [hooks.Choice(True, c.ports, c.verdict) for c in cands]
        )

    def test_hooks_run_in_the_rust_sdk_order_and_their_changes_come_back(self):
        policy = Recorder()
        names = ["a", "b", "c", "d"]
        cands = [candidate(pod(n, f"10.0.0.{i}")) for i, n in enumerate(names, 1)]
        cands.append(candidate(pod("e", "10.0.0.9"), with_verdict=False))
        choices = weir_policy.decide(policy, a_pass(), cands)
        self.assertEqual(
            policy.calls,
            [("include", "a"), ("ports", "a"), ("verdict", "a"), ("include", "b"),
             ("include", "c"), ("ports", "c"), ("verdict", "c"), ("include", "d"),
             ("ports", "d"), ("verdict", "d"), ("include", "e"), ("ports", "e"),
             ("verdicts", ["a", "c", "d"])],
        )
        self.assertEqual([c.include for c in choices], [True, False, True, True, True])
        self.assertEqual(choices[1].verdict, cands[1].verdict, "a left-out pod keeps its verdict")
        self.assertFalse(choices[2].verdict.ready)
        self.assertEqual(choices[3].ports, [])
        self.assertEqual(len(cands[3].ports), 1, "the candidate's own list is not changed")
        self.assertIsNone(choices[4].verdict)

    def test_verdicts_sees_only_included_endpoints(self):
        class DropAll(Policy):
            def verdict(self, ctx, verdict):
                verdict.include = verdict.pod.name != "a"

            def verdicts(self, ctx, verdicts):
                self.seen = [v.pod.name for v in verdicts]
                for v in verdicts:
                    v.ready = False

        policy = DropAll()
        choices = weir_policy.decide(policy, a_pass(), [candidate(pod("a", "10.0.0.1")), candidate(pod("b", "10.0.0.2"))])
        self.assertEqual(policy.seen, ["b"])
        self.assertFalse(choices[0].verdict.include)
        self.assertTrue(choices[0].verdict.ready)
        self.assertFalse(choices[1].verdict.ready)


class HelpersTest(unittest.TestCase):
    def test_label_and_annotation(self):
        p = pod("a", "10.0.0.1", labels=[("app", "web")], annotations=[("weir.dev/drain", "true")])
        self.assertEqual(label(p, "app"), "web")
        self.assertIsNone(label(p, "weir.dev/drain"))
        self.assertEqual(annotation(p, "weir.dev/drain"), "true")
        self.assertIsNone(annotation(p, "app"))

    def test_export_policy_takes_only_policies(self):
        with self.assertRaises(TypeError):
            weir_policy.export_policy(object)


if __name__ == "__main__":
    unittest.main()
