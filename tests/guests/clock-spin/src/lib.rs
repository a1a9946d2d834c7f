//! Upstream behaviour, except that for a Service labelled `weir.test/stall=true` it
//! busy-waits for a second to pass on the monotonic clock. The host's clocks are frozen, so the
//! second never passes: the host must stop the spin at the call deadline.

weir_test_stall::stall_guest!(ClockSpin, || {
    let started = std::time::Instant::now();
    let mut reads = 0u64;
    while started.elapsed() < std::time::Duration::from_secs(1) {
        reads = std::hint::black_box(reads.wrapping_add(1));
    }
    format!("a second passed after {reads} clock reads")
});
