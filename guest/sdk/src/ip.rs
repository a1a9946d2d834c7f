//! IP parsing as Kubernetes does it (spec §7.3): lenient IPv4 (leading zeros are decimal), and
//! the canonical text form Go's `net.IP.String` produces.

use std::borrow::Cow;
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
pub(crate) fn parse_sloppy(text: &str) -> Option<IpAddr> {
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

/// Dotted decimal with exactly four parts of one or more ASCII digits each, every part at
/// most 255 once its leading zeros are dropped.
fn parse_v4_sloppy(text: &str) -> Option<Ipv4Addr> {
    scan_v4(text).map(|(v4, _)| v4)
}

/// [`parse_v4_sloppy`], and whether a part is written with a leading zero (`010`, `00`), in
/// one pass over the bytes rather than `split` and `parse` and a second scan: every pod's IP
/// passes through here once per output.
fn scan_v4(text: &str) -> Option<(Ipv4Addr, bool)> {
    let mut octets = [0u8; 4];
    let mut part = 0;
    let mut value: u32 = 0;
    let mut digits = 0;
    let mut padded = false;
    for &b in text.as_bytes() {
        match b {
            b'0'..=b'9' => {
                // A second digit after a part's first `0` means that `0` was padding.
                padded |= digits > 0 && value == 0;
                value = value * 10 + u32::from(b - b'0');
                // Leading zeros keep `value` at 0, so any length of them is accepted.
                if value > 255 {
                    return None;
                }
                digits += 1;
            }
            b'.' if digits > 0 && part < 3 => {
                octets[part] = value as u8;
                (part, value, digits) = (part + 1, 0, 0);
            }
            _ => return None,
        }
    }
    if part != 3 || digits == 0 {
        return None;
    }
    octets[3] = value as u8;
    Some((Ipv4Addr::from(octets), padded))
}

/// The family of a parsed address.
pub(crate) fn family(ip: &IpAddr) -> Family {
    match ip {
        IpAddr::V4(_) => Family::V4,
        IpAddr::V6(_) => Family::V6,
    }
}

/// Parses `text` sloppily and renders it canonically (`FD00:0:0::1` → `fd00::1`).
pub(crate) fn canonical(text: &str) -> Option<(String, Family)> {
    canonical_form(text).map(|(ip, family)| (ip.into_owned(), family))
}

/// [`canonical`], borrowing `text` when it is in canonical form already (the usual pod IP).
pub(crate) fn canonical_form(text: &str) -> Option<(Cow<'_, str>, Family)> {
    // Dotted decimal without leading zeros is its own canonical form: not re-rendered.
    if let Some((v4, padded)) = scan_v4(text) {
        return Some(if padded {
            (
                Cow::Owned(IpText::new(&IpAddr::V4(v4)).as_str().to_owned()),
                Family::V4,
            )
        } else {
            (Cow::Borrowed(text), Family::V4)
        });
    }
    if !text.contains(':') {
        return None;
    }
    let ip = parse_sloppy(text)?;
    let rendered = IpText::new(&ip);
    let form = if rendered.as_str() == text {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(rendered.as_str().to_owned())
    };
    Some((form, family(&ip)))
}

/// The text form of an address, exactly as `IpAddr`'s `Display` writes it (dotted decimal;
/// RFC 5952 for IPv6: lowercase, no leading zeros, the first longest run of two or more zero
/// groups as `::`; IPv4-mapped as `::ffff:a.b.c.d`), rendered into a fixed buffer.
///
/// Hand-written because this runs once per pod and once per validated address: going
/// through `fmt` and a fresh `String` was a visible share of a reconcile's time.
///
/// ```
/// use std::net::IpAddr;
/// use weir_policy::ip::IpText;
/// let ip: IpAddr = "fd00:0:0:0:0:0:0:1".parse().unwrap();
/// assert_eq!(IpText::new(&ip).as_str(), "fd00::1");
/// ```
#[derive(Clone, Copy)]
pub struct IpText {
    // The longest form is 45 bytes: `ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255` cannot
    // occur (only mapped addresses are dotted), so 39 would do; 45 keeps the bound obvious.
    buf: [u8; 45],
    len: usize,
}

impl IpText {
    /// Renders `ip`.
    pub fn new(ip: &IpAddr) -> IpText {
        let mut text = IpText {
            buf: [0; 45],
            len: 0,
        };
        match ip {
            IpAddr::V4(v4) => text.push_v4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => {
                    text.push_bytes(b"::ffff:");
                    text.push_v4(&v4);
                }
                None => text.push_v6(v6),
            },
        }
        text
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // Only ASCII digits, hex letters, '.' and ':' are ever written.
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or_default()
    }

    fn push_bytes(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn push_v4(&mut self, ip: &Ipv4Addr) {
        for (i, octet) in ip.octets().into_iter().enumerate() {
            if i > 0 {
                self.push_bytes(b".");
            }
            if octet >= 100 {
                self.push_bytes(&[b'0' + octet / 100]);
            }
            if octet >= 10 {
                self.push_bytes(&[b'0' + octet / 10 % 10]);
            }
            self.push_bytes(&[b'0' + octet % 10]);
        }
    }

    fn push_v6(&mut self, ip: &Ipv6Addr) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let groups = ip.segments();
        // The first longest run of zero groups; a single zero group is written as `0`.
        let (mut run_start, mut run_len) = (0, 0);
        let mut i = 0;
        while i < 8 {
            let start = i;
            while i < 8 && groups[i] == 0 {
                i += 1;
            }
            if i - start > run_len {
                (run_start, run_len) = (start, i - start);
            }
            i += 1;
        }
        let mut i = 0;
        while i < 8 {
            if run_len >= 2 && i == run_start {
                self.push_bytes(b"::");
                i += run_len;
                continue;
            }
            if i > 0 && self.buf[self.len - 1] != b':' {
                self.push_bytes(b":");
            }
            let group = groups[i];
            let digits = (16 - group.leading_zeros()).div_ceil(4).max(1);
            for shift in (0..digits).rev() {
                self.push_bytes(&[HEX[usize::from((group >> (shift * 4)) & 0xf)]]);
            }
            i += 1;
        }
    }
}

