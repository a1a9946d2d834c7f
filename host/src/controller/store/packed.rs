//! Cached objects kept as their JSON text, decoded when read.
//!
//! k8s-openapi's structs are made of `Option<String>`s, maps and nested `ObjectReference`s: a
//! decoded EndpointSlice of 15 endpoints holds about 14 KB of heap, its JSON about 4 KB. The
//! caches of the objects weir writes (Endpoints, EndpointSlices) are read only when a sync of
//! their Service needs them, a few objects at a time, so they keep the text and pay a decode
//! of a few microseconds per read instead (docs/performance.md, "Controller convergence and memory").

use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// An object of type `K` as compact JSON.
pub struct Packed<K> {
    json: Box<[u8]>,
    kind: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for Packed<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Packed({} bytes)", self.json.len())
    }
}

impl<K: Serialize + DeserializeOwned> Packed<K> {
    /// Packs `object`. `None` only if it does not serialise, which decoded API objects always
    /// do (their maps have string keys).
    pub fn pack(object: &K) -> Option<Self> {
        match serde_json::to_vec(object) {
            Ok(json) => Some(Packed {
                json: json.into_boxed_slice(),
                kind: PhantomData,
            }),
            Err(e) => {
                tracing::error!(error = %e, "cannot keep an object in the cache");
                None
            }
        }
    }

    /// The object again. `None` only if the text does not decode, which text written by
    /// [`pack`](Self::pack) always does.
    pub fn unpack(&self) -> Option<K> {
        serde_json::from_slice(&self.json)
            .inspect_err(|e| tracing::error!(error = %e, "cannot decode a cached object"))
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::discovery::v1::EndpointSlice;

    #[test]
    fn an_object_comes_back_as_it_went_in() {
        let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s-1", "namespace": "ns", "labels": {"kubernetes.io/service-name": "s"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true},
                           "targetRef": {"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u"}}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
        }))
        .unwrap();
        let packed = Packed::pack(&slice).unwrap();
        assert_eq!(packed.unpack().unwrap(), slice);
    }
}
