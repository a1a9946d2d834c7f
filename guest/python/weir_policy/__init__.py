"""weir's Python policy SDK: upstream's endpoint behaviour, changed in a few lines.

A policy subclasses :class:`Policy` and overrides only the hooks it needs, exactly as a Rust
policy implements the ``weir_policy::Policy`` trait; every hook defaults to upstream's answer.
Its configuration fields are class attributes with type annotations and defaults, read from
the JSON configuration the host sends (camelCase keys, as in the Rust examples)::

    from weir_policy import Policy, Reads, export_policy, annotation

    class DrainAnnotation(Policy):
        annotation: str = "weir.dev/drain"

        def reads(self):
            return Reads(annotations=[self.annotation])

        def verdict(self, ctx, verdict):
            if annotation(verdict.pod, self.annotation) == "true":
                verdict.ready = False

    export_policy(DrainAnnotation)

:meth:`Policy.reads` says which pod fields the hooks read: only those cross from weir's
engine into Python, which is most of what a call costs. It defaults to everything.

The module holding the policy is named ``policy`` (``policy.py``); ``weir_policy.component``
is the module componentize-py builds (world ``hooks`` of ``wit/hooks/v0.2``), and
``weir policy build`` composes the result with upstream's engine into an ordinary guest.
"""

from __future__ import annotations

import copy
import json
import typing
from dataclasses import dataclass, field
from typing import Any, List, Optional, Type, Union

from wit_world.exports import policy as hooks
from wit_world.imports import log, types

Output = hooks.Output
"""Which output a pass computes: ``Output.ENDPOINTS`` or ``Output.ENDPOINT_SLICES``."""

Family = hooks.Family
"""An address family: ``Family.IPV4`` or ``Family.IPV6``."""

Pod = types.Pod
Service = types.Service
EndpointAddress = types.EndpointAddress
EndpointPort = types.EndpointPort

__all__ = [
    "ALL",
    "ConfigError",
    "Context",
    "EndpointAddress",
    "EndpointPort",
    "Family",
    "Output",
    "Pod",
    "Policy",
    "Reads",
    "Service",
    "Verdict",
    "annotation",
    "debug",
    "error",
    "export_policy",
    "info",
    "label",
    "warn",
]


class ConfigError(ValueError):
    """A configuration that does not fit the policy's fields."""


ALL = "all"
"""In :class:`Reads`: every label, every annotation or every pod field."""

POD_FIELDS = {
    "uid": hooks.PodFields.UID,
    "node_name": hooks.PodFields.NODE_NAME,
    "hostname": hooks.PodFields.HOSTNAME,
    "subdomain": hooks.PodFields.SUBDOMAIN,
    "pod_ip": hooks.PodFields.POD_IPS,
    "pod_ips": hooks.PodFields.POD_IPS,
    "phase": hooks.PodFields.PHASE,
    "conditions": hooks.PodFields.CONDITIONS,
    "terminating": hooks.PodFields.TERMINATING,
    "node_exists": hooks.PodFields.NODE_EXISTS,
    "zone": hooks.PodFields.ZONE,
    "container_ports": hooks.PodFields.CONTAINER_PORTS,
}
"""The :class:`Pod` attributes :class:`Reads` can name beyond ``namespace``, ``name``,
``labels`` and ``annotations``."""


@dataclass
class Reads:
    """What the hooks read of each pod, under one configuration (:meth:`Policy.reads`).

    Every pod carries its ``namespace`` and ``name``; anything not named here arrives empty
    (``""``, ``[]``, ``False`` or ``None``). Fields default to nothing, so a policy names
    exactly what it reads::

        Reads(annotations=["weir.dev/drain"])
        Reads(labels=["tier"], fields=["node_name"])
    """

    labels: Union[List[str], str] = field(default_factory=list)
    """The label keys whose entries the pods carry, or :data:`ALL`."""
    annotations: Union[List[str], str] = field(default_factory=list)
    """The annotation keys whose entries the pods carry, or :data:`ALL`."""
    fields: Union[List[str], str] = field(default_factory=list)
    """The other :class:`Pod` attributes the hooks read (``"node_name"``, ``"zone"``,
    ``"conditions"``, ...: the keys of :data:`POD_FIELDS`), or :data:`ALL`."""
    addresses: bool = False
    """Whether :attr:`Verdict.address` carries upstream's address (else ``None``)."""

    @classmethod
    def everything(cls) -> "Reads":
        """Every field of every pod, and every address: what a policy that does not say gets."""
        return cls(labels=ALL, annotations=ALL, fields=ALL, addresses=True)


