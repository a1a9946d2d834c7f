//! A policy that would carry state from one call to the next if weir reused instances. Every
//! `reconcile` fails on purpose with `calls=N heap=ADDR`: N counts the calls this instance
//! has served (a static in the data segment), ADDR is where a fresh heap allocation lands
//! after a 256 KiB block is leaked. A fresh instance per call answers `calls=1` with the same
//! ADDR every time; a reused one would count up, and its heap would have moved on.

use std::sync::atomic::{AtomicU32, Ordering};

use weir_policy::Policy;

static CALLS: AtomicU32 = AtomicU32::new(0);

#[derive(Default, serde::Deserialize)]
struct Remember {}

impl Policy for Remember {
    fn validate(&self) -> Result<(), String> {
        let calls = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
        let block: &'static mut [u8] = Box::leak(vec![calls as u8; 256 << 10].into_boxed_slice());
        std::hint::black_box(&block);
        let probe = Box::new(calls);
        Err(format!("calls={calls} heap={:p}", &*probe))
    }
}

weir_policy::export_policy!(Remember);
weir_policy::arena_allocator!();
