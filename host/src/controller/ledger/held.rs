//! Watch events held while weir writes their key.
//!
//! The watch event of weir's own write often comes before the write's response: etcd tells its
//! watchers of a change as it applies it, before it answers the writer, and kube-apiserver
//! sends the event on while the response still passes its audit and encoding. Judged on
//! arrival, that event looks like someone else's change (weir has not recorded its write yet)
//! and queues a sync that finds nothing to do; at 1,000 Services loaded at once that was most
//! of them a second time (docs/performance.md). So while an output of a key is being written,
//! the events of that output and key are held, and judged once the write is recorded.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::locked;

/// The events held for keys being written, and the keys whose held events asked for a sync.
#[derive(Debug)]
pub struct Held<E> {
    keys: Mutex<HashMap<String, Holding<E>>>,
    asked: Mutex<HashSet<String>>,
}

impl<E> Default for Held<E> {
    fn default() -> Self {
        Held {
            keys: Mutex::default(),
            asked: Mutex::default(),
        }
    }
}

#[derive(Debug)]
struct Holding<E> {
    /// Writes of the key in flight.
    writes: usize,
    events: Vec<E>,
}

impl<E> Held<E> {
    /// Holds the events of `key` until the returned guard drops; then `asks` judges each held
    /// event (whether it calls for a sync, with the write recorded by then).
    pub fn hold<'a, F: Fn(&str, &E) -> bool>(&'a self, key: &str, asks: F) -> Hold<'a, E, F> {
        locked(&self.keys)
            .entry(key.to_string())
            .or_insert_with(|| Holding {
                writes: 0,
                events: Vec::new(),
            })
            .writes += 1;
        Hold {
            held: self,
            key: key.to_string(),
            asks,
        }
    }

    /// Whether `key` is being written; if so the event `make` gives is held.
    pub fn holds(&self, key: &str, make: impl FnOnce() -> E) -> bool {
        match locked(&self.keys).get_mut(key) {
            Some(holding) => {
                holding.events.push(make());
                true
            }
            None => false,
        }
    }

    /// Whether an event held while `key` was written asked for a sync; asking once is
    /// answered once.
    pub fn take_asked(&self, key: &str) -> bool {
        locked(&self.asked).remove(key)
    }

    /// Ends one write of `key`: the events held for it when no other write of it is in flight.
    fn end(&self, key: &str) -> Vec<E> {
        let mut keys = locked(&self.keys);
        let Some(holding) = keys.get_mut(key) else {
            return Vec::new();
        };
        holding.writes = holding.writes.saturating_sub(1);
        if holding.writes > 0 {
            return Vec::new();
        }
        keys.remove(key).map(|h| h.events).unwrap_or_default()
    }
}

/// One write of a key in flight (see [`Held::hold`]). Dropped when the write is recorded, or
/// when it failed or was given up: an event held then is judged without it, so it asks for a
/// sync unless it is a write weir recorded before.
pub struct Hold<'a, E, F: Fn(&str, &E) -> bool> {
    held: &'a Held<E>,
    key: String,
    asks: F,
}

impl<E, F: Fn(&str, &E) -> bool> Drop for Hold<'_, E, F> {
    fn drop(&mut self) {
        // The lock of the held events is released before judging: `asks` reads the tracker.
        let events = self.held.end(&self.key);
        if events.iter().any(|e| (self.asks)(&self.key, e)) {
            locked(&self.held.asked).insert(std::mem::take(&mut self.key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn odd(_: &str, n: &u32) -> bool {
        n % 2 == 1
    }

    #[test]
    fn events_of_a_key_being_written_are_held_and_judged_when_it_ends() {
        let held = Held::<u32>::default();
        assert!(!held.holds("a", || 1), "nothing is written: judged at once");
        {
            let _write = held.hold("a", odd);
            assert!(held.holds("a", || 2));
            assert!(!held.holds("b", || 3), "another key is not held");
            assert!(!held.take_asked("a"), "judged only when the write ends");
        }
        assert!(!held.take_asked("a"), "2 does not ask for a sync");
        assert!(!held.holds("a", || 5), "the write ended: judged at once");
        {
            let _write = held.hold("a", odd);
            assert!(held.holds("a", || 2));
            assert!(held.holds("a", || 7));
        }
        assert!(held.take_asked("a"), "7 asks for a sync");
        assert!(!held.take_asked("a"), "asked once, answered once");
    }

    #[test]
    fn overlapping_writes_of_a_key_hold_until_the_last_ends() {
        let held = Held::<u32>::default();
        let first = held.hold("a", odd);
        let second = held.hold("a", odd);
        drop(first);
        assert!(held.holds("a", || 1), "one write is still in flight");
        drop(second);
        assert!(held.take_asked("a"));
        assert!(!held.holds("a", || 1));
    }
}
