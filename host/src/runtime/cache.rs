//! A directory of precompiled guests, so a swap to a component seen before skips Cranelift.
//!
//! An entry is `<dir>/<sha256 of the component>-<engine hash>.cwasm`, where the engine hash
//! is a hash of [`Engine::precompile_compatibility_hash`]: engines whose artifacts cannot be
//! exchanged never share a file name. Each file is
//!
//! ```text
//! MAGIC (16 bytes) | sha256(component) (32) | sha256(payload) (32) | payload
//! ```
//!
//! where the payload is [`Component::serialize`]'s output. Entries are written to a temporary
//! file and renamed into place, so readers see a whole entry or none. An entry whose header
//! does not check out (truncated, corrupted, written for other bytes) or that wasmtime refuses
//! is recompiled and overwritten: the cache can make a load faster, never make it fail.
//!
//! The checksums detect damage, not tampering: like wasmtime's own cache, the directory must
//! be writable only by weir, since whoever can write it can make weir run native code.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::{LoadError, Runtime, digest};

/// First bytes of every entry; the trailing version changes if the layout does.
const MAGIC: &[u8; 16] = b"weir-cwasm-v1\0\0\n";
/// Length of the header before the payload.
const HEADER: usize = MAGIC.len() + 32 + 32;

/// Distinguishes temporary files of concurrent writers within one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How a [`CompileCache`] lookup was served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheOutcome {
    /// A valid entry was deserialized; nothing was compiled.
    Hit,
    /// There was no entry: the component was compiled and (if the write worked) stored.
    Miss,
    /// There was an entry but it could not be used (the reason says why): the component was
    /// compiled and the entry overwritten.
    Replaced(String),
}

/// A compiled component and how the cache produced it.
pub struct Cached {
    /// The component, ready for [`Runtime::prepare`].
    pub component: Component,
    /// Whether it came from the cache.
    pub outcome: CacheOutcome,
}

/// A directory of precompiled components, keyed by component digest and engine settings.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
}

impl CompileCache {
    /// A cache in `dir`, created on first write. Nothing is read until a lookup.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        CompileCache { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the entry for `bytes` compiled by `engine` lives.
    pub fn entry_path(&self, engine: &Engine, bytes: &[u8]) -> PathBuf {
        self.dir
            .join(format!("{}-{}.cwasm", digest(bytes), engine_hash(engine)))
    }

    /// The compiled form of `bytes` for `runtime`'s engine: from the cache when a valid entry
    /// exists, otherwise compiled and stored. Failing to store is logged, not returned.
    pub fn load_or_compile(&self, runtime: &Runtime, bytes: &[u8]) -> Result<Component, LoadError> {
        self.lookup(runtime, bytes).map(|c| c.component)
    }

    /// Like [`CompileCache::load_or_compile`], also saying whether the cache served it.
    pub fn lookup(&self, runtime: &Runtime, bytes: &[u8]) -> Result<Cached, LoadError> {
        let engine = runtime.engine();
        let path = self.entry_path(engine, bytes);
        let source = Sha256::digest(bytes);
        let outcome = match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => CacheOutcome::Miss,
            Err(e) => CacheOutcome::Replaced(format!("unreadable: {e}")),
            Ok(file) => match read_entry(engine, &file, &source) {
                Ok(component) => {
                    tracing::debug!(path = %path.display(), "compiled guest loaded from cache");
                    return Ok(Cached {
                        component,
                        outcome: CacheOutcome::Hit,
                    });
                }
                Err(reason) => {
                    tracing::warn!(path = %path.display(), %reason, "ignoring cache entry; recompiling");
                    CacheOutcome::Replaced(reason)
                }
            },
        };
        let component = runtime.compile(bytes)?;
        match component.serialize() {
            Ok(payload) => {
                if let Err(e) = self.write_entry(&path, &source, &payload) {
                    tracing::warn!(path = %path.display(), error = %e, "cannot store compiled guest");
                }
            }
            Err(e) => tracing::warn!(error = %format!("{e:#}"), "cannot serialize compiled guest"),
        }
        Ok(Cached { component, outcome })
    }

    /// Writes an entry through a temporary file in the same directory and renames it into
    /// place, so a crash or a concurrent reader never sees half an entry.
    fn write_entry(&self, path: &Path, source: &[u8], payload: &[u8]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
        let temp = self.dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)?;
            file.write_all(MAGIC)?;
            file.write_all(source)?;
            file.write_all(&Sha256::digest(payload))?;
            file.write_all(payload)?;
            file.sync_all()?;
            std::fs::rename(&temp, path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        result
    }
}

/// A short hex key of the engine settings that decide whether artifacts are interchangeable.
///
/// `DefaultHasher` is only stable within one build of weir; a different build hashing
/// differently just misses the cache (and wasmtime checks compatibility again on load).
pub fn engine_hash(engine: &Engine) -> String {
    let mut hasher = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// Checks an entry's header against `source` (the digest of the component it must hold) and
/// its payload, then deserializes it.
fn read_entry(engine: &Engine, file: &[u8], source: &[u8]) -> Result<Component, String> {
    if file.len() < HEADER || &file[..MAGIC.len()] != MAGIC {
        return Err("not a weir cache entry (bad header)".into());
    }
    let (stored_source, rest) = file[MAGIC.len()..].split_at(32);
    let (stored_payload_digest, payload) = rest.split_at(32);
    if stored_source != source {
        return Err("entry holds another component".into());
    }
    if stored_payload_digest != Sha256::digest(payload).as_slice() {
        return Err("checksum mismatch (truncated or corrupted)".into());
    }
    deserialize(engine, payload)
}

/// Deserializes a payload that [`read_entry`] verified.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, payload: &[u8]) -> Result<Component, String> {
    // SAFETY: `Component::deserialize` maps its input as executable code and trusts it to be
    // wasmtime's own output. Payloads reach this function only from entries that this module
    // wrote: named by the sha256 of the component and a hash of the engine's compatibility
    // settings, written atomically (temporary file + rename), and whose header's sha256 of the
    // payload `read_entry` has just compared with the payload itself, so a truncated or
    // corrupted file is refused before this call. wasmtime additionally checks the version and
    // engine settings recorded in the artifact and returns an error (which we treat as a miss)
    // on a mismatch. The directory must be writable only by weir (see the module docs).
    unsafe { Component::deserialize(engine, payload) }.map_err(|e| format!("incompatible: {e:#}"))
}
