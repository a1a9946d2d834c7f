//! `--cache-dir`: compiled guests kept across restarts, loaded only when weir can show it wrote
//! them itself from the same guest bytes.
//!
//! A compiled guest is native code that weir maps executable without further checks, so a
//! cache entry is as powerful as the weir binary. wasmtime's own compilation cache checks
//! neither who may write its directory nor whether an entry is one it wrote: any artifact
//! placed under an entry's name runs, whatever `--guest-sha256` says. This cache therefore
//!
//! - refuses a directory that is not owned by weir's user or that group or others may write
//!   (as ssh's StrictModes refuses a loose `~/.ssh`), creating a missing one with mode 0700;
//! - names each entry after the SHA-256 of the guest's bytes and the engine's compatibility
//!   hash (wasmtime version, compiler and tunables), so an entry can only answer for the bytes
//!   weir was asked to load, by an engine that can run it;
//! - stores beside each artifact a SHA-256 of the entry's name and the artifact, checked
//!   before the artifact is deserialized: an entry for other guest bytes put in its place, or
//!   one damaged on disk, is recompiled; an entry of another owner, or one others may write,
//!   is recompiled too;
//! - writes entries to a temporary file (mode 0600) and renames it, so a reader never sees
//!   half an entry;
//! - evicts the least recently used entries past [`CACHE_MAX_FILES`] files or
//!   [`CACHE_MAX_BYTES`] bytes.
//!
//! A second kind of directory, `--compiled-guests`, holds guests compiled ahead of time
//! (`weir guest compile`) and shipped beside the binary, as the image ships the default guest's.
//! weir only reads it. It is trusted as the binary is: it and its entries may be owned by root
//! or by weir's user, and must be writable by no one else; entries carry the same checksum.
//!
//! `docs/operations.md` ("The compile cache") states the trust model.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::{CACHE_MAX_BYTES, CACHE_MAX_FILES, CacheStats, LoadError};

/// What every entry starts with; a new layout gets a new magic, so old entries are misses.
const MAGIC: &[u8] = b"weir-compiled-guest-v2\n";
const CHECKSUM_LEN: usize = 32;
const ENTRY_EXTENSION: &str = "cwasm";
/// Temporary files older than this are left over from a writer that died, and removed.
const STALE_TEMP: Duration = Duration::from_secs(600);

/// Why a `--cache-dir` or `--compiled-guests` directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The directory could not be created or read.
    #[error("{flag} {}: {source}", path.display())]
    Io {
        /// The flag that named the directory.
        flag: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The directory may be changed by someone other than weir's user.
    #[error(
        "{flag}: refusing {}: {why}. Whoever can write compiled guests can make weir run \
         native code of their choosing. Fix: {fix}",
        path.display()
    )]
    Unsafe {
        /// The flag that named the directory.
        flag: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
        /// A command that makes it acceptable.
        fix: String,
    },
}

impl From<CacheError> for LoadError {
    fn from(error: CacheError) -> Self {
        LoadError::Engine(error.to_string())
    }
}

/// Whose a directory of compiled guests is, and whether weir writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `--cache-dir`: weir's own, private, read and written at run time.
    Private,
    /// `--compiled-guests`: written ahead of time (`weir guest compile`) and shipped beside the
    /// binary; read only. Root may own it, as root owns the binary.
    Shipped,
}

impl Kind {
    fn flag(self) -> &'static str {
        match self {
            Kind::Private => "--cache-dir",
            Kind::Shipped => "--compiled-guests",
        }
    }

    /// What log lines call an entry's directory.
    fn label(self) -> &'static str {
        match self {
            Kind::Private => "compile cache",
            Kind::Shipped => "--compiled-guests",
        }
    }

    /// Whether an owner of a directory or entry is one weir trusts for this kind.
    fn trusts(self, uid: u32) -> bool {
        uid == euid() || (self == Kind::Shipped && uid == 0)
    }

    /// The mode of the entries weir writes: private ones for itself, readable ones to ship
    /// (the image runs weir as another user than the one that built it).
    fn entry_mode(self) -> u32 {
        match self {
            Kind::Private => 0o600,
            Kind::Shipped => 0o644,
        }
    }
}

/// Compiled guests in one directory, for one engine.
pub(crate) struct CompileCache {
    dir: PathBuf,
    kind: Kind,
    /// Hex SHA-256 of everything about the engine that decides whether an artifact fits it.
    engine: String,
    hits: AtomicUsize,
    misses: AtomicUsize,
}