@dataclass
class Context:
    """What a hook knows about the pass it is asked in (the Rust SDK's ``Context``)."""

    service: Service
    """The Service being reconciled."""
    output: Output
    """The output computed."""
    family: Family
    """For the Endpoints the Service's primary IP family; for slices the slices' address type."""


@dataclass(slots=True)
class Verdict:
    """One pod's endpoint as the pass will publish it (the Rust SDK's ``Verdict``).

    Upstream's values come in; a hook changes them in place.
    """

    pod: Pod
    """The pod."""
    include: bool
    """Whether the pod is published; ``False`` leaves it out of this pass."""
    ready: bool
    """``addresses`` rather than ``notReadyAddresses`` in the Endpoints; ``conditions.ready``."""
    serving: bool
    """``conditions.serving`` in a slice."""
    terminating: bool
    """``conditions.terminating`` in a slice."""
    address: Optional[EndpointAddress]
    """``ip``, ``hostname``, ``nodeName`` and ``targetRef``; ``None`` unless :meth:`Policy.reads`
    says ``addresses=True``. Setting it replaces upstream's address."""


class Policy:
    """Upstream's endpoint and EndpointSlice controllers, unchanged until a subclass says so.

    Annotated class attributes are the configuration: each is read from the camelCase key of
    the configuration object (``override_publish_not_ready`` from ``overridePublishNotReady``),
    checked against its annotation (``str``, ``bool``, ``int``, ``float``, ``List[str]``, ...),
    and keeps its default when absent. Unknown keys are refused, so a configuration meant for
    another policy is not silently ignored.
    """

    def __init__(self, **fields: Any) -> None:
        for name, value in fields.items():
            setattr(self, name, value)

    @classmethod
    def from_config(cls, config: str) -> "Policy":
        """The policy configured by ``config`` (JSON text; empty for the defaults).

        Raises :class:`ConfigError` naming the problem.
        """
        if not config.strip():
            return cls()
        try:
            data = json.loads(config)
        except ValueError as e:
            raise ConfigError(f"invalid policy configuration: {e}") from None
        if not isinstance(data, dict):
            raise ConfigError(
                f"invalid policy configuration: expected an object, found {_kind(data)}"
            )
        fields = _config_fields(cls)
        values = {}
        for key, value in data.items():
            name = _snake_case(key)
            if name not in fields:
                expected = ", ".join(f"`{_camel_case(f)}`" for f in fields) or "none"
                raise ConfigError(
                    f"invalid policy configuration: unknown field `{key}`, expected one of {expected}"
                )
            values[name] = _check(key, value, fields[name])
        return cls(**values)

    def validate(self) -> None:
        """Checks the configuration before any hook runs; raise ``ValueError`` to refuse it."""

    def reads(self) -> Reads:
        """What the hooks read of each pod (:class:`Reads`); by default everything. Naming
        only what the hooks read makes each call several times cheaper."""
        return Reads.everything()

    def include(self, ctx: Context, pod: Pod) -> bool:
        """Whether ``pod`` takes part at all; ``False`` leaves it out as if the Service's
        selector did not match it (no endpoint, no port group, no missing-Node error)."""
        return True

    def ports(self, ctx: Context, pod: Pod, ports: List[EndpointPort]) -> None:
        """Changes the ports ``pod`` serves, in place. Upstream's come in, in Service port order."""

    def verdict(self, ctx: Context, verdict: Verdict) -> None:
        """Changes one pod's endpoint in place. Not asked for a pod without an IP of the family."""

    def verdicts(self, ctx: Context, verdicts: List[Verdict]) -> None:
        """Changes the endpoints of one pass together, after :meth:`verdict` (without the pods
        it left out), for decisions over the whole set such as a panic threshold."""


_exported: Optional[Type[Policy]] = None


