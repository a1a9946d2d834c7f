//! The guest panel of the demo: the active guest (name, world, digest), the shadow guest and
//! how its decisions compared, and the last refused swap.

use crate::controller::Handle;
use crate::metrics::ResultLabel;
use crate::runtime::Guest;
use crate::swap::Swapper;

use super::guests::Names;

/// Hex digits of a digest the view shows.
const SHORT_DIGEST: usize = 12;

/// One guest, as the view names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestLine {
    /// The name the demo gave it.
    pub name: String,
    /// The contract it speaks, `weir:endpoints@0.2.0`.
    pub world: &'static str,
    /// `sha256:` and the first hex digits of its digest.
    pub digest: String,
}

impl GuestLine {
    fn of(guest: &Guest, names: &Names) -> GuestLine {
        GuestLine {
            name: names.name(guest.digest()),
            world: guest.world().package(),
            digest: format!(
                "sha256:{}",
                &guest.digest()[..SHORT_DIGEST.min(guest.digest().len())]
            ),
        }
    }
}

impl std::fmt::Display for GuestLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}, {})", self.name, self.world, self.digest)
    }
}

/// Everything the panel shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestPanel {
    /// The guest that decides what is written.
    pub active: GuestLine,
    /// The shadow guest, and its comparisons: (guest, same, different, failed).
    pub shadow: Option<(GuestLine, u64, u64, u64)>,
    /// Why the last refused candidate was refused.
    pub last_refusal: Option<String>,
}

/// The panel as it stands.
pub fn panel(
    handle: &Handle,
    swapper: &Swapper,
    names: &Names,
    shadow: Option<&Guest>,
) -> GuestPanel {
    let count = |result| {
        handle
            .metrics
            .shadow
            .get_or_create(&ResultLabel { result })
            .get()
    };
    let info = swapper.info();
    let last_refusal = info["history"].as_array().and_then(|history| {
        history
            .iter()
            .rev()
            .find(|r| r["outcome"] == "refused")
            .and_then(|r| r["reason"].as_str())
            .map(one_line)
    });
    GuestPanel {
        active: GuestLine::of(&handle.guest.current(), names),
        shadow: shadow.map(|g| {
            (
                GuestLine::of(g, names),
                count("same"),
                count("different"),
                count("failed"),
            )
        }),
        last_refusal,
    }
}

/// `text` on one line: wasm error chains carry newlines and runs of spaces.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_joins_lines_and_runs_of_spaces() {
        assert_eq!(one_line("a\n   b  c\n"), "a b c");
    }
}
