//! Logging through the host's `log` import: the [`debug!`](crate::debug),
//! [`info!`](crate::info), [`warn!`](crate::warn) and [`error!`](crate::error) macros.
//!
//! Lines are attributed by the host to the Service key being reconciled. Natively (unit tests of
//! a policy) there is no host, so lines are dropped without being formatted.

pub use crate::bindings::weir::endpoints::log::Level;

/// Writes one line at `level`; the macros call it.
pub fn write(level: Level, message: std::fmt::Arguments<'_>) {
    #[cfg(target_arch = "wasm32")]
    crate::bindings::weir::endpoints::log::write(level, &message.to_string());
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (level, message);
}

/// Writes a debug line to the host's log, formatted as by `format!`:
/// `weir_policy::debug!("pod {} is draining", pod.name)`.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => {
        $crate::log::write($crate::log::Level::Debug, ::core::format_args!($($arg)+))
    };
}

/// Writes an info line to the host's log, formatted as by `format!`.
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => {
        $crate::log::write($crate::log::Level::Info, ::core::format_args!($($arg)+))
    };
}

/// Writes a warning to the host's log, formatted as by `format!`.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => {
        $crate::log::write($crate::log::Level::Warn, ::core::format_args!($($arg)+))
    };
}

/// Writes an error line to the host's log, formatted as by `format!`. It does not fail the
/// call: return an `Err` from [`Policy::validate`](crate::Policy::validate) for that.
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => {
        $crate::log::write($crate::log::Level::Error, ::core::format_args!($($arg)+))
    };
}
