//! What one guest call may spend, and how a guest asks for more than the operator's defaults.
//!
//! A language runtime inside a guest (CPython, SpiderMonkey) needs a longer deadline and more
//! memory than a Rust guest. Rather than a global bump, a guest carries its own request in a
//! custom section of its component, [`SECTION`], so the request travels with the bytes
//! (file, ConfigMap, OCI artifact) and the digest covers it. The host grants it when it
//! loads the guest, within the operator's ceilings ([`Limits::max_deadline`],
//! [`Limits::max_memory`]); a guest that asks for more is refused, never silently capped. A
//! request only raises a limit: the operator's defaults stay the floor, so an operator who
//! gives every guest more time (a debug build, a slow node) is not undercut by a guest.

use std::time::Duration;

use wasm_encoder::{ComponentSection, CustomSection, Encode};
use wasmparser::{Chunk, Parser, Payload};

/// The name of the component custom section holding a guest's [`Requested`] limits.
pub const SECTION: &str = "weir-limits";

/// Most bytes of a [`SECTION`] payload: a few keys of JSON. Anything longer is not ours.
const MAX_SECTION_BYTES: usize = 4096;

/// Limits applied to a guest's calls, and the ceilings bounding what a guest may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock budget of one call, instantiation included.
    pub deadline: Duration,
    /// Most bytes one call's store may hold in linear memories and tables together.
    pub memory: usize,
    /// Most addresses (ready and not ready) a decision may carry.
    pub max_addresses: usize,
    /// Longest deadline a guest may ask for in its [`SECTION`].
    pub max_deadline: Duration,
    /// Most memory, in bytes, a guest may ask for in its [`SECTION`].
    pub max_memory: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deadline: Duration::from_millis(100),
            memory: 64 << 20,
            max_addresses: 10_000,
            max_deadline: Duration::from_secs(2),
            max_memory: 512 << 20,
        }
    }
}

/// The limits a guest asks for; a field left out, or below the operator's default, keeps the
/// default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Requested {
    /// Wall-clock budget of one call, instantiation included.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "humantime_serde_opt"
    )]
    pub deadline: Option<Duration>,
    /// Most memory of one call, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<usize>,
}

impl Requested {
    /// Whether the guest asks for nothing.
    pub fn is_empty(&self) -> bool {
        self.deadline.is_none() && self.memory_mib.is_none()
    }
}

impl std::fmt::Display for Requested {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(deadline) = self.deadline {
            parts.push(format!("deadline {}", humantime::format_duration(deadline)));
        }
        if let Some(mib) = self.memory_mib {
            parts.push(format!("memory {mib} MiB"));
        }
        if parts.is_empty() {
            parts.push("nothing".into());
        }
        f.write_str(&parts.join(", "))
    }
}

/// `deadline` as a humantime string (`2s`, `250ms`), as the command-line flags write it.
mod humantime_serde_opt {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_str(&humantime::format_duration(*d).to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text)
            .map(Some)
            .map_err(|e| serde::de::Error::custom(format!("deadline {text:?}: {e}")))
    }
}

/// Why a guest's limits section cannot be read or granted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitsError {
    /// The component cannot be parsed far enough to find its sections.
    #[error("not a valid WebAssembly component: {0}")]
    NotComponent(String),
    /// The section is there but unreadable.
    #[error("the component's {SECTION} section is malformed: {0}")]
    Malformed(String),
    /// The guest asks for more than the operator allows, or for nothing usable.
    #[error("the component's {SECTION} section asks for {asked}, {why}")]
    Refused {
        /// What the guest asked for.
        asked: String,
        /// Which bound it breaks.
        why: String,
    },
}

