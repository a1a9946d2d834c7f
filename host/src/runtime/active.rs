//! The active guest and its policy configuration, replaceable together while calls run. A
//! call clones the current pair (an `Arc` and a string), so in-flight calls finish on the
//! module they started with, and every call that starts after a swap uses the new pair: a
//! guest never sees a configuration meant for another.

use std::sync::{Arc, RwLock};

use super::Guest;

/// A guest and the policy configuration (JSON text, possibly empty) it is called with.
#[derive(Clone, Debug)]
pub struct Active {
    /// The guest.
    pub guest: Guest,
    /// Its policy configuration.
    pub config: String,
}

/// The guest every sync calls, with its configuration; cheap to clone and share.
#[derive(Clone, Debug)]
pub struct ActiveGuest {
    slot: Arc<RwLock<Active>>,
}

impl ActiveGuest {
    /// Starts with `guest` and an empty configuration.
    pub fn new(guest: Guest) -> Self {
        ActiveGuest {
            slot: Arc::new(RwLock::new(Active {
                guest,
                config: String::new(),
            })),
        }
    }

    /// The guest to use for a call starting now.
    pub fn current(&self) -> Guest {
        self.read().guest
    }

    /// The guest and configuration to use for a call starting now, read together.
    pub fn current_pair(&self) -> Active {
        self.read()
    }

    /// The active configuration.
    pub fn config(&self) -> String {
        self.read().config
    }

    /// Sets the configuration the active guest is called with (at start-up).
    pub fn set_config(&self, config: String) {
        self.slot.write().unwrap_or_else(|e| e.into_inner()).config = config;
    }

    /// Makes `guest` active with the current configuration and returns the one it replaced.
    pub fn swap(&self, guest: Guest) -> Guest {
        let mut slot = self.slot.write().unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut slot.guest, guest)
    }

    /// Makes `next` (a guest and its configuration) active and returns the pair it replaced.
    pub fn swap_pair(&self, next: Active) -> Active {
        std::mem::replace(
            &mut *self.slot.write().unwrap_or_else(|e| e.into_inner()),
            next,
        )
    }

    fn read(&self) -> Active {
        self.slot.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
