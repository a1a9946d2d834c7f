//! The errors of the library.

/// Errors of the library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding or serving the socket failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// Seed data could not be parsed.
    #[error("parsing seed data: {0}")]
    Seed(String),
    /// A seed object was refused by the store.
    #[error("loading seed object {what}: {message}")]
    SeedObject {
        /// `kind namespace/name` of the object.
        what: String,
        /// The API error message.
        message: String,
    },
}
