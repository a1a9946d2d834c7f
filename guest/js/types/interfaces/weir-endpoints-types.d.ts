declare module 'weir:endpoints/types@0.2.0' {
  /**
   * A label, annotation or selector entry.
   */
  export interface KeyValue {
    /**
     * The map key, for example `app` or `app.kubernetes.io/name`.
     */
    key: string,
    /**
     * The map value (may be empty).
     */
    value: string,
  }
  /**
   * A Service port's `targetPort`: a number, or the name of a container port.
   */
  export type TargetPort = TargetPortNumber | TargetPortName;
  /**
   * A port number, used as it is (no container needs to declare it).
   */
  export interface TargetPortNumber {
    tag: 'number',
    val: number,
  }
  /**
   * A container port name, resolved against the pod's `container-ports`.
   */
  export interface TargetPortName {
    tag: 'name',
    val: string,
  }
  /**
   * One entry of a Service's `spec.ports`.
   */
  export interface ServicePort {
    /**
     * `name`; empty when the Service has a single unnamed port.
     */
    name: string,
    /**
     * `protocol`: `TCP`, `UDP` or `SCTP` as stored (the API server defaults it to `TCP`).
     */
    protocol: string,
    /**
     * `port`: the Service's own port number.
     */
    port: number,
    /**
     * `targetPort`; absent in the stored object means the API server defaulted it to `port`,
     * and the host sends `number(port)` in that case.
     */
    targetPort: TargetPort,
    /**
     * `appProtocol`, copied verbatim into the endpoint port.
     */
    appProtocol?: string,
  }
  /**
   * The parts of a core/v1 Service that endpoint policy reads.
   */
  export interface Service {
    /**
     * `metadata.namespace`.
     */
    namespace: string,
    /**
     * `metadata.name`; also the name of its Endpoints object.
     */
    name: string,
    /**
     * `metadata.uid`.
     */
    uid: string,
    /**
     * `metadata.labels`; copied onto the Endpoints and, minus the reserved keys, onto the
     * EndpointSlices (R4.25).
     */
    labels: Array<KeyValue>,
    /**
     * `metadata.annotations`, for policies that let Services opt in to behaviour.
     */
    annotations: Array<KeyValue>,
    /**
     * `metadata.creationTimestamp` in RFC 3339, if known.
     */
    creationTimestamp?: string,
    /**
     * `spec.selector`. `none` (absent or null) selects nothing and the controller leaves the
     * Endpoints alone; `some([])` (empty map) selects every pod of the namespace.
     */
    selector?: Array<KeyValue>,
    /**
     * `spec.type`: `ClusterIP`, `NodePort`, `LoadBalancer` or `ExternalName` (empty means
     * `ClusterIP`).
     */
    serviceType: string,
    /**
     * `spec.clusterIP`; `None` marks a headless Service.
     */
    clusterIp: string,
    /**
     * `spec.clusterIPs`.
     */
    clusterIps: Array<string>,
    /**
     * `spec.ipFamilies`, primary first: `IPv4` or `IPv6`.
     */
    ipFamilies: Array<string>,
    /**
     * `spec.ports`, in spec order.
     */
    ports: Array<ServicePort>,
    /**
     * `spec.publishNotReadyAddresses`.
     */
    publishNotReadyAddresses: boolean,
    /**
     * `spec.trafficDistribution` as stored (`PreferClose`, `PreferSameZone`,
     * `PreferSameNode`, or any other text the API server accepted), `none` when unset.
     * The topology-mode annotations are in `annotations` (R5.1–R5.3).
     */
    trafficDistribution?: string,
    /**
     * Whether `metadata.deletionTimestamp` is set: the Service is being deleted, and no new
     * EndpointSlices may be created for it (R4.22a).
     */
    deleting: boolean,
  }
  /**
   * A named port declared by a container of a pod.
   */
  export interface ContainerPort {
    /**
     * `name` of the port (only named ports are sent).
     */
    name: string,
    /**
     * `containerPort`.
     */
    port: number,
    /**
     * `protocol` as stored (`TCP` when the API server defaulted it).
     */
    protocol: string,
  }
  /**
   * One entry of a pod's `status.conditions`.
   */
  export interface PodCondition {
    /**
     * `type`, for example `Ready` or a readiness gate's condition type.
     */
    conditionType: string,
    /**
     * `status`: `True`, `False` or `Unknown`.
     */
    status: string,
    /**
     * `lastTransitionTime` in RFC 3339, if set.
     */
    lastTransitionTime?: string,
  }
  /**
   * The parts of a core/v1 Pod that endpoint policy reads.
   */
  export interface Pod {
    /**
     * `metadata.namespace`.
     */
    namespace: string,
    /**
     * `metadata.name`.
     */
    name: string,
    /**
     * `metadata.uid`.
     */
    uid: string,
    /**
     * `metadata.labels`.
     */
    labels: Array<KeyValue>,
    /**
     * `metadata.annotations`.
     */
    annotations: Array<KeyValue>,
    /**
     * `spec.nodeName` (empty when unscheduled).
     */
    nodeName: string,
    /**
     * `spec.hostname`.
     */
    hostname: string,
    /**
     * `spec.subdomain`.
     */
    subdomain: string,
    /**
     * `status.podIP`, if set.
     */
    podIp?: string,
    /**
     * `status.podIPs[*].ip`, in order.
     */
    podIps: Array<string>,
    /**
     * `status.phase`: `Pending`, `Running`, `Succeeded`, `Failed`, `Unknown` or empty.
     */
    phase: string,
    /**
     * `status.conditions`, in order.
     */
    conditions: Array<PodCondition>,
    /**
     * Whether `metadata.deletionTimestamp` is set.
     */
    terminating: boolean,
    /**
     * Whether a Node named `node-name` exists in the host's Node cache. Always `false` for
     * an unscheduled pod (empty `node-name`). The slice controller skips a pod whose Node
     * is missing unless the Service publishes not-ready addresses (R2.10).
     */
    nodeExists: boolean,
    /**
     * The `topology.kubernetes.io/zone` label of the pod's Node, when the Node exists and
     * the label is non-empty (R2.17).
     */
    zone?: string,
    /**
     * Named ports that a named `targetPort` can resolve to, in lookup order: every
     * container's ports first, then those of init containers with `restartPolicy: Always`
     * (sidecars). Regular init containers are left out.
     */
    containerPorts: Array<ContainerPort>,
  }
  /**
   * A core/v1 ObjectReference, as Endpoints addresses carry it.
   */
  export interface ObjectReference {
    /**
     * `kind`, `Pod` for addresses the controller builds.
     */
    kind: string,
    /**
     * `namespace`.
     */
    namespace: string,
    /**
     * `name`.
     */
    name: string,
    /**
     * `uid`.
     */
    uid: string,
    /**
     * `apiVersion` (the controller leaves it empty).
     */
    apiVersion: string,
    /**
     * `fieldPath` (the controller leaves it empty).
     */
    fieldPath: string,
  }
  /**
   * A core/v1 EndpointAddress.
   */
  export interface EndpointAddress {
    /**
     * `ip`, in canonical text form.
     */
    ip: string,
    /**
     * `hostname` (empty when unset).
     */
    hostname: string,
    /**
     * `nodeName`; the controller always sets it, possibly to an empty string.
     */
    nodeName?: string,
    /**
     * `targetRef`: the pod behind the address.
     */
    targetRef?: ObjectReference,
  }
  /**
   * A core/v1 EndpointPort.
   */
  export interface EndpointPort {
    /**
     * `name`, copied from the Service port.
     */
    name: string,
    /**
     * `port`: the resolved target port.
     */
    port: number,
    /**
     * `protocol`, copied from the Service port.
     */
    protocol: string,
    /**
     * `appProtocol`, copied from the Service port.
     */
    appProtocol?: string,
  }
  /**
   * A core/v1 EndpointSubset: addresses that share exactly the same ports.
   */
  export interface EndpointSubset {
    /**
     * `addresses`: ready addresses.
     */
    addresses: Array<EndpointAddress>,
    /**
     * `notReadyAddresses`.
     */
    notReadyAddresses: Array<EndpointAddress>,
    /**
     * `ports`; empty for a headless Service without ports.
     */
    ports: Array<EndpointPort>,
  }
  /**
   * A core/v1 Endpoints object, reduced to what the controller reads or writes. The host
   * keeps every other metadata field (owner references, finalizers, ...) of the stored object.
   */
  export interface Endpoints {
    /**
     * `metadata.namespace`.
     */
    namespace: string,
    /**
     * `metadata.name`; equal to the Service's name.
     */
    name: string,
    /**
     * `metadata.labels`.
     */
    labels: Array<KeyValue>,
    /**
     * `metadata.annotations`.
     */
    annotations: Array<KeyValue>,
    /**
     * `metadata.resourceVersion`; empty for an object that does not exist yet.
     */
    resourceVersion: string,
    /**
     * `subsets`.
     */
    subsets: Array<EndpointSubset>,
  }
  /**
   * A metadata.ownerReferences entry.
   */
  export interface OwnerReference {
    /**
     * `apiVersion`, `v1` for a Service.
     */
    apiVersion: string,
    /**
     * `kind`, `Service` for the slices the controller builds.
     */
    kind: string,
    /**
     * `name`.
     */
    name: string,
    /**
     * `uid`.
     */
    uid: string,
    /**
     * `controller`; absent and `false` differ.
     */
    controller?: boolean,
    /**
     * `blockOwnerDeletion`; absent and `false` differ.
     */
    blockOwnerDeletion?: boolean,
  }
  /**
   * A discovery.k8s.io/v1 EndpointConditions. Every field is optional in the API, and an
   * absent value differs from an explicit one (R4.10).
   */
  export interface EndpointConditions {
    /**
     * `ready`.
     */
    ready?: boolean,
    /**
     * `serving`.
     */
    serving?: boolean,
    /**
     * `terminating`.
     */
    terminating?: boolean,
  }
  /**
   * A discovery.k8s.io/v1 EndpointHints.
   */
  export interface EndpointHints {
    /**
     * `forZones[*].name`: zones this endpoint should serve.
     */
    forZones: Array<string>,
    /**
     * `forNodes[*].name`: nodes this endpoint should serve.
     */
    forNodes: Array<string>,
  }
  /**
   * One address of one pod of the request.
   */
  export interface PodIp {
    /**
     * Index into `request.pods`.
     */
    pod: number,
    /**
     * Index into that pod's `pod-ips`.
     */
    ip: number,
  }
  /**
   * An endpoint's `addresses`, `targetRef`, `nodeName` and `zone`, spelled out.
   */
  export interface EndpointLocation {
    /**
     * `addresses`, canonical text, normally exactly one.
     */
    addresses: Array<string>,
    /**
     * `targetRef`; `resourceVersion` is not carried (it is never compared, R4.10; see
     * `endpoint` for how the host keeps it).
     */
    targetRef?: ObjectReference,
    /**
     * `nodeName`.
     */
    nodeName?: string,
    /**
     * `zone`.
     */
    zone?: string,
  }
  /**
   * Where an endpoint's `addresses`, `targetRef`, `nodeName` and `zone` come from. Most
   * endpoints are exactly what the slice controller derives from a pod of the request
   * (R2.13–R2.17); naming that pod instead of repeating its strings keeps them from
   * crossing the boundary a second time, in the request's stored slices and in the
   * decision alike.
   */
  export type EndpointSource = EndpointSourcePod | EndpointSourceGiven;
  /**
   * The endpoint of `request.pods[pod]` at its address `pod-ips[ip]`: `addresses` is
   * that one address; `targetRef` is kind `Pod` with the pod's namespace, name and uid
   * (no apiVersion or fieldPath); `nodeName` is the pod's `node-name`, absent when
   * empty; `zone` is the pod's `zone`. The host sends a stored endpoint this way
   * exactly when all four fields match and it has neither `deprecatedTopology` nor a
   * `targetRef.resourceVersion`; a guest may return any endpoint this way, and an index
   * out of range refuses the decision.
   */
  export interface EndpointSourcePod {
    tag: 'pod',
    val: PodIp,
  }
  /**
   * Any other endpoint (an address a policy rewrote, a reference to something else, a
   * stale `nodeName`, ...), in full.
   */
  export interface EndpointSourceGiven {
    tag: 'given',
    val: EndpointLocation,
  }
  /**
   * A discovery.k8s.io/v1 Endpoint. `deprecatedTopology` and `targetRef.resourceVersion`
   * are not carried: the controller never reads them or sets them (R2.15, R2.20). A stored
   * endpoint with either is sent as `given`; a `given` endpoint in an update that reads as
   * one of them (the same four fields of `endpoint-location`) is that endpoint carried over,
   * and the host writes it with both fields as stored. Any other endpoint is written without
   * them, as the desired endpoint that replaces a stored one is (R4.8a).
   */
  export interface Endpoint {
    /**
     * `addresses`, `targetRef`, `nodeName` and `zone`.
     */
    source: EndpointSource,
    /**
     * `conditions`.
     */
    conditions: EndpointConditions,
    /**
     * `hostname`.
     */
    hostname?: string,
    /**
     * `hints`; `none` when absent.
     */
    hints?: EndpointHints,
  }
  /**
   * A discovery.k8s.io/v1 EndpointPort. Every field is optional in the API, and an absent
   * value differs from an empty one when slices are grouped by port set (R3.6).
   */
  export interface EndpointSlicePort {
    /**
     * `name`.
     */
    name?: string,
    /**
     * `port`.
     */
    port?: number,
    /**
     * `protocol`.
     */
    protocol?: string,
    /**
     * `appProtocol`.
     */
    appProtocol?: string,
  }
  /**
   * A discovery.k8s.io/v1 EndpointSlice, reduced to what the controller reads or writes.
   * The host keeps every other metadata field (finalizers, managedFields, ...) of a stored
   * object it updates.
   */
  export interface EndpointSlice {
    /**
     * `metadata.namespace`.
     */
    namespace: string,
    /**
     * `metadata.name`; empty in a create (the API server names it from `generate-name`).
     */
    name: string,
    /**
     * `metadata.generateName`; `<service name>-` for slices the controller creates.
     */
    generateName: string,
    /**
     * `metadata.labels`. `kubernetes.io/service-name` names the Service;
     * `endpointslice.kubernetes.io/managed-by` names the manager (R1.1, R1.2).
     */
    labels: Array<KeyValue>,
    /**
     * `metadata.annotations`.
     */
    annotations: Array<KeyValue>,
    /**
     * `metadata.ownerReferences`.
     */
    ownerReferences: Array<OwnerReference>,
    /**
     * `metadata.resourceVersion`; empty in a create. In an update it is the stored
     * slice's, sent by the host as a precondition.
     */
    resourceVersion: string,
    /**
     * Whether `metadata.deletionTimestamp` is set (stored slices only; such a slice is
     * invisible to the controller, R1.25).
     */
    deleting: boolean,
    /**
     * `addressType`: `IPv4`, `IPv6` or `FQDN` (`IP` on old objects).
     */
    addressType: string,
    /**
     * `endpoints`.
     */
    endpoints: Array<Endpoint>,
    /**
     * `ports`; `none` when absent, which groups like an empty list (R3.6, R10.4).
     */
    ports?: Array<EndpointSlicePort>,
  }
  /**
   * Allocatable CPU of the usable Nodes of one zone, for topology-aware hints (R5.10).
   */
  export interface ZoneCapacity {
    /**
     * The `topology.kubernetes.io/zone` value.
     */
    zone: string,
    /**
     * The zone's allocatable CPU, in millicores.
     */
    cpuMillis: bigint,
  }
  /**
   * The outputs the host writes for this key. A guest may skip computing the others; the
   * host ignores decisions for outputs it does not manage.
   */
  export interface Outputs {
    /**
     * core/v1 Endpoints (`weir run --manage endpoints`).
     */
    endpoints: boolean,
    /**
     * discovery.k8s.io/v1 EndpointSlices (`weir run --manage endpointslices`).
     */
    endpointSlices: boolean,
  }
  /**
   * Everything one reconcile of one Service key may read.
   */
  export interface Request {
    /**
     * The key being reconciled: the Service's namespace.
     */
    namespace: string,
    /**
     * The key being reconciled: the Service's name.
     */
    name: string,
    /**
     * The Service, or `none` when it no longer exists.
     */
    service?: Service,
    /**
     * The pods of the Service's namespace that its selector matches, in no particular
     * order. Empty when the Service is gone or has no selector.
     */
    pods: Array<Pod>,
    /**
     * The stored Endpoints of the same key, or `none` when there is none.
     */
    current?: Endpoints,
    /**
     * The value for the `endpoints.kubernetes.io/last-change-trigger-time` annotation that
     * the host's trigger-time tracker computed, or `none` to remove the annotation. It
     * applies to the Endpoints and to every EndpointSlice written (R4.27).
     */
    triggerTime?: string,
    /**
     * Opaque policy configuration (the text of `--policy-config`, or a case's `config`);
     * empty when none was given. The host checked it with `validate-config` when it
     * loaded the guest.
     */
    config: string,
    /**
     * The stored EndpointSlices of the key's namespace labelled
     * `kubernetes.io/service-name=<name>`, of every manager, in no particular order. The
     * guest decides which are its own (the default: managed-by
     * `endpointslice-controller.k8s.io`, R1.30, R1.31). Empty when the Service is gone
     * or the host does not manage EndpointSlices (`manage.endpoint-slices` false).
     */
    endpointSlices: Array<EndpointSlice>,
    /**
     * Most endpoints one EndpointSlice may hold (`--max-endpoints-per-slice`, 1..1000,
     * default 100).
     */
    maxEndpointsPerSlice: number,
    /**
     * Allocatable CPU per zone of the Nodes usable for topology-aware hints (R5.10), or
     * `none` when the host has no sufficient Node information (a usable Node without zone
     * or CPU, or no Node tracking at all).
     */
    zoneCapacities?: Array<ZoneCapacity>,
    /**
     * The outputs the host writes for this key.
     */
    manage: Outputs,
  }
  /**
   * What the host should do with the Endpoints of the key.
   */
  export type EndpointsDecision = EndpointsDecisionNone | EndpointsDecisionCreate | EndpointsDecisionUpdate | EndpointsDecisionDelete;
  /**
   * Nothing: the stored Endpoints are already right (or must be left alone).
   */
  export interface EndpointsDecisionNone {
    tag: 'none',
  }
  /**
   * Create these Endpoints (none exist yet).
   */
  export interface EndpointsDecisionCreate {
    tag: 'create',
    val: Endpoints,
  }
  /**
   * Replace the stored Endpoints with these; the host sends the stored resourceVersion
   * as a precondition.
   */
  export interface EndpointsDecisionUpdate {
    tag: 'update',
    val: Endpoints,
  }
  /**
   * Delete the Endpoints of the key.
   */
  export interface EndpointsDecisionDelete {
    tag: 'delete',
  }
  /**
   * Changes to the key's EndpointSlices. The host writes creates, then updates, then
   * deletes, and stops at the first failure (R4.22).
   */
  export interface SliceChanges {
    /**
     * New slices: `name` and `resource-version` empty, `generate-name` set.
     */
    create: Array<EndpointSlice>,
    /**
     * Replacements of stored slices, by `name`, carrying the stored `resource-version` as a
     * precondition. Only slices the guest's manager owns may be updated.
     */
    update: Array<EndpointSlice>,
    /**
     * Names of stored slices to delete.
     */
    'delete': Array<string>,
  }
  /**
   * An Event for the host to record on the Service.
   */
  export interface ServiceEvent {
    /**
     * `Warning`, or `Normal` when `false`.
     */
    warning: boolean,
    /**
     * `reason`, for example `TopologyAwareHintsDisabled`.
     */
    reason: string,
    /**
     * `message`.
     */
    message: string,
  }
  /**
   * What the host should do for the key.
   */
  export interface Decision {
    /**
     * The Endpoints object (`none` when the host does not manage Endpoints).
     */
    endpoints: EndpointsDecision,
    /**
     * The EndpointSlices (empty when the host does not manage them).
     */
    slices: SliceChanges,
    /**
     * Problems that do not stop the writes but fail the sync afterwards, for example a pod
     * skipped because its Node is missing (R2.10). The host writes the decision, records a
     * Warning event `FailedToUpdateEndpointSlices` and retries the key with backoff.
     */
    errors: Array<string>,
    /**
     * Events to record on the Service (topology hint events, R5.15).
     */
    events: Array<ServiceEvent>,
  }
}
