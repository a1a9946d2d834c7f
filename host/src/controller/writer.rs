//! Writing Endpoints and Events through the Kubernetes API, or printing them in a dry run.
//! Every API write passes the leader-election [`WriteGate`] here, so none can bypass it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};

use crate::client::Clients;
use crate::leader::{GatedError, NotLeader, WriteGate};

/// Where decisions go.
#[derive(Clone)]
pub enum Writer {
    /// Write through the API server, while `gate` allows it: each output through its own
    /// client, Events through the shared one. Boxed: three clients outweigh the other variant.
    Api(Box<Clients>, WriteGate),
    /// Write nothing; print each decision as a JSON line on stdout.
    DryRun,
}

/// A write that was not made: refused by the gate, or failed at the API server.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// This replica may not write (leader election).
    #[error(transparent)]
    NotLeader(#[from] NotLeader),
    /// The API server refused or failed it.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

impl From<GatedError<kube::Error>> for WriteError {
    fn from(e: GatedError<kube::Error>) -> Self {
        match e {
            GatedError::NotLeader(e) => WriteError::NotLeader(e),
            GatedError::Write(e) => WriteError::Api(e),
        }
    }
}

/// What weir reads back from a write's response: the stored object's identity and version.
/// Only these are decoded; building the whole object (its addresses, its managedFields) from
/// every response would be most of what reading one costs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredMeta {
    /// `metadata.uid`.
    pub uid: Option<String>,
    /// `metadata.resourceVersion`.
    pub resource_version: Option<String>,
    /// `metadata.generation`.
    pub generation: Option<i64>,
}

/// A response body, of which only the metadata is decoded (serde skips the other fields).
#[derive(serde::Deserialize)]
struct StoredObject {
    #[serde(default)]
    metadata: StoredMeta,
}

/// A create or a replace.
enum Put<'a> {
    Create,
    Replace(&'a str),
}

/// Sends `object` as a create (POST) or replace (PUT by name) to its kind's collection in
/// `namespace` and decodes only the stored object's [`StoredMeta`]: what `Api::create` and
/// `Api::replace` send, without decoding the whole response.
async fn put<K>(
    client: &Client,
    namespace: &str,
    how: Put<'_>,
    object: &K,
) -> Result<StoredMeta, kube::Error>
where
    K: kube::Resource<DynamicType = ()> + serde::Serialize,
{
    let body = serde_json::to_vec(object).map_err(kube::Error::SerdeError)?;
    let collection = kube::core::Request::new(K::url_path(&(), Some(namespace)));
    let params = PostParams::default();
    let request = match how {
        Put::Create => collection.create(&params, body),
        Put::Replace(name) => collection.replace(name, &params, body),
    }
    .map_err(kube::Error::BuildRequest)?;
    let stored: StoredObject = client.request(request).await?;
    Ok(stored.metadata)
}

/// Result of one write.
#[derive(Debug)]
pub enum Written {
    /// Written; the stored object's identity and version.
    Stored(StoredMeta),
    /// Deleted.
    Deleted,
    /// There was nothing to delete.
    NotFound,
    /// Nothing was written (dry run).
    Skipped,
}

fn print(key: &str, action: &str, endpoints: Option<&core::Endpoints>) {
    let line = serde_json::json!({"key": key, "action": action, "endpoints": endpoints});
    println!("{line}");
}

impl Writer {
    /// Creates `ep` in `namespace`, or replaces the stored object (then `ep` carries the
    /// stored resourceVersion as precondition).
    pub async fn store(
        &self,
        key: &str,
        namespace: &str,
        ep: &core::Endpoints,
        create: bool,
    ) -> Result<Written, WriteError> {
        let Writer::Api(clients, gate) = self else {
            print(key, if create { "create" } else { "update" }, Some(ep));
            return Ok(Written::Skipped);
        };
        let name = ep.metadata.name.as_deref().unwrap_or_default();
        let how = if create {
            Put::Create
        } else {
            Put::Replace(name)
        };
        let stored = gate
            .guard(put(&clients.endpoints, namespace, how, ep))
            .await?;
        Ok(Written::Stored(stored))
    }