impl Limits {
    /// The limits a guest asking for `requested` runs under: each field it names raises the
    /// default to that value, within the ceilings.
    pub fn grant(self, requested: &Requested) -> Result<Limits, LimitsError> {
        let refuse = |asked: String, why: String| LimitsError::Refused { asked, why };
        let mut limits = self;
        if let Some(deadline) = requested.deadline {
            let asked = format!("deadline {}", humantime::format_duration(deadline));
            if deadline.is_zero() {
                return Err(refuse(asked, "which must be more than 0".into()));
            }
            if deadline > self.max_deadline {
                return Err(refuse(
                    asked,
                    format!(
                        "over the ceiling of {} (--guest-max-deadline)",
                        humantime::format_duration(self.max_deadline)
                    ),
                ));
            }
            limits.deadline = limits.deadline.max(deadline);
        }
        if let Some(mib) = requested.memory_mib {
            let asked = format!("memory {mib} MiB");
            if mib == 0 {
                return Err(refuse(asked, "which must be at least 1 MiB".into()));
            }
            let bytes = mib.saturating_mul(1 << 20);
            if bytes > self.max_memory {
                return Err(refuse(
                    asked,
                    format!(
                        "over the ceiling of {} MiB (--guest-max-memory-mib)",
                        self.max_memory >> 20
                    ),
                ));
            }
            limits.memory = limits.memory.max(bytes);
        }
        Ok(limits)
    }
}

/// One [`SECTION`] found: its byte range in the component (header included) and its payload.
type Found<'a> = (std::ops::Range<usize>, &'a [u8]);

/// The outermost component's [`SECTION`] sections. Nested modules and components are skipped
/// whole: only the outermost component speaks for the guest.
fn sections(bytes: &[u8]) -> Result<Vec<Found<'_>>, LimitsError> {
    let malformed = |e: wasmparser::BinaryReaderError| LimitsError::NotComponent(e.to_string());
    let mut parser = Parser::new(0);
    let mut offset = 0;
    let mut found = Vec::new();
    loop {
        let rest = bytes.get(offset..).unwrap_or_default();
        let (consumed, payload) = match parser.parse(rest, true).map_err(malformed)? {
            Chunk::Parsed { consumed, payload } => (consumed, payload),
            // Not returned when the input is complete (eof): it is an error instead.
            Chunk::NeedMoreData(_) => {
                return Err(LimitsError::NotComponent("truncated".into()));
            }
        };
        let start = offset;
        offset += consumed;
        match payload {
            Payload::Version { encoding, .. } if encoding != wasmparser::Encoding::Component => {
                return Err(LimitsError::NotComponent(
                    "a core module, not a component".into(),
                ));
            }
            Payload::ModuleSection {
                unchecked_range, ..
            }
            | Payload::ComponentSection {
                unchecked_range, ..
            } => offset = unchecked_range.end,
            Payload::CustomSection(reader) if reader.name() == SECTION => {
                found.push((start..offset, reader.data()));
            }
            Payload::End(_) => return Ok(found),
            _ => {}
        }
    }
}

/// The limits a component asks for in its [`SECTION`]; `None` when it has no such section.
pub fn requested(bytes: &[u8]) -> Result<Option<Requested>, LimitsError> {
    let found = sections(bytes)?;
    let data = match found.as_slice() {
        [] => return Ok(None),
        [(_, data)] => *data,
        _ => {
            return Err(LimitsError::Malformed(format!(
                "{} of them; a component carries one",
                found.len()
            )));
        }
    };
    if data.len() > MAX_SECTION_BYTES {
        return Err(LimitsError::Malformed(format!(
            "{} bytes, more than {MAX_SECTION_BYTES}",
            data.len()
        )));
    }
    serde_json::from_slice(data)
        .map(Some)
        .map_err(|e| LimitsError::Malformed(e.to_string()))
}

