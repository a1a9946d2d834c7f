//! The protobuf watch against what kube-apiserver really sends: the streams in `testdata/`
//! were captured from kube-apiserver v1.36.3 (`testdata/README.md` says how), each in
//! protobuf and, at the same moment, in JSON. The JSON, decoded as kube-runtime decodes it,
//! is what the protobuf decode must match.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::Client;
use kube::core::WatchEvent;
use prost::Message;

use super::*;
use crate::controller::store::slices::NodeView;
use crate::controller::store::wire_node::WireNode;
use crate::controller::store::wire_node::protobuf::Node;
use crate::controller::store::wire_pod::WirePod;
use crate::controller::store::wire_pod::protobuf::Pod;

const WATCH_LIST_PB: &[u8] = include_bytes!("testdata/pods.watch-list.pb");
const WATCH_LIST_JSON: &str = include_str!("testdata/pods.watch-list.json");
const WATCH_PB: &[u8] = include_bytes!("testdata/pods.watch.pb");
const WATCH_JSON: &str = include_str!("testdata/pods.watch.json");
const NODES_WATCH_LIST_PB: &[u8] = include_bytes!("testdata/nodes.watch-list.pb");
const NODES_WATCH_LIST_JSON: &str = include_str!("testdata/nodes.watch-list.json");
const NODES_WATCH_PB: &[u8] = include_bytes!("testdata/nodes.watch.pb");
const NODES_WATCH_JSON: &str = include_str!("testdata/nodes.watch.json");
const INVALID_WATCH_LIST_PB: &[u8] = include_bytes!("testdata/invalid-watch-list.pb");

/// A stream of the watch events in `chunks`, as a fake server's body.
fn frames_of(chunks: Vec<Bytes>) -> Frames {
    let body: BoxStream<'static, Result<Bytes, kube::Error>> =
        futures::stream::iter(chunks.into_iter().map(Ok)).boxed();
    Frames::new(body)
}

/// Every event of a protobuf stream of `P` messages, fed in chunks of `chunk` bytes (frames
/// cross them).
async fn decode_all<P, K>(stream: &[u8], chunk: usize) -> Vec<Result<Decoded<K>, kube::Error>>
where
    P: Message + Default,
    K: From<P> + Resource,
{
    let chunks = stream
        .chunks(chunk)
        .map(Bytes::copy_from_slice)
        .collect::<Vec<_>>();
    let mut frames = frames_of(chunks);
    let mut events = Vec::new();
    while let Some(event) = frames.next::<P, K>().await {
        events.push(event);
    }
    events
}

/// Every event of a protobuf stream of `P` messages, comparable.
async fn seen_in_protobuf<P, K>(stream: &[u8], chunk: usize) -> Vec<Seen<K>>
where
    P: Message + Default,
    K: From<P> + Resource,
{
    decode_all::<P, K>(stream, chunk)
        .await
        .into_iter()
        .map(from_protobuf)
        .collect()
}

/// Every event of a JSON watch stream, decoded as kube-runtime decodes it, comparable.
fn seen_in_json<K: serde::de::DeserializeOwned + Clone>(stream: &str) -> Vec<Seen<K>> {
    stream
        .lines()
        .map(|line| from_json(serde_json::from_str(line).unwrap()))
        .collect()
}

/// One event of either encoding, comparable.
#[derive(Debug, PartialEq)]
enum Seen<K> {
    Applied(K),
    Deleted(K),
    Bookmark(Option<String>, bool),
}

fn from_protobuf<K>(event: Result<Decoded<K>, kube::Error>) -> Seen<K> {
    match event.unwrap() {
        Decoded::Applied(o) => Seen::Applied(o),
        Decoded::Deleted(o) => Seen::Deleted(o),
        Decoded::Bookmark { rv, initial_end } => Seen::Bookmark(rv, initial_end),
        Decoded::Error(status) => panic!("an error event: {status:?}"),
    }
}

fn from_json<K: Clone>(event: WatchEvent<K>) -> Seen<K> {
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) => Seen::Applied(o),
        WatchEvent::Deleted(o) => Seen::Deleted(o),
        WatchEvent::Bookmark(b) => Seen::Bookmark(
            Some(b.metadata.resource_version),
            b.metadata.annotations.contains_key(INITIAL_EVENTS_END),
        ),
        WatchEvent::Error(e) => panic!("an error event: {e:?}"),
    }
}