    /// Whether the Service `namespace/name` with this uid exists and is not being deleted,
    /// read from the API server (a quorum read), not from the cache. A dry run, and a read
    /// that fails, answer true: the caller then goes on as it would without asking.
    pub async fn service_exists(&self, namespace: &str, name: &str, uid: &str) -> bool {
        let Writer::Api(clients, _) = self else {
            return true;
        };
        let api: Api<core::Service> = Api::namespaced(clients.shared.clone(), namespace);
        match api.get_opt(name).await {
            Ok(Some(svc)) => {
                svc.metadata.deletion_timestamp.is_none()
                    && (uid.is_empty() || svc.metadata.uid.as_deref() == Some(uid))
            }
            Ok(None) => false,
            Err(error) => {
                tracing::warn!(%namespace, %name, %error, "reading the Service failed; assuming it exists");
                true
            }
        }
    }

    /// Deletes the Endpoints `namespace/name`; NotFound counts as success (spec §5.2).
    pub async fn delete(
        &self,
        key: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Written, WriteError> {
        match self {
            Writer::DryRun => {
                print(key, "delete", None);
                Ok(Written::Skipped)
            }
            Writer::Api(clients, gate) => {
                let api: Api<core::Endpoints> =
                    Api::namespaced(clients.endpoints.clone(), namespace);
                match gate.guard(api.delete(name, &DeleteParams::default())).await {
                    Ok(_) => Ok(Written::Deleted),
                    Err(GatedError::Write(kube::Error::Api(status))) if status.is_not_found() => {
                        Ok(Written::NotFound)
                    }
                    Err(e) => Err(e.into()),
                }
            }
        }
    }
}

fn print_slice(key: &str, action: &str, slice: serde_json::Value) {
    let line = serde_json::json!({"key": key, "action": action, "endpointSlice": slice});
    println!("{line}");
}

/// A slice write: what to send, and what to do with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceWrite {
    /// POST (the object has `generateName`).
    Create,
    /// PUT by name, with the stored resourceVersion as precondition.
    Update,
}

impl Writer {
    /// Creates or replaces an EndpointSlice; returns the stored object's identity and version
    /// (`None` in a dry run, where it prints the object as a JSON line instead).
    pub async fn store_slice(
        &self,
        key: &str,
        how: SliceWrite,
        slice: &EndpointSlice,
    ) -> Result<Option<StoredMeta>, WriteError> {
        let Writer::Api(clients, gate) = self else {
            let action = match how {
                SliceWrite::Create => "create",
                SliceWrite::Update => "update",
            };
            print_slice(key, action, serde_json::to_value(slice).unwrap_or_default());
            return Ok(None);
        };
        let namespace = slice.metadata.namespace.as_deref().unwrap_or_default();
        let put_how = match how {
            SliceWrite::Create => Put::Create,
            SliceWrite::Update => Put::Replace(slice.metadata.name.as_deref().unwrap_or_default()),
        };
        let stored = gate
            .guard(put(&clients.endpoint_slices, namespace, put_how, slice))
            .await?;
        Ok(Some(stored))
    }

    /// Deletes the EndpointSlice `namespace/name` if it still has `uid`; NotFound counts as
    /// success. Returns whether anything was deleted (false in a dry run).
    pub async fn delete_slice(
        &self,
        key: &str,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Result<bool, WriteError> {
        let Writer::Api(clients, gate) = self else {
            print_slice(
                key,
                "delete",
                serde_json::json!({"metadata": {"namespace": namespace, "name": name}}),
            );
            return Ok(false);
        };
        let api: Api<EndpointSlice> = Api::namespaced(clients.endpoint_slices.clone(), namespace);
        let params = DeleteParams {
            preconditions: (!uid.is_empty()).then(|| Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match gate.guard(api.delete(name, &params)).await {
            Ok(_) => Ok(true),
            Err(GatedError::Write(kube::Error::Api(status))) if status.is_not_found() => Ok(true),
            Err(e) => Err(e.into()),
        }
    }
}

/// Whether a create failed because the namespace is being deleted (spec §13.2).
pub fn is_namespace_terminating(error: &WriteError) -> bool {
    match error {
        WriteError::Api(kube::Error::Api(status)) => {
            status.is_forbidden()
                && status
                    .details
                    .as_ref()
                    .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
        }
        _ => false,
    }
}

/// Whether an error is worth retrying soon (conflict, throttling, server errors); every error
/// is retried with backoff anyway, this only picks the log level.
pub fn is_transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => {
            status.is_conflict() || status.code == 429 || status.code >= 500
        }
        _ => true,
    }
}

/// An events.k8s.io/v1 recorder reporting as `controller`; the instance is the Pod's name
/// (`POD_NAME`, set by the manifests in deploy/) when known, so replicas can be told apart.
pub fn event_recorder(client: Client, controller: &str) -> Recorder {
    Recorder::new(
        client,
        Reporter {
            controller: controller.into(),
            instance: std::env::var("POD_NAME").ok().filter(|n| !n.is_empty()),
        },
    )
}

/// Publishes an Event about `regarding`. Events are best effort: a failure is logged at debug
/// level, never returned. The note is cut to the API's 1 kB limit.
pub async fn publish(
    recorder: &Recorder,
    regarding: &core::ObjectReference,
    type_: EventType,
    reason: &str,
    action: &str,
    note: &str,
) {
    let mut note = note.to_string();
    if note.len() > 1024 {
        let mut end = 1021;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push_str("...");
    }
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(note),
        action: action.into(),
        secondary: None,
    };
    if let Err(e) = recorder.publish(&event, regarding).await {
        tracing::debug!(?regarding, reason, error = %e, "could not record event");
    }
}

