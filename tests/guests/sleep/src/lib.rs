//! Upstream behaviour, except that for a Service labelled `weir.test/stall=true` it sleeps,
//! 10 ms at a time, forever. Each `std::thread::sleep` is a WASI monotonic-clock subscription
//! and a `poll`: time spent blocked in the host, which epoch interruption alone cannot stop.
//! The host must still end the call at its deadline.

weir_test_stall::stall_guest!(Sleep, || {
    let mut naps = 0u64;
    while std::hint::black_box(true) {
        std::thread::sleep(std::time::Duration::from_millis(10));
        naps = naps.wrapping_add(1);
    }
    format!("unreachable after {naps} naps")
});
