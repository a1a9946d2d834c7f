//! The Endpoints deletes weir owes, and the Endpoints that vanished under a cached Service.
//!
//! The reflector posts what the watches report (a managed Service deleted, Endpoints stored or
//! gone); the start-up sweep posts its leftovers; the write stage settles a delete once it is
//! done. The store never holds these: it mirrors the API server, and no sync changes it.

use std::collections::HashSet;
use std::sync::Mutex;

use super::locked;
use crate::controller::store::Key;

/// Keys whose Endpoints weir may delete, and keys whose Endpoints vanished while their
/// Service was cached.
#[derive(Debug, Default)]
pub struct OwedDeletes {
    /// Keys whose Endpoints weir may delete: their managed Service was deleted, or none existed
    /// at the start-up sweep. A sync of any other key without a Service leaves its Endpoints
    /// alone (an Endpoints event alone never deletes; docs/operations.md).
    owed: Mutex<HashSet<Key>>,
    /// Keys whose Endpoints vanished while their Service was still cached. kube-apiserver
    /// deletes a deleted Service's Endpoints itself, and that event may arrive before the
    /// Service's own; a create for such a key first asks the API server whether the Service
    /// still exists (docs/design/conformance-findings.md, finding F6).
    vanished: Mutex<HashSet<Key>>,
}

impl OwedDeletes {
    /// A Service of this key exists (managed or not): nothing is owed for it.
    pub fn service_exists(&self, key: &str) {
        locked(&self.owed).remove(key);
    }

    /// The cache forgot this key's Service. When it was a managed one, its Endpoints become
    /// weir's to delete; either way an earlier vanishing no longer matters.
    pub fn service_deleted(&self, key: &str, managed: bool) {
        locked(&self.vanished).remove(key);
        if managed {
            locked(&self.owed).insert(key.to_string());
        }
    }

    /// The start-up sweep found Endpoints without a Service: weir may delete them.
    pub fn owe(&self, key: &str) {
        locked(&self.owed).insert(key.to_string());
    }

    /// Endpoints of this key are stored (again).
    pub fn endpoints_stored(&self, key: &str) {
        locked(&self.vanished).remove(key);
    }

    /// This key's Endpoints were deleted while its Service was still cached.
    pub fn endpoints_vanished(&self, key: &str) {
        locked(&self.vanished).insert(key.to_string());
    }

    /// Whether a sync may delete this key's Endpoints.
    pub fn is_owed(&self, key: &str) -> bool {
        locked(&self.owed).contains(key)
    }

    /// The delete of this key's Endpoints is done.
    pub fn settled(&self, key: &str) {
        locked(&self.owed).remove(key);
    }

    /// Whether this key's Endpoints vanished while its Service was cached, since the last
    /// call for the key (a create asks the API server once per vanishing).
    pub fn take_vanished(&self, key: &str) -> bool {
        locked(&self.vanished).remove(key)
    }

    /// Keys whose Endpoints still wait for deletion (a resync retries them).
    pub fn keys(&self) -> Vec<Key> {
        locked(&self.owed).iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_managed_service_that_went_away_owes_a_delete_until_it_is_settled() {
        let owed = OwedDeletes::default();
        owed.service_deleted("ns/theirs", false);
        owed.service_deleted("ns/mine", true);
        assert_eq!(owed.keys(), ["ns/mine"]);
        assert!(!owed.is_owed("ns/theirs"));
        // Created again: nothing owed.
        owed.service_exists("ns/mine");
        assert!(!owed.is_owed("ns/mine"));
        owed.service_deleted("ns/mine", true);
        owed.settled("ns/mine");
        assert!(owed.keys().is_empty());
    }

    #[test]
    fn a_vanishing_is_taken_once_and_forgotten_when_the_endpoints_or_service_come_and_go() {
        let owed = OwedDeletes::default();
        owed.endpoints_vanished("ns/s");
        assert!(owed.take_vanished("ns/s"));
        assert!(!owed.take_vanished("ns/s"));
        owed.endpoints_vanished("ns/s");
        owed.endpoints_stored("ns/s");
        assert!(!owed.take_vanished("ns/s"));
        owed.endpoints_vanished("ns/s");
        owed.service_deleted("ns/s", true);
        assert!(!owed.take_vanished("ns/s"));
    }
}
