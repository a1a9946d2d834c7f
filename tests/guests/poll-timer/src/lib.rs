//! Upstream behaviour, except that for a Service labelled `weir.test/stall=true` it
//! subscribes to a one-hour timer and polls it: one WASI call that would block for an hour.
//! The host must end the call at its deadline.

weir_test_stall::stall_guest!(PollTimer, || {
    let hour = wasip2::clocks::monotonic_clock::subscribe_duration(3_600_000_000_000);
    let ready = wasip2::io::poll::poll(&[&hour]);
    format!("the hour passed: {ready:?}")
});
