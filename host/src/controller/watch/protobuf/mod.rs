//! Watch-lists in protobuf, as kube-apiserver serves kube-controller-manager's informers.
//!
//! kube-rs reads JSON only. For the pods, the resource whose volume dominates an informer's
//! start, weir asks for protobuf and reads it here: kube-apiserver spends about half the CPU
//! encoding a pod in protobuf that it spends in JSON, and a protobuf field is length-prefixed,
//! so the decoder steps over what weir does not keep (managedFields, container specs, statuses)
//! without reading it (docs/performance.md, "Side by side with kube-controller-manager").
//!
//! The stream (`application/vnd.kubernetes.protobuf;stream=watch`) is a sequence of frames:
//! a 4-byte big-endian length, then a `WatchEvent` message (the event's type, and its object as
//! raw bytes). The object is the 4-byte magic `k8s\0` followed by a `runtime.Unknown` envelope
//! (type meta, and the object's own message as `raw`). The field numbers below are those of
//! the `generated.proto` files of `k8s.io/apimachinery` (`pkg/runtime`, `pkg/apis/meta/v1`).
//!
//! Only the streaming initial list (watch-list, `sendInitialEvents=true`) is spoken here, with
//! the same states and events as kube-runtime's watcher, so the informer treats both alike. A
//! server that answers in anything but protobuf (weir-apiserver, or a proxy that rewrites
//! content types) gets a [`NOT_PROTOBUF`] start error, and the informer watches in JSON
//! instead; a server that refuses watch-lists gets paged lists in JSON.

use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures::StreamExt;
use futures::stream::BoxStream;
use http_body_util::BodyExt;
use kube::Client;
use kube::Resource;
use kube::core::Status;
use kube::core::params::WatchParams;
use kube::core::response::{StatusCause, StatusDetails, StatusSummary};
use kube::runtime::watcher::{self, Event};
use prost::Message;

/// The media type of a protobuf watch stream.
const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// What every protobuf response's content type starts with.
const PROTOBUF_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The prefix of every object in Kubernetes' protobuf encoding.
const MAGIC: &[u8; 4] = b"k8s\0";
/// The annotation of the bookmark that ends a watch-list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";
/// The server ends each watch after this long, as kube-runtime's watches (its default).
const WATCH_TIMEOUT_SECONDS: u32 = 290;
/// A watch silent for longer than its own timeout is dead: start another.
const IDLE_TIMEOUT: Duration = Duration::from_secs(WATCH_TIMEOUT_SECONDS as u64 + 5);
/// The largest frame weir reads. kube-apiserver keeps objects under etcd's request limit
/// (1.5 MiB by default); anything far larger is a broken stream, not an object.
const MAX_FRAME: usize = 64 << 20;
/// The largest error body read into a message.
const MAX_ERROR_BODY: usize = 64 << 10;

/// The HTTP status weir reports when a server answers a protobuf watch in another encoding:
/// 406 Not Acceptable, as a server that cannot encode protobuf at all answers.
pub const NOT_PROTOBUF: u16 = 406;

/// Whether `error` says the server does not serve this resource in protobuf.
pub fn protobuf_refused(error: &watcher::Error) -> bool {
    matches!(
        error,
        watcher::Error::WatchStartFailed(kube::Error::Api(status)) if status.code == NOT_PROTOBUF
    )
}

/// A watch-list of the collection at `url` (as `Api::resource_url` names it) in protobuf,
/// each object decoded as `P` and handed on as `K`: `Init`, one `InitApply` per object, then
/// `InitDone` once the server's bookmark ends the initial events, then `Apply` and `Delete`
/// until the watch ends, when it resumes from the last resourceVersion seen. Errors come out
/// as kube-runtime's watcher reports them, so its backoff and weir's relist rules apply
/// unchanged: a `410 Gone` starts over with a new watch-list.
pub fn watch_list<P, K>(
    client: Client,
    url: String,
) -> BoxStream<'static, watcher::Result<Event<K>>>
where
    P: Message + Default + 'static,
    K: From<P> + Resource + Send + 'static,
{
    futures::stream::unfold(
        (client, url, State::Empty),
        |(client, url, mut state)| async move {
            loop {
                let (event, next) = step::<P, K>(&client, &url, state).await;
                state = next;
                if let Some(event) = event {
                    return Some((event, (client, url, state)));
                }
            }
        },
    )
    .boxed()
}

