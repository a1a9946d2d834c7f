"""The SDK natively: configuration parsing, `reads` and `decide`'s order of hooks and changes, on the bindings that
`componentize-py bindings` writes (their directory first on `PYTHONPATH`; host/tests/
policy_langs.rs runs this as `python3 -m unittest discover guest/python/tests`)."""

import unittest
from typing import List
from unittest import mock

import weir_policy
from weir_policy import ALL, ConfigError, Policy, Reads, annotation, label
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


PORT = types.EndpointPort("http", 8080, "TCP", None)


def address(p: types.Pod) -> types.EndpointAddress:
    return types.EndpointAddress(p.pod_ip, "", p.node_name, None)


def ready_bits(ready=True) -> int:
    """A candidate of the Endpoints pass with upstream's endpoint of a running pod: present,
    serving, maybe ready."""
    return 16 | 1 | (2 if ready else 0) | (4 if ready else 0)


def columns(pods) -> hooks.Pods:
    """`pods` as the engine sends them to a policy that reads everything."""
    return hooks.Pods(
        [p.name for p in pods], [p.labels for p in pods], [p.annotations for p in pods],
        [p.uid for p in pods], [p.node_name for p in pods], [p.hostname for p in pods],
        [p.subdomain for p in pods], [p.pod_ip for p in pods], [p.pod_ips for p in pods],
        [p.phase for p in pods], [p.conditions for p in pods], [p.terminating for p in pods],
        [p.node_exists for p in pods], [p.zone for p in pods], [p.container_ports for p in pods],
    )


def a_pass(pods, bits=None, config="", reads_ports=True, reads_addresses=True):
    """The sync and the Endpoints pass of `pods`, each a candidate with an endpoint unless its
    entry of `bits` says otherwise."""
    bits = bits if bits is not None else [ready_bits() for _ in pods]
    sync = hooks.Sync(service(), config, columns(pods))
    candidates = hooks.Candidates(
        bytes(bits),
        [[PORT] if b & 16 else [] for b in bits] if reads_ports else [],
        [address(p) if b & 1 else None for p, b in zip(pods, bits)] if reads_addresses else [],
    )
    return sync, hooks.Pass(hooks.Output.ENDPOINTS, hooks.Family.IPV4), candidates


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
        pods = [pod("a", "10.0.0.1"), pod("b", "10.0.0.2")]
        self.assertEqual(weir_policy.decide(Policy(), *a_pass(pods, [ready_bits(), 16])), [])

    def test_hooks_that_change_nothing_answer_nothing(self):
        class Echo(Recorder):
            def include(self, ctx, p):
                return True

            def ports(self, ctx, p, ports):
                pass

            def verdict(self, ctx, verdict):
                pass

        pods = [pod("a", "10.0.0.1"), pod("b", "10.0.0.2")]
        self.assertEqual(weir_policy.decide(Echo(), *a_pass(pods, [ready_bits(), 16])), [])

    def test_hooks_run_in_the_rust_sdk_order_and_only_their_changes_come_back(self):
        policy = Recorder()
        names = ["a", "gone", "b", "c", "d", "e"]
        pods = [pod(n, f"10.0.0.{i}") for i, n in enumerate(names, 1)]
        # `gone` is no candidate (say, a terminal pod); `e` has no IP of the family.
        sync, pass_, cands = a_pass(pods, [ready_bits(), 0] + [ready_bits()] * 3 + [16])
        changes = weir_policy.decide(policy, sync, pass_, cands)
        self.assertEqual(
            policy.calls,
            [("include", "a"), ("ports", "a"), ("verdict", "a"), ("include", "b"),
             ("include", "c"), ("ports", "c"), ("verdict", "c"), ("include", "d"),
             ("ports", "d"), ("verdict", "d"), ("include", "e"), ("ports", "e"),
             ("verdicts", ["a", "c", "d"])],
        )
        by = {c.pod: c for c in changes}
        self.assertEqual(sorted(by), [2, 3, 4], "a and e are unchanged, gone is not asked")
        self.assertEqual(by[2], hooks.Change(2, False, None, None))
        self.assertEqual(by[3], hooks.Change(3, True, None, hooks.Endpoint(True, False, True, False, None)))
        self.assertEqual(by[4], hooks.Change(4, True, [], None))
        self.assertEqual(cands.ports[4], [PORT], "the candidate's own list is not changed")

    def test_verdicts_sees_only_included_endpoints(self):
        class DropAll(Policy):
            def verdict(self, ctx, verdict):
                verdict.include = verdict.pod.name != "a"

            def verdicts(self, ctx, verdicts):
                self.seen = [v.pod.name for v in verdicts]
                for v in verdicts:
                    v.ready = False

        policy = DropAll()
        changes = weir_policy.decide(policy, *a_pass([pod("a", "10.0.0.1"), pod("b", "10.0.0.2")]))
        self.assertEqual(policy.seen, ["b"])
        self.assertEqual(
            changes,
            [hooks.Change(0, True, None, hooks.Endpoint(False, True, True, False, None)),
             hooks.Change(1, True, None, hooks.Endpoint(True, False, True, False, None))],
        )

    def test_an_address_changed_in_place_comes_back_and_an_unread_one_is_none(self):
        class Rename(Policy):
            def reads(self):
                return Reads(addresses=True)

            def verdict(self, ctx, verdict):
                self.address = verdict.address
                if verdict.address is not None:
                    verdict.address.hostname = "h"

        policy = Rename()
        p = pod("a", "10.0.0.1")
        changes = weir_policy.decide(policy, *a_pass([p]))
        moved = address(p)
        moved.hostname = "h"
        self.assertEqual(changes, [hooks.Change(0, True, None, hooks.Endpoint(True, True, True, False, moved))])
        weir_policy.decide(policy, *a_pass([p], reads_addresses=False))
        self.assertIsNone(policy.address)


