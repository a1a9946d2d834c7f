//! [`Address`]: a pod's endpoint address that stays borrowed from the pod until a policy
//! changes it.
//!
//! Both outputs ask the policy for every pod's address. Most policies change only readiness,
//! so the address is usually exactly the pod's own. Borrowing it costs nothing, and the slice
//! output can then name the pod (`endpoint-source.pod`) without copying the pod's strings and
//! comparing them back. A policy that rewrites an address calls [`Address::to_mut`] and gets an
//! owned [`EndpointAddress`] to edit.

use crate::by_accessors::by_accessors;
use crate::types::{EndpointAddress, ObjectReference, Pod};

/// An endpoint address: `ip`, `hostname`, `nodeName` and `targetRef`.
///
/// Read it with [`ip`](Address::ip), [`hostname`](Address::hostname),
/// [`node_name`](Address::node_name) and [`target_ref`](Address::target_ref); change it with
/// [`to_mut`](Address::to_mut); build one of your own with [`Address::from`]. Two addresses
/// are equal when those four read the same, however they are held.
#[derive(Clone)]
pub struct Address<'p>(Held<'p>);

#[derive(Clone)]
enum Held<'p> {
    /// The pod's own: `pod_ips[ip]` (already in canonical form), the pod's `spec.hostname` when
    /// `hostname`, its `nodeName` (set even when empty), and a `Pod` reference to it.
    Pod {
        pod: &'p Pod,
        ip: usize,
        hostname: bool,
    },
    /// Spelled out, after a policy changed it or built it.
    Given(EndpointAddress),
}

impl<'p> Address<'p> {
    /// The address upstream derives from `pod` at `pod.pod_ips[ip]`, with the pod's hostname
    /// when `hostname`. Only canonical text may stay borrowed: for any other, the caller
    /// replaces the `ip` through [`Address::to_mut`].
    pub(crate) fn of_pod(pod: &'p Pod, ip: usize, hostname: bool) -> Self {
        debug_assert!(ip < pod.pod_ips.len());
        Address(Held::Pod { pod, ip, hostname })
    }

    /// `ip`.
    pub fn ip(&self) -> &str {
        match &self.0 {
            Held::Pod { pod, ip, .. } => &pod.pod_ips[*ip],
            Held::Given(a) => &a.ip,
        }
    }

    /// `hostname` (empty when not set).
    pub fn hostname(&self) -> &str {
        match &self.0 {
            Held::Pod { pod, hostname, .. } => {
                if *hostname {
                    &pod.hostname
                } else {
                    ""
                }
            }
            Held::Given(a) => &a.hostname,
        }
    }

    /// `nodeName`.
    pub fn node_name(&self) -> Option<&str> {
        match &self.0 {
            Held::Pod { pod, .. } => Some(&pod.node_name),
            Held::Given(a) => a.node_name.as_deref(),
        }
    }

    /// `targetRef`.
    pub fn target_ref(&self) -> Option<TargetRef<'_>> {
        match &self.0 {
            Held::Pod { pod, .. } => Some(TargetRef::pod(pod)),
            Held::Given(a) => a.target_ref.as_ref().map(TargetRef::of),
        }
    }

    /// The address to edit: the pod's strings are copied the first time.
    pub fn to_mut(&mut self) -> &mut EndpointAddress {
        if let Held::Pod { .. } = self.0 {
            self.0 = Held::Given(self.to_owned_address());
        }
        match &mut self.0 {
            Held::Given(a) => a,
            Held::Pod { .. } => unreachable!("made owned above"),
        }
    }

    /// The address as an owned record.
    pub fn into_owned(self) -> EndpointAddress {
        match self.0 {
            Held::Given(a) => a,
            Held::Pod { .. } => self.to_owned_address(),
        }
    }

    /// The pod and the index of its `pod_ips` entry when this is still exactly the pod's own
    /// address, as [`Address::of_pod`] made it.
    pub(crate) fn pod_ip(&self) -> Option<(&'p Pod, usize)> {
        match self.0 {
            Held::Pod { pod, ip, .. } => Some((pod, ip)),
            Held::Given(_) => None,
        }
    }

    fn to_owned_address(&self) -> EndpointAddress {
        EndpointAddress {
            ip: self.ip().to_owned(),
            hostname: self.hostname().to_owned(),
            node_name: self.node_name().map(str::to_owned),
            target_ref: self.target_ref().map(TargetRef::to_reference),
        }
    }
}

by_accessors!(
    Address,
    EndpointAddress,
    ip,
    hostname,
    node_name,
    target_ref
);

/// A borrowed `targetRef`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetRef<'a> {
    /// `kind`.
    pub kind: &'a str,
    /// `namespace`.
    pub namespace: &'a str,
    /// `name`.
    pub name: &'a str,
    /// `uid`.
    pub uid: &'a str,
    /// `apiVersion`.
    pub api_version: &'a str,
    /// `fieldPath`.
    pub field_path: &'a str,
}

impl<'a> TargetRef<'a> {
    /// The reference both controllers write for `pod` (spec §7.4, R2.15): kind `Pod`, its
    /// namespace, name and uid, no apiVersion or fieldPath.
    pub fn pod(pod: &'a Pod) -> Self {
        TargetRef {
            kind: "Pod",
            namespace: &pod.namespace,
            name: &pod.name,
            uid: &pod.uid,
            api_version: "",
            field_path: "",
        }
    }

    /// The reference `r` spells out.
    pub fn of(r: &'a ObjectReference) -> Self {
        TargetRef {
            kind: &r.kind,
            namespace: &r.namespace,
            name: &r.name,
            uid: &r.uid,
            api_version: &r.api_version,
            field_path: &r.field_path,
        }
    }

    /// An owned copy.
    pub fn to_reference(self) -> ObjectReference {
        ObjectReference {
            kind: self.kind.to_owned(),
            namespace: self.namespace.to_owned(),
            name: self.name.to_owned(),
            uid: self.uid.to_owned(),
            api_version: self.api_version.to_owned(),
            field_path: self.field_path.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod;

    #[test]
    fn a_pods_address_reads_like_its_owned_copy_and_stays_borrowed_until_edited() {
        let mut p = pod("a", "10.0.0.1", true);
        p.pod_ips.push("10.0.0.2".into());
        p.hostname = "web-0".into();
        p.node_name = "node-1".into();
        let borrowed = Address::of_pod(&p, 1, true);
        let owned = borrowed.clone().into_owned();
        assert_eq!(owned.ip, "10.0.0.2");
        assert_eq!(owned.hostname, "web-0");
        assert_eq!(owned.node_name.as_deref(), Some("node-1"));
        let reference = owned.target_ref.clone().unwrap();
        assert_eq!(
            (reference.kind.as_str(), reference.name.as_str()),
            ("Pod", "a")
        );
        assert_eq!(Address::from(owned.clone()), borrowed);
        assert!(
            borrowed
                .pod_ip()
                .is_some_and(|(q, i)| std::ptr::eq(q, &p) && i == 1)
        );
        assert_eq!(Address::of_pod(&p, 1, false).hostname(), "");

        let mut edited = borrowed.clone();
        edited.to_mut().ip = "10.9.9.9".into();
        assert_eq!(edited.ip(), "10.9.9.9");
        assert_eq!(
            edited.pod_ip(),
            None,
            "an edited address is no longer the pod's"
        );
        assert_ne!(edited, borrowed);
        // An edit that changes nothing keeps it equal, though spelled out.
        let mut touched = borrowed.clone();
        touched.to_mut();
        assert_eq!(touched, borrowed);
        assert_eq!(touched.into_owned(), owned);
    }
}