#[tokio::test]
async fn a_watch_list_decodes_to_the_same_pods_as_its_json() {
    for chunk in [1, 7, 4096, WATCH_LIST_PB.len()] {
        let protobuf = seen_in_protobuf::<Pod, WirePod>(WATCH_LIST_PB, chunk).await;
        let json = seen_in_json::<WirePod>(WATCH_LIST_JSON);
        assert_eq!(protobuf, json, "in chunks of {chunk} bytes");
    }
    // The capture holds what the comparison is for: a terminating pod with every field the
    // cache reads, a bare one, and the bookmark that ends the initial events.
    let events = seen_in_protobuf::<Pod, WirePod>(WATCH_LIST_PB, 4096).await;
    let Some(Seen::Applied(WirePod(web))) = events
        .iter()
        .find(|e| matches!(e, Seen::Applied(p) if p.0.metadata.name.as_deref() == Some("web-1")))
    else {
        panic!("no web-1 in {events:?}");
    };
    assert!(web.metadata.deletion_timestamp.is_some());
    assert_eq!(web.metadata.labels.as_ref().map(|l| l.len()), Some(2));
    let spec = web.spec.as_ref().unwrap();
    assert_eq!(spec.init_containers.as_ref().map(|c| c.len()), Some(2));
    assert_eq!(spec.containers[0].ports.as_ref().map(|p| p.len()), Some(3));
    assert_eq!(
        spec.containers[0].ports.as_ref().unwrap()[1].host_port,
        Some(8081)
    );
    let status = web.status.as_ref().unwrap();
    assert_eq!(status.pod_ips.as_ref().map(|ips| ips.len()), Some(2));
    assert_eq!(status.conditions.as_ref().map(|c| c.len()), Some(2));
    let Some(Seen::Applied(WirePod(bare))) = events
        .iter()
        .find(|e| matches!(e, Seen::Applied(p) if p.0.metadata.name.as_deref() == Some("bare")))
    else {
        panic!("no bare pod in {events:?}");
    };
    assert!(bare.metadata.labels.is_none());
    assert!(matches!(events.last(), Some(Seen::Bookmark(Some(_), true))));
}

#[tokio::test]
async fn a_watch_decodes_to_the_same_changes_as_its_json() {
    let protobuf = seen_in_protobuf::<Pod, WirePod>(WATCH_PB, 13).await;
    let json = seen_in_json::<WirePod>(WATCH_JSON);
    assert_eq!(protobuf, json);
    assert!(
        matches!(protobuf.last(), Some(Seen::Deleted(_))),
        "{protobuf:?}"
    );
}

#[tokio::test]
async fn a_node_watch_list_decodes_to_the_same_nodes_as_its_json() {
    for chunk in [1, 7, 4096, NODES_WATCH_LIST_PB.len()] {
        let protobuf = seen_in_protobuf::<Node, WireNode>(NODES_WATCH_LIST_PB, chunk).await;
        let json = seen_in_json::<WireNode>(NODES_WATCH_LIST_JSON);
        assert_eq!(protobuf, json, "in chunks of {chunk} bytes");
    }
    // The capture holds what the comparison is for: a ready Node with a zone and allocatable
    // CPU among other resources, a control-plane Node whose CPU the server canonicalised
    // (`1.5` to `1500m`), one with neither labels nor status, and the bookmark.
    let events = seen_in_protobuf::<Node, WireNode>(NODES_WATCH_LIST_PB, 4096).await;
    let views: BTreeMap<String, NodeView> = events
        .iter()
        .filter_map(|e| match e {
            Seen::Applied(WireNode(n)) => Some((n.metadata.name.clone()?, NodeView::from_node(n))),
            _ => None,
        })
        .collect();
    let view = |zone: Option<&str>, ready, cpu_millis, control_plane| NodeView {
        zone: zone.map(Into::into),
        ready,
        cpu_millis,
        control_plane,
    };
    assert_eq!(
        views,
        BTreeMap::from([
            ("bare".to_string(), view(None, false, 0, false)),
            (
                "control".to_string(),
                view(Some("zone-b"), false, 1500, true)
            ),
            (
                "zone-a-ready".to_string(),
                view(Some("zone-a"), true, 3500, false)
            ),
        ])
    );
    assert!(matches!(events.last(), Some(Seen::Bookmark(Some(_), true))));
}

