// drain-annotation in TypeScript: upstream behaviour, except that pods annotated as draining
// (by default `weir.dev/drain: "true"`) are published as not ready. Same configuration and
// cases as the Rust example (../README.md).
import { Policy, annotation, debug, exportPolicy, type Context, type Reads, type Verdict } from "weir-policy";

class DrainAnnotation extends Policy {
  /** The pod annotation that marks a draining pod. */
  annotation = "weir.dev/drain";
  /** The annotation value that means "draining"; any other value (or none) does not. */
  value = "true";
  /** Drain pods even when the Service publishes not-ready addresses. */
  overridePublishNotReady = false;

  validate(): void {
    if (this.annotation === "") throw new Error("annotation must not be empty");
  }

  // Only this annotation of each pod crosses into JavaScript.
  reads(): Reads {
    return { annotations: [this.annotation] };
  }

  verdict(ctx: Context, verdict: Verdict): void {
    const applies = !ctx.service.publishNotReadyAddresses || this.overridePublishNotReady;
    const pod = verdict.pod;
    if (applies && verdict.ready && annotation(pod, this.annotation) === this.value) {
      debug(`pod ${pod.namespace}/${pod.name} is draining: listed as not ready`);
      verdict.ready = false;
    }
  }
}

export const policy = exportPolicy(DrainAnnotation);
