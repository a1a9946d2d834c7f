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
   * per candidate and none for another pod. An `err`, or a change that does not fit the candidates, fails only this
   * Service key: the host retries it and writes nothing.
   */
  export function decide(pass: Pass, candidates: Candidates): Array<Change>;
  export type Service = import('weir:endpoints/types@0.2.0').Service;
  export type KeyValue = import('weir:endpoints/types@0.2.0').KeyValue;
  export type PodCondition = import('weir:endpoints/types@0.2.0').PodCondition;
  export type ContainerPort = import('weir:endpoints/types@0.2.0').ContainerPort;
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
   * The fields of `weir:endpoints/types.pod` beyond `namespace`, `name`, `labels` and
   * `annotations`, one flag each: the columns of `pods` a policy reads.
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
   * What a policy reads, under one configuration.
   */
  export interface Reads {
    /**
     * The label keys whose entries `pods.labels` carries; `none` for every label.
     */
    labels?: Array<string>,
    /**
     * The annotation keys whose entries `pods.annotations` carries; `none` for every
     * annotation.
     */
    annotations?: Array<string>,
    /**
     * The other columns of `pods` that are filled.
     */
    fields: PodFields,
    /**
     * Whether each pass sends upstream's ports (`decide`'s `ports`).
     */
    ports: boolean,
    /**
     * Whether each pass sends upstream's addresses (`decide`'s `addresses`).
     */
    addresses: boolean,
  }
  /**
   * The request's pods, in request order, one column per field of
   * `weir:endpoints/types.pod` (see there for each field's meaning). Every pod is in the
   * Service's namespace. `names` has one entry per pod; `labels` and `annotations` one per
   * pod unless `reads` names no key of them (`some([])`), and then none; every other column
   * has one entry per pod when `reads.fields` names it, and none otherwise.
   */
  export interface Pods {
    /**
     * `name`.
     */
    names: Array<string>,
    /**
     * `labels`: the entries whose keys `reads.labels` names (all when it is `none`).
     */
    labels: Array<Array<KeyValue>>,
    /**
     * `annotations`: the entries whose keys `reads.annotations` names (all when `none`).
     */
    annotations: Array<Array<KeyValue>>,
    /**
     * `uid`.
     */
    uids: Array<string>,
    /**
     * `node-name`.
     */
    nodeNames: Array<string>,
    /**
     * `hostname`.
     */
    hostnames: Array<string>,
    /**
     * `subdomain`.
     */
    subdomains: Array<string>,
    /**
     * `pod-ip`.
     */
    podIp: Array<string | undefined>,
    /**
     * `pod-ips`.
     */
    podIps: Array<Array<string>>,
    /**
     * `phase`.
     */
    phases: Array<string>,
    /**
     * `conditions`.
     */
    conditions: Array<Array<PodCondition>>,
    /**
     * `terminating`.
     */
    terminating: Array<boolean>,
    /**
     * `node-exists`.
     */
    nodeExists: Array<boolean>,
    /**
     * `zone`.
     */
    zones: Array<string | undefined>,
    /**
     * `container-ports`.
     */
    containerPorts: Array<Array<ContainerPort>>,
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
     * The request's pods. Passes and changes name them by index.
     */
    pods: Pods,
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
   * One pass of a sync, one entry per pod of `sync.pods` in each list.
   * 
   * The candidates of a pass are the pods upstream would publish in it (not terminal, with
   * an IP; terminating pods only in slices or when the Service publishes not-ready
   * addresses: §6, R2.4–R2.7). Upstream's decision for each pod is its byte of `pods`, a sum
   * of bits (bytes, not records, so that a pass crosses as one copy):
   * 
   * | bit | meaning |
   * |---|---|
   * | 16 | a candidate; without it the byte is 0 and the pod takes no part in the pass |
   * | 1 | upstream gives it an endpoint (§7, §9; R2.11–R2.18); without it the pod has no IP of the pass's family, bits 2, 4 and 8 are unset, and no change may give it an endpoint |
   * | 2 | ready to receive traffic (`addresses` rather than `notReadyAddresses` in the Endpoints, `conditions.ready` in a slice) |
   * | 4 | `conditions.serving` in a slice |
   * | 8 | `conditions.terminating` in a slice |
   */
  export interface Candidates {
    /**
     * Each pod's bits.
     */
    pods: Uint8Array,
    /**
     * Each pod's ports: for a candidate each Service port the pod resolves (§5.7, §8;
     * R3), in Service port order; `[]` for another pod. Empty (no entries at all) unless
     * `reads.ports`.
     */
    ports: Array<Array<EndpointPort>>,
    /**
     * Each pod's address for an endpoint (`ip` of the pass's family, `hostname`,
     * `nodeName`, `targetRef`); `none` for a pod without an endpoint. Empty (no entries at
     * all) unless `reads.addresses`.
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
     * The candidate's pod: its index in `sync.pods`.
     */
    pod: number,
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