impl CompileCache {
    /// Opens (creating it if missing, mode 0700) the cache in `dir` for `engine`, after
    /// checking that only weir's user can change it.
    pub(crate) fn open(dir: &Path, engine: &Engine) -> Result<Self, CacheError> {
        Self::open_kind(
            dir,
            engine,
            Kind::Private,
            Some(0o700),
            Kind::Private.flag(),
        )
    }

    /// Opens the shipped compiled guests in `dir` (`--compiled-guests`), read only, after
    /// checking that no one but root and weir's user can change it. The directory must exist.
    pub(crate) fn open_shipped(dir: &Path, engine: &Engine) -> Result<Self, CacheError> {
        Self::open_kind(dir, engine, Kind::Shipped, None, Kind::Shipped.flag())
    }

    /// Compiles `bytes` and writes the entry `weir run --compiled-guests dir` loads, creating
    /// `dir` (mode 0755) if missing; the entry is readable by all, writable by its owner only.
    /// Returns the entry's path.
    pub(crate) fn ship(dir: &Path, engine: &Engine, bytes: &[u8]) -> Result<PathBuf, LoadError> {
        let shipped = Self::open_kind(dir, engine, Kind::Shipped, Some(0o755), "--into")?;
        let component =
            Component::new(engine, bytes).map_err(|e| LoadError::Compile(format!("{e:#}")))?;
        let artifact = component.serialize().map_err(|e| {
            LoadError::Compile(format!("cannot serialize the compiled guest: {e:#}"))
        })?;
        let name = shipped.entry_name(bytes);
        let path = shipped.entry_path(&name);
        shipped
            .write_entry(&path, &name, &artifact)
            .map_err(|source| CacheError::Io {
                flag: "--into",
                path: path.clone(),
                source,
            })?;
        Ok(path)
    }

