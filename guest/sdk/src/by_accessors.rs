//! The traits of the SDK's read-only views ([`crate::Address`], [`crate::Port`]): each
//! holds its record borrowed or given (its own `Held` enum), and is compared and printed by
//! what its accessors say, not by how it is held (a borrowed one would print its whole pod).

/// Implements, for `$view<'_>` over the record `$record`: `From<$record>` (a given record),
/// and `Debug`, `PartialEq` and `Eq` on the accessors `$field`, in that order.
macro_rules! by_accessors {
    ($view:ident, $record:ty, $($field:ident),+) => {
        impl From<$record> for $view<'_> {
            fn from(record: $record) -> Self {
                $view(Held::Given(record))
            }
        }

        impl std::fmt::Debug for $view<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($view))
                    $(.field(stringify!($field), &self.$field()))+
                    .finish()
            }
        }

        impl PartialEq for $view<'_> {
            fn eq(&self, other: &Self) -> bool {
                $(self.$field() == other.$field())&&+
            }
        }

        impl Eq for $view<'_> {}
    };
}

pub(crate) use by_accessors;
