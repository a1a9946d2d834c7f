//! What the stalling test guests share: upstream behaviour, except for a Service labelled
//! `weir.test/stall=true`, where each stalls its own way ([`stall_guest!`]).

use weir_policy::types::Request;

/// The label that makes a guest stall; other Services get upstream behaviour.
pub const STALL_LABEL: (&str, &str) = ("weir.test/stall", "true");

/// Whether the request's Service carries [`STALL_LABEL`].
pub fn marked(request: &Request) -> bool {
    request.service.as_ref().is_some_and(|s| {
        s.labels
            .iter()
            .any(|l| l.key == STALL_LABEL.0 && l.value == STALL_LABEL.1)
    })
}

/// Defines and exports the guest `$guest`: upstream behaviour, except that for a
/// [`marked`] Service it runs `$stall` (which should not return) and fails with the message
/// it returns.
#[macro_export]
macro_rules! stall_guest {
    ($guest:ident, $stall:expr) => {
        struct $guest;

        impl ::weir_policy::bindings::Guest for $guest {
            fn validate_config(_config: String) -> Result<(), String> {
                Ok(())
            }

            fn reconcile(
                request: ::weir_policy::types::Request,
            ) -> Result<::weir_policy::types::Decision, String> {
                if $crate::marked(&request) {
                    let stall: fn() -> String = $stall;
                    return Err(stall());
                }
                let policy: ::weir_policy::DefaultPolicy =
                    ::weir_policy::parse_config(&request.config)?;
                ::weir_policy::reconcile(&policy, &request)
            }
        }

        ::weir_policy::bindings::export!($guest);
    };
}