    /// Opens `dir` as `kind`, creating it with `create`'s mode when that is given; errors name
    /// it by `flag`, the option that gave it.
    fn open_kind(
        dir: &Path,
        engine: &Engine,
        kind: Kind,
        create: Option<u32>,
        flag: &'static str,
    ) -> Result<Self, CacheError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CacheError::Io { flag, path, source }
        };
        if let Some(mode) = create {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(mode)
                .create(dir)
                .map_err(io(dir))?;
        }
        // Check the directory itself, not a symlink's name for it.
        let dir = fs::canonicalize(dir).map_err(io(dir))?;
        let meta = fs::metadata(&dir).map_err(io(&dir))?;
        if !meta.is_dir() {
            return Err(CacheError::Io {
                flag,
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
                path: dir,
            });
        }
        check_owner(&dir, &meta, kind, flag)?;
        let mode = meta.permissions().mode();
        if mode & 0o022 != 0 {
            return Err(CacheError::Unsafe {
                flag,
                why: format!(
                    "it is writable by group or others (mode {:o})",
                    mode & 0o7777
                ),
                fix: format!("chmod go-w {}", dir.display()),
                path: dir,
            });
        }
        Ok(CompileCache {
            engine: engine_hash(engine),
            dir,
            kind,
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
        })
    }

    /// Lookups served from the cache and compiled afresh so far.
    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    /// The component compiled from `bytes`, if this directory holds a trusted entry for it
    /// that fits `engine`. An entry present but refused is logged.
    pub(crate) fn lookup(&self, engine: &Engine, bytes: &[u8]) -> Option<Component> {
        let name = self.entry_name(bytes);
        self.lookup_entry(engine, &name, &self.entry_path(&name))
    }

    /// [`CompileCache::lookup`] of the entry `name` at `path`, both already derived.
    fn lookup_entry(&self, engine: &Engine, name: &str, path: &Path) -> Option<Component> {
        match self.read_entry(path, name) {
            Ok(Some(artifact)) => match deserialize(engine, &artifact) {
                Ok(component) => {
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    match self.kind {
                        Kind::Private => touch(path),
                        Kind::Shipped => tracing::info!(
                            entry = %path.display(),
                            "guest's compiled form taken from --compiled-guests"
                        ),
                    }
                    return Some(component);
                }
                Err(error) => tracing::warn!(
                    entry = %path.display(), error = %format!("{error:#}"),
                    "{} entry does not fit this engine; recompiling", self.kind.label()
                ),
            },
            Ok(None) if self.kind == Kind::Shipped => tracing::info!(
                dir = %self.dir.display(),
                "--compiled-guests holds no compiled form of this guest for this engine; compiling"
            ),
            Ok(None) => {}
            Err(why) => tracing::warn!(
                entry = %path.display(), %why,
                "{} entry refused; recompiling", self.kind.label()
            ),
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// The component compiled from `bytes`: from a trusted entry if there is one, otherwise
    /// compiled and stored. A cache that cannot be read or written costs a compilation and a
    /// warning, never the load.
    pub(crate) fn load(&self, engine: &Engine, bytes: &[u8]) -> Result<Component, LoadError> {
        let name = self.entry_name(bytes);
        let path = self.entry_path(&name);
        if let Some(component) = self.lookup_entry(engine, &name, &path) {
            return Ok(component);
        }
        let component =
            Component::new(engine, bytes).map_err(|e| LoadError::Compile(format!("{e:#}")))?;
        if self.kind == Kind::Shipped {
            return Ok(component);
        }
        match component.serialize() {
            Ok(artifact) => {
                if let Err(error) = self.write_entry(&path, &name, &artifact) {
                    tracing::warn!(entry = %path.display(), %error, "cannot store compiled guest");
                }
                self.evict();
            }
            Err(error) => {
                tracing::warn!(error = %format!("{error:#}"), "cannot serialize compiled guest");
            }
        }
        Ok(component)
    }

    fn entry_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.{ENTRY_EXTENSION}"))
    }

    /// The entry's name: the SHA-256 of the engine hash and of the guest's own SHA-256.
    fn entry_name(&self, bytes: &[u8]) -> String {
        let guest = Sha256::digest(bytes);
        let mut name = Sha256::new();
        name.update(b"weir compile cache entry\0");
        name.update(self.engine.as_bytes());
        name.update(b"\0");
        name.update(guest);
        hex::encode(name.finalize())
    }

    /// The artifact of the entry at `path`, if there is one, it is weir's user's alone, and its
    /// checksum shows it was written for `name`; `Err` says why an entry present is not trusted.
    fn read_entry(&self, path: &Path, name: &str) -> Result<Option<Vec<u8>>, String> {
        let mut file = match OpenOptions::new()
            .read(true)
            .custom_flags(NOFOLLOW)
            .open(path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
                return Err("it is a symbolic link".into());
            }
            Err(e) => return Err(e.to_string()),
        };
        let meta = file.metadata().map_err(|e| e.to_string())?;
        if !meta.is_file() {
            return Err("it is not a regular file".into());
        }
        if !self.kind.trusts(meta.uid()) {
            return Err(format!("it is owned by uid {}, not weir's", meta.uid()));
        }
        if meta.permissions().mode() & 0o022 != 0 {
            return Err("it is writable by group or others".into());
        }
        if meta.len() > CACHE_MAX_BYTES {
            return Err(format!("it is larger than {CACHE_MAX_BYTES} bytes"));
        }
        let mut content = Vec::with_capacity(meta.len() as usize);
        Read::by_ref(&mut file)
            .take(CACHE_MAX_BYTES)
            .read_to_end(&mut content)
            .map_err(|e| e.to_string())?;
        let Some(rest) = content.strip_prefix(MAGIC) else {
            return Err("it is not an entry of this cache's format".into());
        };
        if rest.len() < CHECKSUM_LEN {
            return Err("it is truncated".into());
        }
        let (sum, artifact) = rest.split_at(CHECKSUM_LEN);
        if sum != checksum(name, artifact).as_slice() {
            return Err(
                "its checksum does not match: it was not written for this guest and \
                        engine, or it is damaged"
                    .into(),
            );
        }
        Ok(Some(artifact.to_vec()))
    }

    /// Writes an entry atomically: a private temporary file, synced, renamed into place.
    fn write_entry(&self, path: &Path, name: &str, artifact: &[u8]) -> std::io::Result<()> {
        let temp = temp_path(&self.dir, name);
        let written = (|| {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(self.kind.entry_mode())
                .open(&temp)?;
            file.write_all(MAGIC)?;
            file.write_all(&checksum(name, artifact))?;
            file.write_all(artifact)?;
            file.sync_all()?;
            fs::rename(&temp, path)
        })();
        if written.is_err() {
            let _ = fs::remove_file(&temp);
        }
        written
    }

    /// Removes the least recently used entries past the limits, and temporary files left by
    /// writers that died.
    fn evict(&self) {
        let Ok(listing) = fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut entries = Vec::new();
        for item in listing.flatten() {
            let path = item.path();
            let Ok(meta) = item.metadata() else { continue };
            let modified = meta.modified().unwrap_or(now);
            let file_name = item.file_name();
            let file_name = file_name.to_string_lossy();
            if file_name.starts_with('.') && file_name.ends_with(".tmp") {
                if now.duration_since(modified).unwrap_or_default() > STALE_TEMP {
                    let _ = fs::remove_file(&path);
                }
            } else if path.extension().is_some_and(|e| e == ENTRY_EXTENSION) {
                entries.push((modified, meta.len(), path));
            }
        }
        entries.sort();
        let mut count = entries.len() as u64;
        let mut bytes: u64 = entries.iter().map(|(_, len, _)| len).sum();
        for (_, len, path) in entries {
            if count <= CACHE_MAX_FILES && bytes <= CACHE_MAX_BYTES {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                count -= 1;
                bytes -= len;
            }
        }
    }
}