def export_policy(cls: Type[Policy]) -> Type[Policy]:
    """Makes ``cls`` the policy the component runs (the Rust SDK's ``export_policy!``)."""
    global _exported
    if not (isinstance(cls, type) and issubclass(cls, Policy)):
        raise TypeError(f"export_policy takes a subclass of weir_policy.Policy, not {cls!r}")
    _exported = cls
    return cls


def exported_policy() -> Type[Policy]:
    """The class given to :func:`export_policy`, or ``Policy`` (upstream) when none was."""
    return _exported or Policy


def label(obj: Pod | Service, key: str) -> Optional[str]:
    """The value of the label ``key`` of a pod or Service, or ``None``."""
    return _lookup(obj.labels, key)


def annotation(obj: Pod | Service, key: str) -> Optional[str]:
    """The value of the annotation ``key`` of a pod or Service, or ``None``."""
    return _lookup(obj.annotations, key)


def debug(message: str) -> None:
    """Logs ``message`` through the host at debug level."""
    log.write(log.Level.DEBUG, message)


def info(message: str) -> None:
    """Logs ``message`` through the host at info level."""
    log.write(log.Level.INFO, message)


def warn(message: str) -> None:
    """Logs ``message`` through the host at warn level."""
    log.write(log.Level.WARN, message)


def error(message: str) -> None:
    """Logs ``message`` through the host at error level."""
    log.write(log.Level.ERROR, message)


def reads_of(policy: Policy) -> hooks.Reads:
    """``policy``'s :meth:`Policy.reads` as the hooks contract says it. Raises
    :class:`ConfigError` for a field that is not a :class:`Pod` attribute."""
    said = policy.reads()
    if not isinstance(said, Reads):
        raise ConfigError(f"reads() must return a weir_policy.Reads, not {said!r}")
    if said.fields == ALL:
        fields = hooks.PodFields(0)
        for flag in POD_FIELDS.values():
            fields |= flag
    else:
        fields = hooks.PodFields(0)
        for name in said.fields:
            if name not in POD_FIELDS:
                expected = ", ".join(f"`{f}`" for f in POD_FIELDS)
                raise ConfigError(f"reads(): unknown pod field `{name}`, expected one of {expected}")
            fields |= POD_FIELDS[name]
    return hooks.Reads(
        None if said.labels == ALL else list(said.labels),
        None if said.annotations == ALL else list(said.annotations),
        fields,
        _overrides(policy, "ports"),
        said.addresses,
    )


_PRESENT, _READY, _SERVING, _TERMINATING, _CANDIDATE = 1, 2, 4, 8, 16
"""The bits of a pod's byte in a pass (``candidates`` in wit/hooks/v0.2/hooks.wit)."""


def pods_of(sync: hooks.Sync) -> List[Pod]:
    """The sync's pods as :class:`Pod` records, from its columns; a field the policy does not
    read is empty (``""``, ``[]``, ``False`` or ``None``)."""
    c = sync.pods
    namespace = sync.service.namespace
    count = len(c.names)

    def column(values, empty):
        return values if values else [empty] * count

    # Lists are made per pod, so that no two pods share one.
    def lists(values):
        return values if values else [[] for _ in range(count)]

    return [
        Pod(namespace, *fields)
        for fields in zip(
            c.names,
            column(c.uids, ""),
            lists(c.labels),
            lists(c.annotations),
            column(c.node_names, ""),
            column(c.hostnames, ""),
            column(c.subdomains, ""),
            column(c.pod_ip, None),
            lists(c.pod_ips),
            column(c.phases, ""),
            lists(c.conditions),
            column(c.terminating, False),
            column(c.node_exists, False),
            column(c.zones, None),
            lists(c.container_ports),
        )
    ]