/// [`watch_list`] of the collection `api` names: what an informer starts when it reads in
/// protobuf, each object decoded as `P`.
pub fn of_api<P, K>(api: &kube::Api<K>) -> BoxStream<'static, watcher::Result<Event<K>>>
where
    P: Message + Default + 'static,
    K: From<P> + Resource + Clone + Send + 'static,
{
    watch_list::<P, K>(api.clone().into_client(), api.resource_url().to_owned())
}

enum State {
    /// Nothing listed: the next step starts a watch-list.
    Empty,
    /// The watch-list's initial events are arriving.
    Initial(Frames),
    /// Listed up to `rv`, no watch open.
    Listed { rv: String },
    /// Watching from `rv`.
    Watching { rv: String, frames: Frames },
}

async fn step<P, K>(
    client: &Client,
    url: &str,
    state: State,
) -> (Option<watcher::Result<Event<K>>>, State)
where
    P: Message + Default,
    K: From<P> + Resource,
{
    match state {
        State::Empty => match start(client, url, None).await {
            Ok(frames) => (Some(Ok(Event::Init)), State::Initial(frames)),
            Err(e) => (Some(Err(watcher::Error::WatchStartFailed(e))), State::Empty),
        },
        State::Listed { rv } => match start(client, url, Some(&rv)).await {
            Ok(frames) => (None, State::Watching { rv, frames }),
            Err(e) => (
                Some(Err(watcher::Error::WatchStartFailed(e))),
                State::Listed { rv },
            ),
        },
        State::Initial(mut frames) => match frames.next::<P, K>().await {
            Some(Ok(Decoded::Applied(o))) => {
                (Some(Ok(Event::InitApply(o))), State::Initial(frames))
            }
            // A watch-list's initial events are all additions; a deletion among them is the
            // server's mistake, and the relist that follows the initial events settles it.
            Some(Ok(Decoded::Deleted(_))) => (None, State::Initial(frames)),
            Some(Ok(Decoded::Bookmark { rv, initial_end })) => match (initial_end, rv) {
                (true, Some(rv)) => (Some(Ok(Event::InitDone)), State::Watching { rv, frames }),
                (true, None) => (Some(Err(watcher::Error::NoResourceVersion)), State::Empty),
                (false, _) => (None, State::Initial(frames)),
            },
            Some(Ok(Decoded::Error(status))) => {
                let next = if status.code == 410 {
                    State::Empty
                } else {
                    State::Initial(frames)
                };
                (Some(Err(watcher::Error::WatchError(status))), next)
            }
            Some(Err(e)) => (
                Some(Err(watcher::Error::WatchFailed(e))),
                State::Initial(frames),
            ),
            // Ended before the initial events did: list again.
            None => (None, State::Empty),
        },
        State::Watching { rv, mut frames } => match frames.next::<P, K>().await {
            Some(Ok(Decoded::Applied(o))) => match o.meta().resource_version.clone() {
                Some(rv) if !rv.is_empty() => {
                    (Some(Ok(Event::Apply(o))), State::Watching { rv, frames })
                }
                _ => (Some(Err(watcher::Error::NoResourceVersion)), State::Empty),
            },
            Some(Ok(Decoded::Deleted(o))) => match o.meta().resource_version.clone() {
                Some(rv) if !rv.is_empty() => {
                    (Some(Ok(Event::Delete(o))), State::Watching { rv, frames })
                }
                _ => (Some(Err(watcher::Error::NoResourceVersion)), State::Empty),
            },
            Some(Ok(Decoded::Bookmark { rv: new, .. })) => {
                let rv = new.unwrap_or(rv);
                (None, State::Watching { rv, frames })
            }
            Some(Ok(Decoded::Error(status))) => {
                let next = if status.code == 410 {
                    State::Empty
                } else {
                    State::Watching { rv, frames }
                };
                (Some(Err(watcher::Error::WatchError(status))), next)
            }
            Some(Err(e)) => (
                Some(Err(watcher::Error::WatchFailed(e))),
                State::Watching { rv, frames },
            ),
            None => (None, State::Listed { rv }),
        },
    }
}

