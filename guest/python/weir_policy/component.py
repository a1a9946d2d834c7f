"""The module componentize-py builds: the ``policy`` export of world ``weir:hooks/hooks``.

It imports the author's module ``policy`` (``policy.py``), whose :func:`export_policy` call
names the policy class, and answers the hooks with it. The configuration is parsed once per
distinct text, so every sync under it shares one policy object; ``begin`` keeps the sync for
its passes.
"""

from typing import List, Optional, Tuple

import wit_world
from componentize_py_types import Err
from wit_world.exports import policy as hooks

import policy as _author_module  # noqa: F401  (its export_policy call registers the class)

import weir_policy

_configured: Optional[Tuple[str, weir_policy.Policy, hooks.Reads]] = None
_sync: Optional[hooks.Sync] = None
_pods: Optional[List[weir_policy.Pod]] = None
"""The sync's pods as records, made at its first pass that asks a hook."""


def _configure(config: str) -> Tuple[weir_policy.Policy, hooks.Reads]:
    """The policy configured by ``config``, validated, and what it reads; raises ``Err`` with
    the reason."""
    global _configured
    if _configured is not None and _configured[0] == config:
        return _configured[1], _configured[2]
    try:
        policy = weir_policy.exported_policy().from_config(config)
        policy.validate()
        reads = weir_policy.reads_of(policy)
    except Err:
        raise
    except Exception as e:  # a refusal, whatever the author raised it as
        raise Err(_reason(e)) from None
    _configured = (config, policy, reads)
    return policy, reads


def _reason(e: Exception) -> str:
    text = str(e)
    if isinstance(e, (ValueError, weir_policy.ConfigError)) and text:
        return text
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


class Policy(wit_world.exports.Policy):
    """The hooks, answered by the class given to ``weir_policy.export_policy``."""

    def configure(self, config: str) -> hooks.Reads:
        return _configure(config)[1]

    def begin(self, sync: hooks.Sync) -> None:
        global _sync, _pods
        _sync, _pods = sync, None

    def decide(self, pass_: hooks.Pass, candidates: hooks.Candidates) -> List[hooks.Change]:
        if _sync is None:
            raise Err("decide before begin")
        global _pods
        policy = _configure(_sync.config)[0]
        try:
            if _pods is None:
                _pods = weir_policy.pods_of(_sync)
            return weir_policy.decide(policy, _sync, pass_, candidates, _pods)
        except Exception as e:  # a bug in a hook fails this Service key, not the host
            raise Err(f"policy hook failed: {_reason(e)}") from None