/// `bytes` with `requested` as its [`SECTION`], replacing any it had; with no section at all
/// when `requested` asks for nothing.
pub fn with_requested(bytes: &[u8], requested: &Requested) -> Result<Vec<u8>, LimitsError> {
    let mut out = Vec::with_capacity(bytes.len() + 64);
    let mut kept = 0;
    for (range, _) in sections(bytes)? {
        out.extend_from_slice(&bytes[kept..range.start]);
        kept = range.end;
    }
    out.extend_from_slice(&bytes[kept..]);
    if requested.is_empty() {
        return Ok(out);
    }
    let payload = serde_json::to_vec(requested).expect("limits serialize to JSON");
    let section = CustomSection {
        name: SECTION.into(),
        data: payload.into(),
    };
    out.push(ComponentSection::id(&section));
    section.encode(&mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::DEFAULT_GUEST;

    fn ask(deadline: Option<u64>, memory_mib: Option<usize>) -> Requested {
        Requested {
            deadline: deadline.map(Duration::from_millis),
            memory_mib,
        }
    }

    #[test]
    fn a_guest_asking_nothing_keeps_the_defaults_and_a_request_raises_them() {
        let defaults = Limits::default();
        assert_eq!(defaults.grant(&Requested::default()).unwrap(), defaults);
        let granted = defaults.grant(&ask(Some(1500), Some(256))).unwrap();
        assert_eq!(granted.deadline, Duration::from_millis(1500));
        assert_eq!(granted.memory, 256 << 20);
        assert_eq!(granted.max_addresses, defaults.max_addresses);
        // Asking for less than the defaults keeps them: they are the operator's floor.
        let less = defaults.grant(&ask(Some(20), Some(16))).unwrap();
        assert_eq!(less, defaults);
    }

    #[test]
    fn requests_beyond_the_ceilings_or_of_zero_are_refused_with_the_bound() {
        let defaults = Limits::default();
        let err = defaults.grant(&ask(Some(2001), None)).unwrap_err();
        assert!(err.to_string().contains("--guest-max-deadline"), "{err}");
        assert!(err.to_string().contains("2s 1ms"), "{err}");
        let err = defaults.grant(&ask(None, Some(513))).unwrap_err();
        assert!(err.to_string().contains("513 MiB"), "{err}");
        assert!(err.to_string().contains("512 MiB"), "{err}");
        assert!(defaults.grant(&ask(Some(0), None)).is_err());
        assert!(defaults.grant(&ask(None, Some(0))).is_err());
        assert!(defaults.grant(&ask(None, Some(usize::MAX))).is_err());
        // Exactly at the ceilings is allowed.
        let top = defaults.grant(&ask(Some(2000), Some(512))).unwrap();
        assert_eq!(
            (top.deadline, top.memory),
            (defaults.max_deadline, 512 << 20)
        );
    }

    #[test]
    fn the_section_round_trips_replaces_and_leaves_the_component_loadable() {
        assert_eq!(requested(DEFAULT_GUEST).unwrap(), None);
        let asked = ask(Some(750), Some(128));
        let once = with_requested(DEFAULT_GUEST, &asked).unwrap();
        assert_eq!(requested(&once).unwrap(), Some(asked));
        let changed = ask(Some(1000), None);
        let twice = with_requested(&once, &changed).unwrap();
        assert_eq!(requested(&twice).unwrap(), Some(changed));
        assert_eq!(
            twice.len(),
            with_requested(DEFAULT_GUEST, &changed).unwrap().len()
        );
        let cleared = with_requested(&twice, &Requested::default()).unwrap();
        assert_eq!(cleared, DEFAULT_GUEST);
        wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
            .validate_all(&twice)
            .expect("a component with the section stays valid");
    }

    #[test]
    fn malformed_or_unknown_sections_are_refused_with_a_reason() {
        let section = |payload: &[u8]| {
            let mut bytes = DEFAULT_GUEST.to_vec();
            let section = CustomSection {
                name: SECTION.into(),
                data: payload.into(),
            };
            bytes.push(ComponentSection::id(&section));
            section.encode(&mut bytes);
            bytes
        };
        for payload in [
            &b"not json"[..],
            br#"{"deadline": "soon"}"#,
            br#"{"deadline": "1s", "cpu": 2}"#,
            br#"{"memory-mib": -1}"#,
        ] {
            let err = requested(&section(payload)).unwrap_err();
            assert!(matches!(err, LimitsError::Malformed(_)), "{err}");
        }
        let big = format!(r#"{{"deadline": "1s{}"}}"#, " ".repeat(MAX_SECTION_BYTES));
        assert!(requested(&section(big.as_bytes())).is_err());
        let mut doubled = section(br#"{"deadline": "1s"}"#);
        let extra = section(br#"{"deadline": "2s"}"#);
        doubled.extend_from_slice(&extra[DEFAULT_GUEST.len()..]);
        assert!(
            requested(&doubled)
                .unwrap_err()
                .to_string()
                .contains("2 of them")
        );
        assert!(matches!(
            requested(b"\0asm\x01\0\0\0"),
            Err(LimitsError::NotComponent(_))
        ));
        assert!(matches!(
            requested(&DEFAULT_GUEST[..100]),
            Err(LimitsError::NotComponent(_))
        ));
    }
}