/// Opens a watch of `url` in protobuf: a watch-list from any state when `rv` is `None`, else a
/// watch from `rv`. The query is kube-runtime's own (`kube::core::Request::watch`).
async fn start(client: &Client, url: &str, rv: Option<&str>) -> Result<Frames, kube::Error> {
    let (params, rv) = match rv {
        Some(rv) => (WatchParams::default(), rv),
        // As kube-runtime's streaming lists: any state at least as new as "0", which the
        // watch cache serves.
        None => (WatchParams::streaming_lists(), "0"),
    };
    let (mut parts, body) = kube::core::Request::new(url)
        .watch(&params.timeout(WATCH_TIMEOUT_SECONDS), rv)
        .map_err(kube::Error::BuildRequest)?
        .into_parts();
    parts.headers.insert(
        http::header::ACCEPT,
        http::HeaderValue::from_static(WATCH_MEDIA_TYPE),
    );
    // kube-controller-manager's clients ask for uncompressed responses too; kube's
    // decompression also reads only the first gzip member of a stream.
    parts.headers.insert(
        http::header::ACCEPT_ENCODING,
        http::HeaderValue::from_static("identity"),
    );
    let request = http::Request::from_parts(parts, kube::client::Body::from(body));
    let response = client.send(request).await?;
    let status = response.status();
    if !status.is_success() {
        return Err(kube::Error::Api(Box::new(error_status(response).await)));
    }
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !content_type.starts_with(PROTOBUF_MEDIA_TYPE) {
        let message = format!("the API server answered a protobuf watch with {content_type:?}");
        return Err(kube::Error::Api(Box::new(
            Status::failure(&message, "NotAcceptable").with_code(NOT_PROTOBUF),
        )));
    }
    let body = response
        .into_body()
        .into_data_stream()
        .map(|chunk| chunk.map_err(|e| kube::Error::Service(Box::new(e))))
        .boxed();
    Ok(Frames::new(body))
}

/// The `Status` of a failed request: protobuf, JSON, or plain text, as the server sent it.
async fn error_status(response: http::Response<kube::client::Body>) -> Status {
    let code = response.status().as_u16();
    let mut body = Vec::new();
    let mut data = response.into_body().into_data_stream();
    while let Some(Ok(chunk)) = data.next().await {
        body.extend_from_slice(&chunk[..chunk.len().min(MAX_ERROR_BODY - body.len())]);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    let mut status = body
        .strip_prefix(MAGIC)
        .and_then(|envelope| {
            let unknown = wire::Unknown::decode(envelope).ok()?;
            wire::Status::decode(unknown.raw.unwrap_or_default()).ok()
        })
        .map(Status::from)
        .or_else(|| serde_json::from_slice::<Status>(&body).ok())
        .unwrap_or_else(|| {
            let text = String::from_utf8_lossy(&body);
            Status::failure(text.trim(), "Failed to parse error data")
        });
    if status.code == 0 {
        status.code = code;
    }
    status
}

/// One event of a watch, its object decoded.
enum Decoded<K> {
    Applied(K),
    Deleted(K),
    /// A bookmark: the resourceVersion the watch has reached, and whether it ends the initial
    /// events of a watch-list.
    Bookmark {
        rv: Option<String>,
        initial_end: bool,
    },
    Error(Box<Status>),
}

/// The frames of one watch response.
struct Frames {
    body: BoxStream<'static, Result<Bytes, kube::Error>>,
    buffer: BytesMut,
    /// A frame failed to decode: where the next one starts is unknown, so the stream is over.
    broken: bool,
}

impl Frames {
    fn new(body: BoxStream<'static, Result<Bytes, kube::Error>>) -> Self {
        Frames {
            body,
            buffer: BytesMut::new(),
            broken: false,
        }
    }

    /// The next event; `None` when the watch ended (or went silent past its timeout).
    async fn next<P, K>(&mut self) -> Option<Result<Decoded<K>, kube::Error>>
    where
        P: Message + Default,
        K: From<P> + Resource,
    {
        if self.broken {
            return None;
        }
        let frame = match self.frame().await? {
            Ok(frame) => frame,
            Err(e) => {
                self.broken = true;
                return Some(Err(e));
            }
        };
        let decoded = decode_event::<P, K>(frame);
        if decoded.is_err() {
            self.broken = true;
        }
        Some(decoded)
    }

    async fn frame(&mut self) -> Option<Result<Bytes, kube::Error>> {
        loop {
            if self.buffer.len() >= 4 {
                let length = u32::from_be_bytes([
                    self.buffer[0],
                    self.buffer[1],
                    self.buffer[2],
                    self.buffer[3],
                ]) as usize;
                if length > MAX_FRAME {
                    return Some(Err(invalid(format!(
                        "a watch frame of {length} bytes (at most {MAX_FRAME} are read)"
                    ))));
                }
                if self.buffer.len() >= 4 + length {
                    self.buffer.advance(4);
                    return Some(Ok(self.buffer.split_to(length).freeze()));
                }
                self.buffer.reserve(4 + length - self.buffer.len());
            }
            match tokio::time::timeout(IDLE_TIMEOUT, self.body.next()).await {
                Ok(Some(Ok(chunk))) => self.buffer.extend_from_slice(&chunk),
                Ok(Some(Err(e))) => return Some(Err(e)),
                Ok(None) if self.buffer.is_empty() => return None,
                Ok(None) => {
                    return Some(Err(invalid(format!(
                        "the watch ended inside a frame ({} bytes unread)",
                        self.buffer.len()
                    ))));
                }
                Err(_) => {
                    tracing::debug!(
                        seconds = IDLE_TIMEOUT.as_secs(),
                        "protobuf watch idle past its timeout; reconnecting"
                    );
                    return None;
                }
            }
        }
    }
}

fn invalid(message: String) -> kube::Error {
    kube::Error::ReadEvents(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        message,
    ))
}