impl std::fmt::Debug for IpText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_text_is_borrowed_and_any_other_rendered() {
        use std::borrow::Cow;
        for text in ["10.0.0.1", "fd00::1", "2001:db8::10:0:0:1"] {
            assert!(
                matches!(canonical_form(text), Some((Cow::Borrowed(t), _)) if t == text),
                "{text}"
            );
        }
        for (text, want) in [
            ("010.0.0.1", "10.0.0.1"),
            ("FD00:0::1", "fd00::1"),
            ("::ffff:10.0.0.1", "10.0.0.1"),
        ] {
            assert!(
                matches!(canonical_form(text), Some((Cow::Owned(t), _)) if t == want),
                "{text}"
            );
        }
        assert_eq!(canonical_form("10.0.0"), None);
    }

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

    proptest::proptest! {
        #[test]
        fn text_matches_display_for_every_address(bits: u128, v4: u32, zeros: u8) {
            // Zero out some groups so that runs of zeros (and ties between runs) are common.
            let mut groups = Ipv6Addr::from(bits).segments();
            for (i, group) in groups.iter_mut().enumerate() {
                if zeros & (1 << i) != 0 {
                    *group = 0;
                }
            }
            for ip in [
                IpAddr::V6(Ipv6Addr::from(groups)),
                IpAddr::V6(Ipv6Addr::from(bits)),
                IpAddr::V6(Ipv4Addr::from(v4).to_ipv6_mapped()),
                IpAddr::V4(Ipv4Addr::from(v4)),
            ] {
                let text = IpText::new(&ip);
                proptest::prop_assert_eq!(text.as_str(), ip.to_string());
            }
        }
    }

    #[test]
    fn text_of_edge_addresses() {
        for text in [
            "::",
            "::1",
            "1::",
            "0.0.0.0",
            "255.255.255.255",
            "1:0:0:1::1",
            "1::1:0:0:1",
        ] {
            let ip: IpAddr = text.parse().unwrap();
            assert_eq!(IpText::new(&ip).as_str(), text);
        }
    }

    /// The straightforward reading of a sloppy dotted quad (split, trim zeros, parse), kept
    /// as the model the byte-wise parser must agree with.
    fn v4_model(text: &str) -> Option<Ipv4Addr> {
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

    proptest::proptest! {
        #[test]
        fn v4_parser_agrees_with_the_model(text in "[0-9.a+-]{0,20}", quad in "(0{0,3}[0-9]{1,4}\\.){3}0{0,3}[0-9]{1,4}") {
            proptest::prop_assert_eq!(parse_v4_sloppy(&text), v4_model(&text), "{}", text);
            proptest::prop_assert_eq!(parse_v4_sloppy(&quad), v4_model(&quad), "{}", quad);
        }

        #[test]
        fn v4_canonical_text_is_the_models_display(quad in "(0{0,3}[0-9]{1,4}\\.){3}0{0,3}[0-9]{1,4}") {
            // Whether copied as is or re-rendered, the text is the address's display form.
            let want = v4_model(&quad).map(|ip| (ip.to_string(), Family::V4));
            proptest::prop_assert_eq!(canonical(&quad), want, "{}", quad);
        }
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
