//! The active guest, replaceable while calls run. A call clones the current [`Guest`] (an
//! `Arc`), so in-flight calls finish on the module they started with, and every call that
//! starts after a swap uses the new one.

use std::sync::{Arc, RwLock};

use super::Guest;

/// The guest every sync calls; cheap to clone and share.
#[derive(Clone, Debug)]
pub struct ActiveGuest {
    slot: Arc<RwLock<Guest>>,
}

impl ActiveGuest {
    /// Starts with `guest`.
    pub fn new(guest: Guest) -> Self {
        ActiveGuest {
            slot: Arc::new(RwLock::new(guest)),
        }
    }

    /// The guest to use for a call starting now.
    pub fn current(&self) -> Guest {
        self.slot.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Makes `guest` active and returns the one it replaced.
    pub fn swap(&self, guest: Guest) -> Guest {
        std::mem::replace(
            &mut *self.slot.write().unwrap_or_else(|e| e.into_inner()),
            guest,
        )
    }
}