/// Decodes one frame: a `WatchEvent` whose object is an enveloped `P` (or a `Status`).
fn decode_event<P, K>(frame: Bytes) -> Result<Decoded<K>, kube::Error>
where
    P: Message + Default,
    K: From<P> + Resource,
{
    let event = wire::WatchEvent::decode(frame)
        .map_err(|e| invalid(format!("a watch event does not decode: {e}")))?;
    let raw = event.object.and_then(|o| o.raw).unwrap_or_default();
    let kind = event.r#type.unwrap_or_default();
    let object = unwrap_envelope(raw, &kind)?;
    if kind == "ERROR" {
        let status = wire::Status::decode(object)
            .map_err(|e| invalid(format!("a watch error does not decode: {e}")))?;
        return Ok(Decoded::Error(Box::new(status.into())));
    }
    let does_not_decode = |e: prost::DecodeError| {
        invalid(format!("the object of a {kind} event does not decode: {e}"))
    };
    match kind.as_str() {
        "ADDED" | "MODIFIED" => Ok(Decoded::Applied(
            P::decode(object).map_err(does_not_decode)?.into(),
        )),
        "DELETED" => Ok(Decoded::Deleted(
            P::decode(object).map_err(does_not_decode)?.into(),
        )),
        // Read by its own message: `P` keeps only what its cache reads, which need not include
        // the annotation that ends a watch-list's initial events.
        "BOOKMARK" => {
            let meta = wire::Bookmark::decode(object)
                .map_err(does_not_decode)?
                .metadata
                .unwrap_or_default();
            Ok(Decoded::Bookmark {
                rv: meta.resource_version.filter(|rv| !rv.is_empty()),
                initial_end: meta
                    .annotations
                    .get(INITIAL_EVENTS_END)
                    .is_some_and(|v| v == "true"),
            })
        }
        other => Err(invalid(format!("a watch event of unknown type {other:?}"))),
    }
}

/// The object's own message, from its `k8s\0` + `runtime.Unknown` envelope.
fn unwrap_envelope(raw: Bytes, kind: &str) -> Result<Bytes, kube::Error> {
    let Some(envelope) = raw.strip_prefix(MAGIC) else {
        return Err(invalid(format!(
            "the object of a {kind} event is not Kubernetes protobuf (no k8s\\0 prefix)"
        )));
    };
    let unknown = wire::Unknown::decode(raw.slice(raw.len() - envelope.len()..)).map_err(|e| {
        invalid(format!(
            "the envelope of a {kind} event does not decode: {e}"
        ))
    })?;
    if let Some(encoding) = unknown.content_encoding.filter(|e| !e.is_empty()) {
        return Err(invalid(format!(
            "the object of a {kind} event is encoded as {encoding:?}, which weir does not read"
        )));
    }
    Ok(unknown.raw.unwrap_or_default())
}

