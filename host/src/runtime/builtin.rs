//! The guests built into weir, named `builtin:NAME` wherever a guest is accepted.

/// The default guest, built from `guest/default` by this crate's build script.
pub static DEFAULT_GUEST: &[u8] = include_bytes!(env!("WEIR_DEFAULT_GUEST_WASM"));

/// The CEL guest, built from `guest/cel` by this crate's build script.
pub static CEL_GUEST: &[u8] = include_bytes!(env!("WEIR_CEL_GUEST_WASM"));

/// A guest built into weir.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `builtin:default`: upstream's Endpoints and EndpointSlice controllers (`guest/default`).
    Default,
    /// `builtin:cel`: upstream's behaviour with endpoint rules in CEL, from the policy
    /// configuration (`guest/cel`, docs/policy-authoring.md §10).
    Cel,
}

impl Builtin {
    /// Every built-in guest.
    pub const ALL: [Builtin; 2] = [Builtin::Default, Builtin::Cel];

    /// The prefix that names a built-in guest: `builtin:NAME`.
    pub const PREFIX: &'static str = "builtin:";

    /// Its name after `builtin:`.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Default => "default",
            Builtin::Cel => "cel",
        }
    }

    /// Its component.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Builtin::Default => DEFAULT_GUEST,
            Builtin::Cel => CEL_GUEST,
        }
    }

    /// The built-in guest called `name` (without the prefix).
    pub fn from_name(name: &str) -> Result<Builtin, String> {
        Builtin::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| {
                let known: Vec<String> = Builtin::ALL.iter().map(ToString::to_string).collect();
                format!(
                    "no built-in guest {:?}; the built-in guests are {}",
                    name,
                    known.join(", ")
                )
            })
    }
}

impl std::fmt::Display for Builtin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", Builtin::PREFIX, self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_known() {
        for builtin in Builtin::ALL {
            assert_eq!(Builtin::from_name(builtin.name()), Ok(builtin));
        }
        assert_eq!(Builtin::Cel.to_string(), "builtin:cel");
        let err = Builtin::from_name("rust").unwrap_err();
        assert!(err.contains("builtin:default, builtin:cel"), "{err}");
        assert_ne!(Builtin::Default.bytes(), Builtin::Cel.bytes());
    }
}
