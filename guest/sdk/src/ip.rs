//! IP parsing as Kubernetes does it (spec §7.3): lenient IPv4 (leading zeros are decimal), and
//! the canonical text form Go's `net.IP.String` produces.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IP address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// IPv4, including IPv4-mapped IPv6 text such as `::ffff:10.0.0.1`.
    V4,
    /// IPv6.
    V6,
}

impl Family {
    /// The family a Service's `ipFamilies` entry names: `IPv6` is IPv6, anything else IPv4
    /// (upstream compares with `IPv6` only).
    pub fn from_ip_family(name: &str) -> Family {
        if name == "IPv6" {
            Family::V6
        } else {
            Family::V4
        }
    }
}

/// Parses `text` like Kubernetes' `ParseIPSloppy`: IPv4 octets may carry leading zeros and are
/// read as decimal (`010.1.1.1` is `10.1.1.1`); IPv4-mapped IPv6 addresses come back as IPv4.
pub fn parse_sloppy(text: &str) -> Option<IpAddr> {
    if text.contains(':') {
        let (head, tail) = match text.rfind(':') {
            Some(i) if text[i + 1..].contains('.') => (&text[..=i], Some(&text[i + 1..])),
            _ => (text, None),
        };
        let v6 = match tail {
            // An embedded dotted quad may have leading zeros too; rewrite it before parsing.
            Some(quad) => {
                let v4 = parse_v4_sloppy(quad)?;
                format!("{head}{v4}").parse::<Ipv6Addr>().ok()?
            }
            None => head.parse::<Ipv6Addr>().ok()?,
        };
        Some(match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        })
    } else {
        parse_v4_sloppy(text).map(IpAddr::V4)
    }
}

fn parse_v4_sloppy(text: &str) -> Option<Ipv4Addr> {
    let mut octets = [0u8; 4];
    let mut parts = text.split('.');
    for octet in &mut octets {
        let part = parts.next()?;
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let digits = part.trim_start_matches('0');
        *octet = if digits.is_empty() {
            0
        } else {
            u8::try_from(digits.parse::<u32>().ok()?).ok()?
        };
    }
    parts.next().is_none().then(|| Ipv4Addr::from(octets))
}

/// The family of a parsed address.
pub fn family(ip: &IpAddr) -> Family {
    match ip {
        IpAddr::V4(_) => Family::V4,
        IpAddr::V6(_) => Family::V6,
    }
}

/// Parses `text` sloppily and renders it canonically (`FD00:0:0::1` → `fd00::1`).
pub fn canonical(text: &str) -> Option<(String, Family)> {
    let ip = parse_sloppy(text)?;
    Some((ip.to_string(), family(&ip)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_zeros_are_decimal() {
        assert_eq!(
            canonical("010.244.001.009"),
            Some(("10.244.1.9".into(), Family::V4))
        );
        assert_eq!(canonical("0.0.0.0"), Some(("0.0.0.0".into(), Family::V4)));
    }

    #[test]
    fn ipv6_is_lowercased_and_compressed() {
        assert_eq!(
            canonical("FD00:10:244:1:0:0:0:9"),
            Some(("fd00:10:244:1::9".into(), Family::V6))
        );
    }

    #[test]
    fn ipv4_mapped_counts_as_ipv4() {
        assert_eq!(
            canonical("::ffff:10.1.2.3"),
            Some(("10.1.2.3".into(), Family::V4))
        );
        assert_eq!(
            canonical("::ffff:010.1.2.3"),
            Some(("10.1.2.3".into(), Family::V4))
        );
    }

    #[test]
    fn garbage_is_rejected() {
        for bad in [
            "",
            "1.2.3",
            "1.2.3.4.5",
            "256.1.1.1",
            "a.b.c.d",
            "1..2.3",
            "::g",
            "1.2.3.-4",
        ] {
            assert_eq!(canonical(bad), None, "{bad}");
        }
    }
}