/// Records Warning Events on Services, at most one per Service per `interval`, so a key that
/// keeps failing cannot flood the API server.
pub struct EventRecorder {
    recorder: Option<(Recorder, WriteGate)>,
    interval: Duration,
    last: Mutex<HashMap<String, Instant>>,
}

impl EventRecorder {
    /// A recorder writing through `writer` (nothing in a dry run).
    pub fn new(writer: Writer, interval: Duration) -> Self {
        EventRecorder {
            recorder: match writer {
                Writer::Api(clients, gate) => Some((
                    event_recorder(clients.shared, weir_policy::well_known::CONTROLLER_NAME),
                    gate,
                )),
                Writer::DryRun => None,
            },
            interval,
            last: Mutex::new(HashMap::new()),
        }
    }

    /// Records `reason`/`message` on the Service `namespace/name`, unless one was recorded
    /// for it within the interval. Failures to record are logged, never returned.
    pub async fn warn(&self, namespace: &str, name: &str, uid: &str, reason: &str, message: &str) {
        self.record(namespace, name, uid, true, reason, message)
            .await
    }

    /// Like [`EventRecorder::warn`], for a Warning or (`warning` false) a Normal Event.
    pub async fn record(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        warning: bool,
        reason: &str,
        message: &str,
    ) {
        let Some((recorder, gate)) = &self.recorder else {
            return;
        };

        let key = format!("{namespace}/{name}");
        {
            let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            if last
                .get(&key)
                .is_some_and(|t| now.duration_since(*t) < self.interval)
            {
                return;
            }
            last.insert(key, now);
        }
        let regarding = core::ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Service".into()),
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            uid: (!uid.is_empty()).then(|| uid.into()),
            ..core::ObjectReference::default()
        };
        let type_ = if warning {
            EventType::Warning
        } else {
            EventType::Normal
        };
        // Refused or cut short by the gate like every other write; events are best effort.
        let _ = gate
            .guard(async {
                publish(
                    recorder,
                    &regarding,
                    type_,
                    reason,
                    "SyncEndpoints",
                    message,
                )
                .await;
                Ok::<_, ()>(())
            })
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leader::WriteGate;