def decide(
    policy: Policy,
    sync: hooks.Sync,
    pass_: hooks.Pass,
    candidates: hooks.Candidates,
    pods: Optional[List[Pod]] = None,
) -> List[hooks.Change]:
    """Answers one pass with ``policy``'s hooks, in the Rust SDK's order: ``include``, then
    ``ports`` and ``verdict`` per pod, then ``verdicts`` over the pass. Returns the changes
    alone; a hook the policy does not override is not called. ``pods`` is
    :func:`pods_of` ``sync``, made once per sync by the caller (made here when ``None``)."""
    wants_include = _overrides(policy, "include")
    wants_ports = _overrides(policy, "ports")
    wants_verdict = _overrides(policy, "verdict")
    wants_verdicts = _overrides(policy, "verdicts")
    if not (wants_include or wants_ports or wants_verdict or wants_verdicts):
        return []
    if pods is None:
        pods = pods_of(sync)
    ctx = Context(service=sync.service, output=pass_.output, family=pass_.family)
    upstream_ports = candidates.ports
    addresses = candidates.addresses
    wants_endpoint = wants_verdict or wants_verdicts
    changes: List[hooks.Change] = []
    # (pod index, verdict, upstream's bits, upstream's address, changed ports)
    kept = []
    for i, bits in enumerate(candidates.pods):
        if not bits & _CANDIDATE:
            continue
        pod = pods[i]
        if wants_include and not policy.include(ctx, pod):
            changes.append(hooks.Change(i, False, None, None))
            continue
        ports = None
        if wants_ports:
            ports = list(upstream_ports[i])
            policy.ports(ctx, pod, ports)
            if ports == upstream_ports[i]:
                ports = None
        if wants_endpoint and bits & _PRESENT:
            address = addresses[i] if addresses else None
            verdict = Verdict(
                pod,
                True,
                bits & _READY != 0,
                bits & _SERVING != 0,
                bits & _TERMINATING != 0,
                None if address is None else copy.deepcopy(address),
            )
            if wants_verdict:
                policy.verdict(ctx, verdict)
            kept.append((i, verdict, bits, address, ports))
        elif ports is not None:
            kept.append((i, None, bits, None, ports))
    if wants_verdicts:
        policy.verdicts(ctx, [k[1] for k in kept if k[1] is not None and k[1].include])
    for i, verdict, bits, address, ports in kept:
        endpoint = None
        if verdict is not None and (
            not verdict.include
            or verdict.ready != (bits & _READY != 0)
            or verdict.serving != (bits & _SERVING != 0)
            or verdict.terminating != (bits & _TERMINATING != 0)
            or verdict.address != address
        ):
            endpoint = hooks.Endpoint(
                verdict.include,
                verdict.ready,
                verdict.serving,
                verdict.terminating,
                None if verdict.address == address else verdict.address,
            )
        if endpoint is not None or ports is not None:
            changes.append(hooks.Change(i, True, ports, endpoint))
    return changes


def _overrides(policy: Policy, hook: str) -> bool:
    """Whether ``policy``'s class overrides the hook named ``hook``."""
    return getattr(type(policy), hook) is not getattr(Policy, hook)


def _lookup(entries: List[types.KeyValue], key: str) -> Optional[str]:
    for entry in entries:
        if entry.key == key:
            return entry.value
    return None


def _config_fields(cls: type) -> dict:
    """The annotated attributes of ``cls`` and its bases (not ``_private`` or ``ClassVar``
    ones), by name, with their types."""
    return {
        name: hint
        for name, hint in typing.get_type_hints(cls).items()
        if not name.startswith("_") and typing.get_origin(hint) is not typing.ClassVar
    }


def _check(key: str, value: Any, expected: Any) -> Any:
    """``value`` when it has the ``expected`` type, else a :class:`ConfigError` naming ``key``."""
    if expected is Any:
        return value
    origin = typing.get_origin(expected)
    if origin in (list, List):
        (item,) = typing.get_args(expected) or (Any,)
        if not isinstance(value, list):
            raise _mismatch(key, value, "a list")
        return [_check(f"{key}[{i}]", v, item) for i, v in enumerate(value)]
    if origin is typing.Union:
        args = typing.get_args(expected)
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is not type(None):
                return _check(key, value, arg)
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is int and isinstance(value, bool):
        raise _mismatch(key, value, "an integer")
    if isinstance(expected, type) and not isinstance(value, expected):
        names = {str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
        raise _mismatch(key, value, names.get(expected, expected.__name__))
    return value


def _mismatch(key: str, value: Any, wanted: str) -> ConfigError:
    return ConfigError(
        f"invalid policy configuration: invalid type for `{key}`: {_kind(value)}, expected {wanted}"
    )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, (int, float)):
        return f"number `{value}`"
    if isinstance(value, str):
        return f"string {json.dumps(value)}"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _snake_case(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def _camel_case(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)
