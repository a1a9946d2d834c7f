//! What the informers' slim wire types share: each stands for a k8s-openapi type (same API
//! group, kind and URL) while decoding only the fields weir keeps, and each decodes from
//! protobuf into the same value as from JSON.

/// Implements `k8s_openapi::Resource` and `k8s_openapi::Metadata` for `$wire`, a tuple struct
/// holding a `$full`, as `$full` implements them, so that kube-rs lists and watches `$wire` at
/// `$full`'s URL; and `Deserialize` through `$shape`, the serde shape that names only the
/// fields kept (serde steps over the others without building them), converted into `$full`.
macro_rules! stands_for {
    ($wire:ident, $full:ty, $shape:ty) => {
        impl<'de> serde::Deserialize<'de> for $wire {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                Ok($wire(<$shape>::deserialize(deserializer)?.into()))
            }
        }

        impl k8s_openapi::Resource for $wire {
            const API_VERSION: &'static str = <$full as k8s_openapi::Resource>::API_VERSION;
            const GROUP: &'static str = <$full as k8s_openapi::Resource>::GROUP;
            const KIND: &'static str = <$full as k8s_openapi::Resource>::KIND;
            const VERSION: &'static str = <$full as k8s_openapi::Resource>::VERSION;
            const URL_PATH_SEGMENT: &'static str =
                <$full as k8s_openapi::Resource>::URL_PATH_SEGMENT;
            type Scope = <$full as k8s_openapi::Resource>::Scope;
        }

        impl k8s_openapi::Metadata for $wire {
            type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

            fn metadata(&self) -> &Self::Ty {
                &self.0.metadata
            }

            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.0.metadata
            }
        }
    };
}
pub(crate) use stands_for;

/// A string as JSON has it. kube-apiserver writes a Go string in protobuf even when it is
/// empty, where its JSON leaves the field out (`omitempty`).
pub fn present(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

/// A list or map as JSON has it: protobuf carries an empty one, JSON leaves it out.
pub fn non_empty<T: IntoIterator + Default + PartialEq>(v: T) -> Option<T> {
    (v != T::default()).then_some(v)
}