#[tokio::test]
async fn a_node_watch_decodes_to_the_same_changes_as_its_json() {
    let protobuf = seen_in_protobuf::<Node, WireNode>(NODES_WATCH_PB, 13).await;
    let json = seen_in_json::<WireNode>(NODES_WATCH_JSON);
    assert_eq!(protobuf, json);
    // Three Nodes as they were, then a relabelled one, one turned ready, one deleted.
    assert_eq!(protobuf.len(), 6, "{protobuf:?}");
    assert!(
        matches!(&protobuf[5], Seen::Deleted(WireNode(n)) if n.metadata.name.as_deref() == Some("zone-a-ready")),
        "{protobuf:?}"
    );
}

/// A frame: the length, then the message.
fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = u32::try_from(message.len()).unwrap().to_be_bytes().to_vec();
    out.extend_from_slice(message);
    out
}

/// A watch event whose object is `object` (already enveloped, or not).
fn event(kind: &str, object: Vec<u8>) -> Vec<u8> {
    wire::WatchEvent {
        r#type: Some(kind.into()),
        object: Some(wire::RawExtension {
            raw: Some(object.into()),
        }),
    }
    .encode_to_vec()
}

fn enveloped(message: Vec<u8>) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend(
        wire::Unknown {
            raw: Some(message.into()),
            content_encoding: None,
        }
        .encode_to_vec(),
    );
    out
}

fn gone() -> Vec<u8> {
    let status = wire::Status {
        status: Some("Failure".into()),
        message: Some("too old resource version: 5 (374)".into()),
        reason: Some("Expired".into()),
        details: None,
        code: Some(410),
    };
    frame(&event("ERROR", enveloped(status.encode_to_vec())))
}

#[tokio::test]
async fn hostile_streams_are_errors_and_end_the_watch() {
    let cut = decode_all::<Pod, WirePod>(&frame(&[1, 2, 3, 4, 5])[..6], 5).await;
    assert_eq!(cut.len(), 1);
    assert!(
        matches!(&cut[0], Err(e) if e.to_string().contains("ended inside a frame")),
        "a stream cut inside a frame"
    );
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "a frame longer than any object",
            (u32::MAX).to_be_bytes().to_vec(),
            "at most",
        ),
        ("garbage", frame(&[0xff; 12]), "does not decode"),
        (
            "an object without the k8s prefix",
            frame(&event("ADDED", Pod::default().encode_to_vec())),
            "no k8s\\0 prefix",
        ),
        (
            "an unknown event type",
            frame(&event("RENAMED", enveloped(Pod::default().encode_to_vec()))),
            "unknown type",
        ),
    ];
    for (what, bytes, says) in cases {
        // A valid event after the bad one must not be read: the stream is out of step.
        let mut stream = bytes;
        stream.extend(WATCH_PB);
        let events = decode_all::<Pod, WirePod>(&stream, 5).await;
        assert_eq!(events.len(), 1, "{what}: {} events", events.len());
        let Err(e) = &events[0] else {
            panic!("{what}: decoded");
        };
        assert!(e.to_string().contains(says), "{what}: {e}");
    }
}

#[tokio::test]
async fn a_protobuf_error_body_is_the_servers_status() {
    let response = http::Response::builder()
        .status(422)
        .body(kube::client::Body::from(INVALID_WATCH_LIST_PB.to_vec()))
        .unwrap();
    let status = error_status(response).await;
    assert_eq!(status.code, 422);
    assert_eq!(status.reason, "Invalid");
    assert!(
        status.message.contains("sendInitialEvents"),
        "{}",
        status.message
    );
    let details = status.details.unwrap();
    assert_eq!(details.causes[0].field, "resourceVersionMatch");
}

/// A fake API server: answers each request with the next canned response, and records what
/// was asked.
/// What a fake server was asked: each request's URI and Accept header.
type Asked = Arc<Mutex<Vec<(String, String)>>>;

fn server(responses: Vec<http::Response<Vec<u8>>>) -> (Client, Asked) {
    let asked: Asked = Arc::default();
    let log = asked.clone();
    let responses = Arc::new(Mutex::new(VecDeque::from(responses)));
    let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
        let accept = request
            .headers()
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        log.lock()
            .unwrap()
            .push((request.uri().to_string(), accept));
        let next = responses.lock().unwrap().pop_front();
        async move {
            let response = next.unwrap_or_else(|| {
                http::Response::builder()
                    .status(503)
                    .body(b"no more answers".to_vec())
                    .unwrap()
            });
            Ok::<_, kube::Error>(response.map(kube::client::Body::from))
        }
    });
    (Client::new(service, "default"), asked)
}

