"""node-allowlist in Python: upstream behaviour, but only pods on nodes whose names match one
of the configured glob patterns are published at all. Same configuration and cases as the Rust
example (``../README.md``)."""

from typing import List

from weir_policy import Context, Pod, Policy, Reads, debug, export_policy


def glob_match(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern`` (``*``: any run, possibly empty; ``?``: one
    character). Backtracks only to the last ``*``, so no pattern can blow up the deadline."""
    p, t = 0, 0
    star = None  # (position after the last `*`, text position it was tried at)
    while t < len(text):
        if p < len(pattern) and pattern[p] == "*":
            star = (p + 1, t)
            p += 1
        elif p < len(pattern) and pattern[p] in ("?", text[t]):
            p += 1
            t += 1
        elif star is not None:
            # Let the last `*` swallow one more character and retry.
            p, t = star[0], star[1] + 1
            star = (star[0], star[1] + 1)
        else:
            return False
    return all(c == "*" for c in pattern[p:])


class NodeAllowlist(Policy):
    nodes: List[str] = ["*"]
    """Glob patterns; a pod is published when its node name matches any of them."""

    def validate(self) -> None:
        if not self.nodes:
            raise ValueError('nodes must list at least one pattern (use ["*"] for every node)')

    def reads(self) -> Reads:
        # Only each pod's node name crosses into Python.
        return Reads(fields=["node_name"])

    def include(self, ctx: Context, pod: Pod) -> bool:
        allowed = any(glob_match(pattern, pod.node_name) for pattern in self.nodes)
        if not allowed:
            debug(f"pod {pod.namespace}/{pod.name} on node {pod.node_name!r} is not on an allowed node")
        return allowed


export_policy(NodeAllowlist)