impl From<wire::Status> for Status {
    fn from(s: wire::Status) -> Self {
        Status {
            status: match s.status.as_deref() {
                Some("Success") => Some(StatusSummary::Success),
                Some("Failure") => Some(StatusSummary::Failure),
                _ => None,
            },
            code: s.code.and_then(|c| u16::try_from(c).ok()).unwrap_or(0),
            message: s.message.unwrap_or_default(),
            metadata: None,
            reason: s.reason.unwrap_or_default(),
            details: s.details.map(|d| StatusDetails {
                name: d.name.unwrap_or_default(),
                group: d.group.unwrap_or_default(),
                kind: d.kind.unwrap_or_default(),
                uid: d.uid.unwrap_or_default(),
                causes: d
                    .causes
                    .into_iter()
                    .map(|c| StatusCause {
                        reason: c.r#type.unwrap_or_default(),
                        message: c.message.unwrap_or_default(),
                        field: c.field.unwrap_or_default(),
                    })
                    .collect(),
                retry_after_seconds: d
                    .retry_after_seconds
                    .and_then(|s| u32::try_from(s).ok())
                    .unwrap_or(0),
            }),
        }
    }
}

/// The envelope messages of Kubernetes' protobuf encoding (`k8s.io/apimachinery`:
/// `pkg/runtime/generated.proto` and `pkg/apis/meta/v1/generated.proto`), with only the
/// fields weir reads.
pub(crate) mod wire {
    use bytes::Bytes;

    /// `runtime.Unknown`: an object with its type.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Unknown {
        /// The object's own message.
        #[prost(bytes = "bytes", optional, tag = "2")]
        pub raw: Option<Bytes>,
        /// Set when `raw` is compressed.
        #[prost(string, optional, tag = "3")]
        pub content_encoding: Option<String>,
    }

    /// `meta.v1.WatchEvent`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct WatchEvent {
        /// ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.
        #[prost(string, optional, tag = "1")]
        pub r#type: Option<String>,
        /// The object, enveloped.
        #[prost(message, optional, tag = "2")]
        pub object: Option<RawExtension>,
    }

    /// `runtime.RawExtension`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct RawExtension {
        /// The enveloped object.
        #[prost(bytes = "bytes", optional, tag = "1")]
        pub raw: Option<Bytes>,
    }

    /// The object of a BOOKMARK event: any kind, of which only the metadata counts.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Bookmark {
        /// Every object's metadata is its field 1.
        #[prost(message, optional, tag = "1")]
        pub metadata: Option<BookmarkMeta>,
    }

    /// What a bookmark's `meta.v1.ObjectMeta` says.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BookmarkMeta {
        /// Where a watch resumes.
        #[prost(string, optional, tag = "6")]
        pub resource_version: Option<String>,
        /// `k8s.io/initial-events-end` marks the end of a watch-list's initial events.
        #[prost(btree_map = "string, string", tag = "12")]
        pub annotations: std::collections::BTreeMap<String, String>,
    }

    /// `meta.v1.Status`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Status {
        /// Success or Failure.
        #[prost(string, optional, tag = "2")]
        pub status: Option<String>,
        /// For people.
        #[prost(string, optional, tag = "3")]
        pub message: Option<String>,
        /// For machines.
        #[prost(string, optional, tag = "4")]
        pub reason: Option<String>,
        /// What the reason concerns.
        #[prost(message, optional, tag = "5")]
        pub details: Option<StatusDetails>,
        /// The HTTP status.
        #[prost(int32, optional, tag = "6")]
        pub code: Option<i32>,
    }

    /// `meta.v1.StatusDetails`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct StatusDetails {
        /// The object's name.
        #[prost(string, optional, tag = "1")]
        pub name: Option<String>,
        /// Its API group.
        #[prost(string, optional, tag = "2")]
        pub group: Option<String>,
        /// Its kind.
        #[prost(string, optional, tag = "3")]
        pub kind: Option<String>,
        /// The causes.
        #[prost(message, repeated, tag = "4")]
        pub causes: Vec<StatusCause>,
        /// When to retry.
        #[prost(int32, optional, tag = "5")]
        pub retry_after_seconds: Option<i32>,
        /// Its UID.
        #[prost(string, optional, tag = "6")]
        pub uid: Option<String>,
    }

    /// `meta.v1.StatusCause`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct StatusCause {
        /// The reason (`ResourceVersionTooLarge`, ...).
        #[prost(string, optional, tag = "1")]
        pub r#type: Option<String>,
        /// For people.
        #[prost(string, optional, tag = "2")]
        pub message: Option<String>,
        /// The field concerned.
        #[prost(string, optional, tag = "3")]
        pub field: Option<String>,
    }
}

#[cfg(test)]
mod tests;
