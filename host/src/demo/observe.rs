//! Keeps the demo's [`Board`] up to date: watches of every Endpoints object and every
//! EndpointSlice, through the API like any client, and a new board after each event.

use futures::StreamExt;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::board::Board;

/// Starts watching; the receiver holds the newest board until `shutdown`. Watch errors are
/// retried with kube's default backoff (and logged at debug level).
pub fn observe(client: kube::Client, shutdown: CancellationToken) -> watch::Receiver<Board> {
    let (tx, rx) = watch::channel(Board::default());
    let (endpoints, endpoints_writer) = reflector::store::<core::Endpoints>();
    let (slices, slices_writer) = reflector::store::<EndpointSlice>();
    let endpoint_events = reflector(
        endpoints_writer,
        watcher(
            Api::<core::Endpoints>::all(client.clone()),
            Default::default(),
        )
        .default_backoff(),
    )
    .map(|event| event.map(|_| ()));
    let slice_events = reflector(
        slices_writer,
        watcher(Api::<EndpointSlice>::all(client), Default::default()).default_backoff(),
    )
    .map(|event| event.map(|_| ()));
    let mut events = futures::stream::select(endpoint_events.boxed(), slice_events.boxed());
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                _ = shutdown.cancelled() => return,
                event = events.next() => event,
            };
            match event {
                None => return,
                Some(Err(e)) => tracing::debug!(error = %e, "demo watch failed; retrying"),
                Some(Ok(())) => {
                    let endpoints = endpoints.state();
                    let slices = slices.state();
                    let board = Board::build(
                        endpoints.iter().map(|e| e.as_ref()),
                        slices.iter().map(|s| s.as_ref()),
                    );
                    tx.send_if_modified(|shown| {
                        let changed = *shown != board;
                        if changed {
                            *shown = board;
                        }
                        changed
                    });
                }
            }
        }
    });
    rx
}
