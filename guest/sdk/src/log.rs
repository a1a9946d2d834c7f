//! Logging through the host's `log` import.
//!
//! Lines are attributed by the host to the Service key being reconciled. Natively (unit tests of
//! a policy) there is no host, so lines are dropped.

use crate::bindings::weir::endpoints::log::Level;

/// Writes one line at `level`.
pub fn write(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::bindings::weir::endpoints::log::write(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (level, message);
}

/// Writes a debug line.
pub fn debug(message: &str) {
    write(Level::Debug, message);
}

/// Writes an info line.
pub fn info(message: &str) {
    write(Level::Info, message);
}

/// Writes a warning.
pub fn warn(message: &str) {
    write(Level::Warn, message);
}