class PodsTest(unittest.TestCase):
    def test_columns_make_whole_pods_and_unread_columns_make_empty_fields(self):
        pods = [pod("a", "10.0.0.1", annotations=[("k", "v")]), pod("b", "10.0.0.2")]
        self.assertEqual(weir_policy.pods_of(hooks.Sync(service(), "", columns(pods))), pods)
        lean = hooks.Pods(["a", "b"], [], [[types.KeyValue("k", "v")], []],
                          *([[]] * 12))
        got = weir_policy.pods_of(hooks.Sync(service(), "", lean))
        self.assertEqual(got[0], types.Pod("ns", "a", "", [], [types.KeyValue("k", "v")], "", "", "",
                                           None, [], "", [], False, False, None, []))
        self.assertIsNot(got[0].conditions, got[1].conditions, "no two pods share a list")


class ReadsTest(unittest.TestCase):
    def test_a_policy_reads_everything_unless_it_says(self):
        r = weir_policy.reads_of(Policy())
        self.assertEqual((r.labels, r.annotations, r.ports, r.addresses), (None, None, False, True))
        for flag in hooks.PodFields:
            self.assertIn(flag, r.fields)

    def test_named_keys_and_fields_and_ports_when_the_ports_hook_is_overridden(self):
        class Drain(Policy):
            def reads(self):
                return Reads(annotations=["weir.dev/drain"], fields=["node_name", "zone"])

            def ports(self, ctx, p, ports):
                pass

        r = weir_policy.reads_of(Drain())
        self.assertEqual((r.labels, r.annotations, r.ports, r.addresses), ([], ["weir.dev/drain"], True, False))
        self.assertEqual(r.fields, hooks.PodFields.NODE_NAME | hooks.PodFields.ZONE)

    def test_an_unknown_field_is_refused_by_name(self):
        class Typo(Policy):
            def reads(self):
                return Reads(labels=ALL, fields=["nodeName"])

        with self.assertRaises(ConfigError) as err:
            weir_policy.reads_of(Typo())
        self.assertIn("unknown pod field `nodeName`", str(err.exception))


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
