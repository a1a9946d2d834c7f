/// <reference path="./weir-endpoints-types.d.ts" />
declare module 'weir:hooks/policy@0.1.0' {
  /**
   * Checks a policy configuration before any pass. An `err` refuses it, with that message:
   * at load and at every swap the host keeps the last good guest serving.
   */
  export function validateConfig(config: string): void;
  /**
   * Decides one pass: one choice per candidate, in the same order. Returning the candidates'
   * own `ports` and `verdict` with `include: true` changes nothing. An `err`, or a list of
   * another length, fails only this Service key: the host retries it and writes nothing.
   */
  export function decide(pass: Pass, candidates: Array<Candidate>): Array<Choice>;
  export type Service = import('weir:endpoints/types@0.2.0').Service;
  export type Pod = import('weir:endpoints/types@0.2.0').Pod;
  export type EndpointAddress = import('weir:endpoints/types@0.2.0').EndpointAddress;
  export type EndpointPort = import('weir:endpoints/types@0.2.0').EndpointPort;
  /**
   * Which output a pass computes. Upstream's values in a pass already follow that output's
   * rules, so a policy that decides from the pod alone need not look at it.
   * # Variants
   * 
   * ## `"endpoints"`
   * 
   * The core/v1 Endpoints object.
   * ## `"endpoint-slices"`
   * 
   * The discovery.k8s.io/v1 EndpointSlices of the pass's `family`.
   */
  export type Output = 'endpoints' | 'endpoint-slices';
  /**
   * An address family.
   * # Variants
   * 
   * ## `"ipv4"`
   * 
   * IPv4.
   * ## `"ipv6"`
   * 
   * IPv6.
   */
  export type Family = 'ipv4' | 'ipv6';
  /**
   * One pass of a sync.
   */
  export interface Pass {
    /**
     * The output computed.
     */
    output: Output,
    /**
     * For the Endpoints the Service's primary IP family (§7.1); for slices the address
     * type of the slices being built.
     */
    family: Family,
    /**
     * The Service being reconciled.
     */
    service: Service,
    /**
     * The policy configuration, as the host sent it (`request.config`; empty when none).
     * `validate-config` accepted it before any pass.
     */
    config: string,
  }
  /**
   * One pod's endpoint as the pass will publish it (the Rust SDK's `Verdict`).
   */
  export interface Verdict {
    /**
     * Whether the pod is published; `false` leaves it out of this pass after upstream
     * placed it (its port group stays).
     */
    include: boolean,
    /**
     * Ready to receive traffic: `addresses` rather than `notReadyAddresses` in the
     * Endpoints, `conditions.ready` in a slice.
     */
    ready: boolean,
    /**
     * `conditions.serving` in a slice (not written to the Endpoints).
     */
    serving: boolean,
    /**
     * `conditions.terminating` in a slice (not written to the Endpoints).
     */
    terminating: boolean,
    /**
     * `ip`, `hostname`, `nodeName` and `targetRef`; `ip` is of the pass's family.
     */
    address: EndpointAddress,
  }
  /**
   * A pod upstream would publish in this pass (not terminal, with an IP; terminating pods
   * only in slices or when the Service publishes not-ready addresses: §6, R2.4–R2.7), with
   * upstream's decision for it.
   */
  export interface Candidate {
    /**
     * The pod, as the request carries it.
     */
    pod: Pod,
    /**
     * The ports upstream gives it: each Service port the pod resolves (§5.7, §8; R3), in
     * Service port order.
     */
    ports: Array<EndpointPort>,
    /**
     * Upstream's endpoint (§7, §9; R2.11–R2.18); `none` when the pod has no IP of the
     * pass's family, so it gets no endpoint in this pass.
     */
    verdict?: Verdict,
  }
  /**
   * The policy's answer for the candidate at the same position.
   */
  export interface Choice {
    /**
     * Whether the pod takes part at all; `false` leaves it out as if the Service's
     * selector did not match it (no endpoint, no port group, no missing-Node error).
     */
    include: boolean,
    /**
     * The ports the pod serves. A pod left without ports is kept in the slices with
     * `ports: []`, and in the Endpoints only when the Service is headless and declares no
     * ports.
     */
    ports: Array<EndpointPort>,
    /**
     * The pod's endpoint: `some` exactly when the candidate's `verdict` is `some`.
     */
    verdict?: Verdict,
  }
}