    /// Every API write asks the gate first: a standby's writer sends nothing (the client
    /// points where nothing listens, so a request that got out would fail differently), and
    /// once the gate opens the same writer does reach for the server.
    #[tokio::test]
    async fn every_api_write_passes_the_gate() {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let client = Client::try_from(config).unwrap();
        let gate = WriteGate::leased(Duration::from_secs(10));
        let writer = Writer::Api(Box::new(Clients::single(client)), gate.clone());
        let ep = core::Endpoints {
            metadata: kube::api::ObjectMeta {
                name: Some("web".into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let slice = EndpointSlice {
            metadata: ep.metadata.clone(),
            address_type: "IPv4".into(),
            ..Default::default()
        };
        let refused = |r: Result<(), WriteError>| matches!(r, Err(WriteError::NotLeader(_)));
        let attempts = |w: Writer| {
            let (ep, slice) = (ep.clone(), slice.clone());
            async move {
                vec![
                    w.store("ns/web", "ns", &ep, true).await.map(drop),
                    w.store("ns/web", "ns", &ep, false).await.map(drop),
                    w.delete("ns/web", "ns", "web").await.map(drop),
                    w.store_slice("ns/web", SliceWrite::Create, &slice)
                        .await
                        .map(drop),
                    w.store_slice("ns/web", SliceWrite::Update, &slice)
                        .await
                        .map(drop),
                    w.delete_slice("ns/web", "ns", "web-1", "uid")
                        .await
                        .map(drop),
                ]
            }
        };
        for (i, r) in attempts(writer.clone()).await.into_iter().enumerate() {
            assert!(refused(r), "write {i} got past a closed gate");
        }
        gate.renewed(tokio::time::Instant::now());
        for (i, r) in attempts(writer).await.into_iter().enumerate() {
            assert!(
                matches!(r, Err(WriteError::Api(_))),
                "write {i} should have gone to the (absent) server"
            );
        }
    }

    /// A write sends what `Api::create` and `Api::replace` send (method, path, the object as
    /// JSON) and reads back the stored object's uid, resourceVersion and generation from a
    /// full response, addresses and managedFields included.
    #[tokio::test]
    async fn writes_send_the_object_and_read_back_only_its_metadata() {
        use std::sync::Arc;

        type Seen = Arc<Mutex<Vec<(String, String, serde_json::Value)>>>;
        let seen: Seen = Arc::default();
        let log = seen.clone();
        let server = tower::service_fn(move |request: axum::http::Request<kube::client::Body>| {
            let log = log.clone();
            async move {
                let (parts, body) = request.into_parts();
                let bytes = body.collect_bytes().await?;
                let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                let mut stored = body.clone();
                stored["metadata"]["uid"] = "u-1".into();
                stored["metadata"]["resourceVersion"] = "42".into();
                stored["metadata"]["generation"] = 3.into();
                stored["metadata"]["managedFields"] =
                    serde_json::json!([{"manager": "weir", "fieldsV1": {"f:endpoints": {}}}]);
                log.lock().unwrap().push((
                    parts.method.to_string(),
                    parts.uri.path().to_string(),
                    body,
                ));
                Ok::<_, kube::Error>(axum::http::Response::new(kube::client::Body::from(
                    serde_json::to_vec(&stored).unwrap(),
                )))
            }
        });
        let client = Client::new(server, "default");
        let writer = Writer::Api(Box::new(Clients::single(client)), WriteGate::sole());
        let meta = kube::api::ObjectMeta {
            name: Some("web".into()),
            namespace: Some("ns".into()),
            ..Default::default()
        };
        let ep = core::Endpoints {
            metadata: meta.clone(),
            subsets: Some(vec![core::EndpointSubset {
                addresses: Some(vec![core::EndpointAddress {
                    ip: "10.0.0.1".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }]),
        };
        let slice = EndpointSlice {
            metadata: meta,
            address_type: "IPv4".into(),
            endpoints: Some(vec![k8s_openapi::api::discovery::v1::Endpoint {
                addresses: vec!["10.0.0.1".into()],
                ..Default::default()
            }]),
            ports: None,
        };
        let want = StoredMeta {
            uid: Some("u-1".into()),
            resource_version: Some("42".into()),
            generation: Some(3),
        };
        for create in [true, false] {
            match writer.store("ns/web", "ns", &ep, create).await.unwrap() {
                Written::Stored(stored) => assert_eq!(stored, want),
                other => panic!("{other:?}"),
            }
        }
        for how in [SliceWrite::Create, SliceWrite::Update] {
            let stored = writer.store_slice("ns/web", how, &slice).await.unwrap();
            assert_eq!(stored, Some(want.clone()));
        }
        let seen = seen.lock().unwrap().clone();
        let ep_json = serde_json::to_value(&ep).unwrap();
        let slice_json = serde_json::to_value(&slice).unwrap();
        assert_eq!(
            seen,
            vec![
                (
                    "POST".into(),
                    "/api/v1/namespaces/ns/endpoints".into(),
                    ep_json.clone()
                ),
                (
                    "PUT".into(),
                    "/api/v1/namespaces/ns/endpoints/web".into(),
                    ep_json
                ),
                (
                    "POST".into(),
                    "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices".into(),
                    slice_json.clone()
                ),
                (
                    "PUT".into(),
                    "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices/web".into(),
                    slice_json
                ),
            ]
        );
    }
}
