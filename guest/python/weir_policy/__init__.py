"""weir's Python policy SDK: upstream's endpoint behaviour, changed in a few lines.

A policy subclasses :class:`Policy` and overrides only the hooks it needs, exactly as a Rust
policy implements the ``weir_policy::Policy`` trait; every hook defaults to upstream's answer.
Its configuration fields are class attributes with type annotations and defaults, read from
the JSON configuration the host sends (camelCase keys, as in the Rust examples)::

    from weir_policy import Policy, export_policy, annotation

    class DrainAnnotation(Policy):
        annotation: str = "weir.dev/drain"

        def verdict(self, ctx, verdict):
            if annotation(verdict.pod, self.annotation) == "true":
                verdict.ready = False

    export_policy(DrainAnnotation)

The module holding the policy is named ``policy`` (``policy.py``); ``weir_policy.component``
is the module componentize-py builds (world ``hooks`` of ``wit/hooks/v0.1``), and
``weir policy build`` composes the result with upstream's engine into an ordinary guest.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass
from typing import Any, List, Optional, Type

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
    "ConfigError",
    "Context",
    "EndpointAddress",
    "EndpointPort",
    "Family",
    "Output",
    "Pod",
    "Policy",
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


@dataclass
class Context:
    """What a hook knows about the pass it is asked in (the Rust SDK's ``Context``)."""

    service: Service
    """The Service being reconciled."""
    output: Output
    """The output computed."""
    family: Family
    """For the Endpoints the Service's primary IP family; for slices the slices' address type."""


@dataclass
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
    address: EndpointAddress
    """``ip``, ``hostname``, ``nodeName`` and ``targetRef``."""


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


def decide(
    policy: Policy, pass_: hooks.Pass, candidates: List[hooks.Candidate]
) -> List[hooks.Choice]:
    """Answers one pass with ``policy``'s hooks, in the Rust SDK's order: ``include``, then
    ``ports`` and ``verdict`` per pod, then ``verdicts`` over the pass."""
    ctx = Context(service=pass_.service, output=pass_.output, family=pass_.family)
    choices: List[hooks.Choice] = []
    verdicts: List[Optional[Verdict]] = []
    for candidate in candidates:
        if not policy.include(ctx, candidate.pod):
            # The engine ignores ports and verdict of a pod left out, but the contract asks
            # for a verdict exactly when the candidate has one.
            choices.append(hooks.Choice(False, candidate.ports, candidate.verdict))
            verdicts.append(None)
            continue
        ports = list(candidate.ports)
        policy.ports(ctx, candidate.pod, ports)
        verdict = None
        if candidate.verdict is not None:
            v = candidate.verdict
            verdict = Verdict(
                candidate.pod,
                v.include,
                v.ready,
                v.serving,
                v.terminating,
                dataclasses.replace(v.address),
            )
            policy.verdict(ctx, verdict)
        choices.append(hooks.Choice(True, ports, None))
        verdicts.append(verdict)
    policy.verdicts(ctx, [v for v in verdicts if v is not None and v.include])
    for choice, candidate, verdict in zip(choices, candidates, verdicts):
        if choice.include and verdict is not None:
            choice.verdict = hooks.Verdict(
                verdict.include,
                verdict.ready,
                verdict.serving,
                verdict.terminating,
                verdict.address,
            )
    return choices


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
