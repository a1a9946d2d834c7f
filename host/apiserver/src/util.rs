//! Small helpers: timestamps, UIDs, a deterministic random source and `Status` errors.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// RFC 3339 timestamp (seconds precision, UTC) as Kubernetes writes `metav1.Time`.
pub(crate) fn now_rfc3339() -> String {
    rfc3339_in(0)
}

/// The time `secs` seconds from now, as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn rfc3339_in(secs: u64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_rfc3339(now.saturating_add(secs))
}

/// Formats seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn format_rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Parses `YYYY-MM-DDTHH:MM:SS(.frac)?(Z|±hh:mm)` into seconds since the epoch.
pub(crate) fn parse_rfc3339(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let days = days_from_civil(y, mo, d);
    let mut t = days * 86_400 + h * 3600 + mi * 60 + se;
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    match b.get(i) {
        Some(b'Z') | Some(b'z') => {}
        Some(c @ (b'+' | b'-')) => {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            let off = oh * 3600 + om * 60;
            if *c == b'+' {
                t -= off;
            } else {
                t += off;
            }
        }
        _ => return None,
    }
    u64::try_from(t).ok()
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Human age as kubectl prints it (`5s`, `3m`, `2d`).
pub(crate) fn human_age(ts: Option<&str>) -> String {
    let Some(created) = ts.and_then(parse_rfc3339) else {
        return "<unknown>".into();
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let s = now.saturating_sub(created);
    if s < 120 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m", s / 60)
    } else if s < 48 * 3600 {
        format!("{}h", s / 3600)
    } else {
        format!("{}d", s / 86_400)
    }
}

/// SplitMix64: a tiny deterministic random source (seedable for fault injection).
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A random RFC 4122 version 4 UUID.
    pub(crate) fn uuid(&mut self) -> String {
        let a = self.next_u64();
        let b = self.next_u64();
        let b = (b & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000;
        let a = (a & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000;
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xFFFF,
            a & 0xFFFF,
            b >> 48,
            b & 0xFFFF_FFFF_FFFF
        )
    }
    /// Random lowercase alphanumeric suffix as used for `generateName`.
    pub(crate) fn suffix(&mut self, n: usize) -> String {
        const ALPHA: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..n)
            .map(|_| ALPHA[(self.next_u64() % ALPHA.len() as u64) as usize] as char)
            .collect()
    }
}

/// An API error rendered as a `metav1.Status` body.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub(crate) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    pub(crate) fn with_details(mut self, d: Value) -> Self {
        self.details = Some(d);
        self
    }

    /// The qualified resource as Kubernetes names it in messages (`pods`, `leases.coordination.k8s.io`).
    fn details_for(resource: &str, group: &str, name: &str) -> Value {
        let mut d = json!({ "name": name, "kind": resource });
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        d
    }

    pub(crate) fn qualified(resource: &str, group: &str) -> String {
        if group.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}.{group}")
        }
    }

    pub(crate) fn not_found(resource: &str, group: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", Self::qualified(resource, group)),
        )
        .with_details(Self::details_for(resource, group, name))
    }

    pub(crate) fn already_exists(resource: &str, group: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!(
                "{} \"{name}\" already exists",
                Self::qualified(resource, group)
            ),
        )
        .with_details(Self::details_for(resource, group, name))
    }

    pub(crate) fn conflict(resource: &str, group: &str, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                Self::qualified(resource, group)
            ),
        )
        .with_details(Self::details_for(resource, group, name))
    }

    pub(crate) fn conflict_msg(resource: &str, group: &str, name: &str, msg: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {msg}",
                Self::qualified(resource, group)
            ),
        )
        .with_details(Self::details_for(resource, group, name))
    }

    pub(crate) fn invalid(
        kind: &str,
        group: &str,
        name: &str,
        causes: Vec<(String, String)>,
    ) -> Self {
        let msg = causes
            .iter()
            .map(|(f, m)| format!("{f}: {m}"))
            .collect::<Vec<_>>();
        let msg = if msg.len() == 1 {
            msg[0].clone()
        } else {
            format!("[{}]", msg.join(", "))
        };
        let mut d = json!({
            "name": name,
            "kind": kind,
            "causes": causes.iter().map(|(f, m)| json!({"reason": "FieldValueInvalid", "message": m, "field": f})).collect::<Vec<_>>(),
        });
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        let qk = Self::qualified(kind, group);
        Self::new(422, "Invalid", format!("{qk} \"{name}\" is invalid: {msg}")).with_details(d)
    }

    pub(crate) fn bad_request(msg: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", msg)
    }

    pub(crate) fn method_not_allowed(msg: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", msg)
    }

    pub(crate) fn unsupported_media(msg: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", msg)
    }

    pub(crate) fn expired(msg: impl Into<String>) -> Self {
        Self::new(410, "Expired", msg)
    }

    pub(crate) fn internal(msg: impl Into<String>) -> Self {
        Self::new(500, "InternalError", msg)
    }

    /// The `Status` object.
    pub(crate) fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        if let Some(r) = self.retry_after {
            let d = s
                .as_object_mut()
                .expect("object")
                .entry("details")
                .or_insert_with(|| json!({}));
            d["retryAfterSeconds"] = json!(r);
        }
        s
    }
}

/// Is `s` a DNS-1123 subdomain? (The rule label-selector keys use too.)
pub(crate) use weir_selector::is_dns_subdomain;

/// Is `s` a DNS-1123 label (namespace names)?
pub(crate) fn is_dns_label(s: &str) -> bool {
    s.len() <= 63 && !s.contains('.') && is_dns_subdomain(s)
}

/// Is `s` a DNS-1035 label (service names)?
pub(crate) fn is_dns1035_label(s: &str) -> bool {
    is_dns_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_roundtrip() {
        let t = 1_764_486_242;
        let s = format_rfc3339(t);
        assert_eq!(s, "2025-11-30T07:04:02Z");
        assert_eq!(parse_rfc3339(&s), Some(t));
        assert_eq!(parse_rfc3339("2025-11-30T08:04:02.123+01:00"), Some(t));
    }

    #[test]
    fn uuid_format() {
        let u = Rng::new(1).uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
    }
}