/// Deserializes an artifact whose integrity tag has been verified.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, artifact: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `Component::deserialize` runs whatever machine code the bytes hold, so they must
    // come from `Component::serialize` of a trusted engine. They come from a directory and a
    // file only weir's user can write (checked on open and on read), and carry a SHA-256 over
    // the entry's name (the guest's SHA-256 and this engine's compatibility hash) and the
    // bytes: weir serialized them from these guest bytes, with an engine like this one.
    // wasmtime checks the header's version and settings on top.
    unsafe { Component::deserialize(engine, artifact) }
}

/// `open(2)` flag that refuses a symbolic link as the last component.
const NOFOLLOW: i32 = rustix::fs::OFlags::NOFOLLOW.bits() as i32;

/// The effective user id, the owner weir's files get.
fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// What an entry stores to show it holds `artifact` for `name`: SHA-256 over both.
fn checksum(name: &str, artifact: &[u8]) -> [u8; CHECKSUM_LEN] {
    let mut sum = Sha256::new();
    sum.update(b"weir compile cache checksum\0");
    sum.update(name.as_bytes());
    sum.update(b"\0");
    sum.update(artifact);
    sum.finalize().into()
}

fn check_owner(
    path: &Path,
    meta: &fs::Metadata,
    kind: Kind,
    flag: &'static str,
) -> Result<(), CacheError> {
    let me = euid();
    if !kind.trusts(meta.uid()) {
        let owners = match kind {
            Kind::Private => format!("weir's uid {me}"),
            Kind::Shipped => format!("root or weir's uid {me}"),
        };
        return Err(CacheError::Unsafe {
            flag,
            path: path.to_path_buf(),
            why: format!("it is owned by uid {}, not by {owners}", meta.uid()),
            fix: format!(
                "chown {me} {} (or point {flag} at a directory weir creates)",
                path.display()
            ),
        });
    }
    Ok(())
}

/// A temporary file name in `dir` that no other writer uses at the same time.
fn temp_path(dir: &Path, name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// Marks an entry as used now, for least-recently-used eviction.
fn touch(path: &Path) {
    if let Ok(file) = OpenOptions::new()
        .write(true)
        .custom_flags(NOFOLLOW)
        .open(path)
    {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// The engine's compatibility hash (wasmtime's version, compiler and settings that shape
/// code), with weir's version, as hex SHA-256.
fn engine_hash(engine: &Engine) -> String {
    use std::hash::Hash;
    let mut hasher = Sha256Hasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.0.update(env!("CARGO_PKG_VERSION").as_bytes());
    hex::encode(hasher.0.finalize())
}

/// `std::hash::Hasher` over SHA-256, for a hash that is the same in every process (the
/// standard hashers are seeded or unspecified across releases).
struct Sha256Hasher(Sha256);

impl std::hash::Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        // Only the full digest is used.
        0
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_depend_on_the_guest_bytes_and_the_engine() {
        let dir = std::env::temp_dir().join(format!("weir-cache-unit-{}", std::process::id()));
        let engine = Engine::default();
        let cache = CompileCache::open(&dir, &engine).unwrap();
        assert_ne!(cache.entry_name(b"a"), cache.entry_name(b"b"));
        let mut config = wasmtime::Config::new();
        config.epoch_interruption(true);
        let other = CompileCache::open(&dir, &Engine::new(&config).unwrap()).unwrap();
        assert_ne!(cache.entry_name(b"a"), other.entry_name(b"a"));
        // The same engine settings give the same name in another process.
        let again = CompileCache::open(&dir, &Engine::default()).unwrap();
        assert_eq!(cache.entry_name(b"a"), again.entry_name(b"a"));
        let _ = fs::remove_dir_all(&dir);
    }
}
