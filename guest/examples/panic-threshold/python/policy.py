"""panic-threshold in Python: upstream behaviour until too few of a Service's pods are ready;
then every published pod is listed as ready. Same configuration and cases as the Rust example
(``../README.md``)."""

from typing import List

from weir_policy import Context, Policy, Reads, Verdict, export_policy, warn


class PanicThreshold(Policy):
    threshold: float = 0.5
    """Panic when the ready share of the Service's pods is below this (0 to 1; 0 disables)."""

    def validate(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be between 0 and 1, got {self.threshold}")

    def reads(self) -> Reads:
        # The decision needs upstream's readiness alone, which every pass carries.
        return Reads()

    def verdicts(self, ctx: Context, verdicts: List[Verdict]) -> None:
        ready = sum(1 for v in verdicts if v.ready)
        total = len(verdicts)
        if total > 0 and ready < self.threshold * total:
            svc = ctx.service
            warn(
                f"{svc.namespace}/{svc.name}: only {ready} of {total} pods ready, below the "
                f"panic threshold {self.threshold}; publishing all as ready"
            )
            for v in verdicts:
                v.ready = True


export_policy(PanicThreshold)