fn protobuf_response(body: Vec<u8>) -> http::Response<Vec<u8>> {
    http::Response::builder()
        .header(http::header::CONTENT_TYPE, WATCH_MEDIA_TYPE)
        .body(body)
        .unwrap()
}

fn described(event: &watcher::Result<Event<WirePod>>) -> String {
    match event {
        Ok(Event::Init) => "init".into(),
        Ok(Event::InitApply(p)) => {
            format!("init-apply {}", p.0.metadata.name.as_deref().unwrap_or(""))
        }
        Ok(Event::InitDone) => "init-done".into(),
        Ok(Event::Apply(p)) => format!("apply {}", p.0.metadata.name.as_deref().unwrap_or("")),
        Ok(Event::Delete(p)) => format!("delete {}", p.0.metadata.name.as_deref().unwrap_or("")),
        Err(watcher::Error::WatchError(s)) => format!("error {}", s.code),
        Err(watcher::Error::WatchStartFailed(kube::Error::Api(s))) => {
            format!("start failed {}", s.code)
        }
        Err(e) => format!("failed: {e}"),
    }
}

#[tokio::test]
async fn a_watch_list_resumes_where_it_ended_and_lists_again_when_gone() {
    let (client, asked) = server(vec![
        protobuf_response(WATCH_LIST_PB.to_vec()),
        protobuf_response(WATCH_PB.to_vec()),
        protobuf_response(gone()),
        protobuf_response(WATCH_LIST_PB.to_vec()),
    ]);
    let events: Vec<String> = watch_list::<Pod, WirePod>(client, "/api/v1/pods".into())
        .take(16)
        .map(|e| described(&e))
        .collect()
        .await;
    assert_eq!(
        events,
        [
            "init",
            "init-apply p1",
            "init-apply bare",
            "init-apply web-1",
            "init-done",
            "apply bare",
            "apply bare",
            "delete bare",
            "error 410",
            "init",
            "init-apply p1",
            "init-apply bare",
            "init-apply web-1",
            "init-done",
            // The canned answers are spent: the fake server's 503 for the next watch.
            "start failed 503",
            "start failed 503",
        ]
    );
    let asked = asked.lock().unwrap();
    let (first, accept) = &asked[0];
    assert_eq!(accept, WATCH_MEDIA_TYPE);
    assert!(
        first.contains("sendInitialEvents=true")
            && first.contains("resourceVersionMatch=NotOlderThan"),
        "{first}"
    );
    // Resumed from the bookmark that ended the initial events, then from the last deletion.
    let bookmark = seen_in_json::<WirePod>(WATCH_LIST_JSON)
        .into_iter()
        .find_map(|e| match e {
            Seen::Bookmark(rv, true) => rv,
            _ => None,
        })
        .unwrap();
    assert!(
        asked[1].0.contains(&format!("resourceVersion={bookmark}")),
        "{}",
        asked[1].0
    );
    assert!(!asked[1].0.contains("sendInitialEvents"), "{}", asked[1].0);
    let deleted = match seen_in_json::<WirePod>(WATCH_JSON).pop() {
        Some(Seen::Deleted(p)) => p.0.metadata.resource_version.unwrap(),
        other => panic!("{other:?}"),
    };
    assert!(
        asked[2].0.contains(&format!("resourceVersion={deleted}")),
        "{}",
        asked[2].0
    );
    // After 410 Gone: a new watch-list.
    assert!(
        asked[3].0.contains("sendInitialEvents=true"),
        "{}",
        asked[3].0
    );
}

#[tokio::test]
async fn a_server_answering_json_is_told_apart() {
    let json = http::Response::builder()
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(WATCH_LIST_JSON.as_bytes().to_vec())
        .unwrap();
    let (client, _) = server(vec![json]);
    let first = watch_list::<Pod, WirePod>(client, "/api/v1/pods".into())
        .next()
        .await
        .unwrap();
    let error = first.expect_err("a start error");
    assert!(protobuf_refused(&error), "{error}");
    // A refusal of the watch-list itself is not mistaken for it.
    let (client, _) = server(vec![
        http::Response::builder()
            .status(422)
            .body(INVALID_WATCH_LIST_PB.to_vec())
            .unwrap(),
    ]);
    let first = watch_list::<Pod, WirePod>(client, "/api/v1/pods".into())
        .next()
        .await
        .unwrap();
    let error = first.expect_err("a start error");
    assert!(!protobuf_refused(&error), "{error}");
    assert!(
        matches!(&error, watcher::Error::WatchStartFailed(kube::Error::Api(s)) if s.code == 422),
        "{error}"
    );
}
