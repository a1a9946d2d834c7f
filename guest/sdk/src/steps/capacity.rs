//! Fitting one Endpoints object's capacity (spec §12.5, §12.6; upstream `truncateEndpoints`).

use crate::steps::pack::count;
use crate::types::EndpointSubset;

/// The desired subsets after the capacity step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capped {
    /// The subsets to write.
    pub subsets: Vec<EndpointSubset>,
    /// Whether addresses were dropped to fit the capacity (the over-capacity annotation).
    pub truncated: bool,
}

/// Truncates `subsets` (in their canonical order) to at most `max` addresses, as upstream does:
/// ready addresses are kept first; each subset keeps a share of the budget proportional to its
/// size, rounded up and capped by what is left, taking its first (lowest) addresses.
pub fn truncate(mut subsets: Vec<EndpointSubset>, max: usize) -> Capped {
    let (ready, not_ready) = count(&subsets);
    if ready + not_ready <= max {
        return Capped {
            subsets,
            truncated: false,
        };
    }
    let truncate_ready = ready > max;
    let (budget, total) = if truncate_ready {
        (max, ready)
    } else {
        (max - ready, not_ready)
    };
    let mut left = budget;
    for subset in &mut subsets {
        let list = if truncate_ready {
            subset.not_ready_addresses.clear();
            &mut subset.addresses
        } else {
            &mut subset.not_ready_addresses
        };
        // Same floating-point arithmetic as upstream, so rounding agrees at the edges.
        let share = ((list.len() as f64 / total as f64) * budget as f64).ceil() as usize;
        list.truncate(share.min(left));
        left -= list.len();
    }
    Capped {
        subsets,
        truncated: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::fixtures::{address, port};

    fn subset(ready: usize, not_ready: usize, offset: usize) -> EndpointSubset {
        let addr = |i: usize| {
            address(
                &format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256),
                "",
            )
        };
        EndpointSubset {
            addresses: (offset..offset + ready).map(addr).collect(),
            not_ready_addresses: (offset + ready..offset + ready + not_ready)
                .map(addr)
                .collect(),
            ports: vec![port("p", offset as i32)],
        }
    }

    #[test]
    fn at_capacity_is_untouched() {
        let capped = truncate(vec![subset(600, 400, 0)], 1000);
        assert!(!capped.truncated);
        assert_eq!(count(&capped.subsets), (600, 400));
    }

    #[test]
    fn too_many_ready_drops_every_not_ready() {
        let capped = truncate(vec![subset(1001, 5, 0)], 1000);
        assert!(capped.truncated);
        assert_eq!(count(&capped.subsets), (1000, 0));
    }

    #[test]
    fn not_ready_share_the_rest_proportionally() {
        // 900 ready; 100 not-ready slots split 3:1 over two subsets (ceil, capped by what's left).
        let capped = truncate(vec![subset(450, 150, 0), subset(450, 50, 10_000)], 1000);
        assert_eq!(capped.subsets[0].not_ready_addresses.len(), 75);
        assert_eq!(capped.subsets[1].not_ready_addresses.len(), 25);
        assert_eq!(count(&capped.subsets), (900, 100));
    }

    #[test]
    fn rounding_up_is_absorbed_by_later_subsets() {
        let capped = truncate(
            vec![subset(3, 0, 0), subset(3, 0, 100), subset(3, 0, 200)],
            8,
        );
        let sizes: Vec<_> = capped.subsets.iter().map(|s| s.addresses.len()).collect();
        assert_eq!(sizes, [3, 3, 2]);
    }
}
