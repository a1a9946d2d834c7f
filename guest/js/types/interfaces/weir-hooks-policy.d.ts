/// <reference path="./weir-endpoints-types.d.ts" />
declare module 'weir:hooks/policy@0.2.0' {
  /**
   * Checks a policy configuration and says what the policy reads under it. An `err` refuses
   * the configuration, with that message: at load and at every swap the host keeps the last
   * good guest serving. The engine calls it at the start of every sync.
   */
  export function configure(config: string): Reads;
  /**
   * Starts a sync, before its first pass. The policy keeps `sync` for the passes that
   * follow; the next `begin` replaces it.
   */
  export function begin(sync: Sync): void;
  /**
   * Decides one pass of the sync `begin` started: the changes, in any order, at most one
   * per candidate. An `err`, or a change that does not fit the candidates, fails only this
   * Service key: the host retries it and writes nothing.
   */
  export function decide(pass: Pass, candidates: Candidates): Array<Change>;
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
   * The fields of `pod` beyond `namespace`, `name`, `labels` and `annotations`, one flag
   * each. A field the policy does not read arrives empty (`""`, `[]`, `false`, `none`).
   */
  export interface PodFields {
    /**
     * `uid`.
     */
    uid?: boolean,
    /**
     * `node-name`.
     */
    nodeName?: boolean,
    /**
     * `hostname`.
     */
    hostname?: boolean,
    /**
     * `subdomain`.
     */
    subdomain?: boolean,
    /**
     * `pod-ip` and `pod-ips`.
     */
    podIps?: boolean,
    /**
     * `phase`.
     */
    phase?: boolean,
    /**
     * `conditions`.
     */
    conditions?: boolean,
    /**
     * `terminating`.
     */
    terminating?: boolean,
    /**
     * `node-exists`.
     */
    nodeExists?: boolean,
    /**
     * `zone`.
     */
    zone?: boolean,
    /**
     * `container-ports`.
     */
    containerPorts?: boolean,
  }
  /**
   * What a policy reads, under one configuration. Every pod always carries its `namespace`
   * and `name`.
   */
  export interface Reads {
    /**
     * The label keys whose entries the pods carry; `none` for every label.
     */
    labels?: Array<string>,
    /**
     * The annotation keys whose entries the pods carry; `none` for every annotation.
     */
    annotations?: Array<string>,
    /**
     * The other pod fields the pods carry.
     */
    fields: PodFields,
    /**
     * Whether each pass sends upstream's ports of every candidate (`candidates.ports`).
     */
    ports: boolean,
    /**
     * Whether each pass sends upstream's address of every candidate that has an endpoint
     * (`candidates.addresses`).
     */
    addresses: boolean,
  }
  /**
   * One sync of one Service: what every pass of it shares.
   */
  export interface Sync {
    /**
     * The Service being reconciled.
     */
    service: Service,
    /**
     * The policy configuration, as the host sent it (`request.config`; empty when none).
     * `configure` accepted it before.
     */
    config: string,
    /**
     * The request's pods, in request order, each with only the fields `reads` names.
     * Passes refer to them by index.
     */
    pods: Array<Pod>,
  }
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
  }
  /**
   * The pods upstream would publish in one pass (not terminal, with an IP; terminating pods
   * only in slices or when the Service publishes not-ready addresses: §6, R2.4–R2.7), with
   * upstream's decision for each. Candidate `i` is the `i`th entry of every list.
   */
  export interface Candidates {
    /**
     * Each candidate's pod: its index in `sync.pods`.
     */
    pods: Uint32Array,
    /**
     * Each candidate's endpoint (§7, §9; R2.11–R2.18), as bits (one byte, not a record,
     * so that a whole pass crosses as one copy): 1, upstream gives the pod an endpoint
     * in this pass (when unset the pod has no IP of the pass's family, no other bit is
     * set, and no change may give it an endpoint); 2, ready to receive traffic
     * (`addresses` rather than `notReadyAddresses` in the Endpoints, `conditions.ready`
     * in a slice); 4, `conditions.serving`; 8, `conditions.terminating`.
     */
    endpoints: Uint8Array,
    /**
     * Each candidate's ports: each Service port the pod resolves (§5.7, §8; R3), in
     * Service port order. Empty (no entries at all) unless `reads.ports`.
     */
    ports: Array<Array<EndpointPort>>,
    /**
     * Each candidate's address (`ip` of the pass's family, `hostname`, `nodeName`,
     * `targetRef`), `none` for a candidate without an endpoint. Empty (no entries at all)
     * unless `reads.addresses`.
     */
    addresses: Array<EndpointAddress | undefined>,
  }
  /**
   * A candidate's endpoint as the policy publishes it (the Rust SDK's `Verdict`).
   */
  export interface Endpoint {
    /**
     * Whether the pod is published; `false` leaves it out of this pass after upstream
     * placed it (its port group stays).
     */
    publish: boolean,
    /**
     * Ready to receive traffic.
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
     * The new `ip`, `hostname`, `nodeName` and `targetRef`; `none` keeps upstream's.
     */
    address?: EndpointAddress,
  }
  /**
   * The policy's change to one candidate. A candidate without a change keeps upstream's
   * decision.
   */
  export interface Change {
    /**
     * The candidate's position in the pass.
     */
    candidate: number,
    /**
     * Whether the pod takes part at all; `false` leaves it out as if the Service's
     * selector did not match it (no endpoint, no port group, no missing-Node error), and
     * the other fields are ignored.
     */
    include: boolean,
    /**
     * The ports the pod serves; `none` keeps upstream's. A pod left without ports is kept
     * in the slices with `ports: []`, and in the Endpoints only when the Service is
     * headless and declares no ports.
     */
    ports?: Array<EndpointPort>,
    /**
     * The pod's endpoint; `none` keeps upstream's. Only for a candidate with an endpoint.
     */
    endpoint?: Endpoint,
  }
}
