"""drain-annotation in Python: upstream behaviour, except that pods annotated as draining (by
default ``weir.dev/drain: "true"``) are published as not ready. Same configuration and cases
as the Rust example (``../README.md``)."""

from weir_policy import Context, Policy, Reads, Verdict, annotation, debug, export_policy


class DrainAnnotation(Policy):
    annotation: str = "weir.dev/drain"
    """The pod annotation that marks a draining pod."""
    value: str = "true"
    """The annotation value that means "draining"; any other value (or none) does not."""
    override_publish_not_ready: bool = False
    """Drain pods even when the Service publishes not-ready addresses."""

    def validate(self) -> None:
        if not self.annotation:
            raise ValueError("annotation must not be empty")

    def reads(self) -> Reads:
        # Only this annotation of each pod crosses into Python.
        return Reads(annotations=[self.annotation])

    def verdict(self, ctx: Context, verdict: Verdict) -> None:
        applies = not ctx.service.publish_not_ready_addresses or self.override_publish_not_ready
        pod = verdict.pod
        if applies and verdict.ready and annotation(pod, self.annotation) == self.value:
            debug(f"pod {pod.namespace}/{pod.name} is draining: listed as not ready")
            verdict.ready = False


export_policy(DrainAnnotation)
