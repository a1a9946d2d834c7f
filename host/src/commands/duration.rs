//! Duration flags with a range: a value outside it is refused when the flags are parsed (exit
//! 2, one line naming the flag and the range), before anything runs. A zero deadline or a
//! poll period of years is a typo, never a setting.

use std::time::Duration;

/// The lowest value a duration flag takes.
#[derive(Debug, Clone, Copy)]
pub enum Min {
    /// Zero is allowed (it turns the behaviour off or makes it immediate).
    Zero,
    /// Greater than zero.
    AboveZero,
}

/// A clap value parser for a duration in humantime syntax (`100ms`, `1m30s`) within `min` and
/// `max` (inclusive).
pub fn within(
    min: Min,
    max: Duration,
) -> impl Fn(&str) -> Result<Duration, String> + Clone + Send + Sync + 'static {
    move |text| {
        let d = humantime::parse_duration(text).map_err(|e| e.to_string())?;
        let max_text = humantime::format_duration(max);
        let in_range = match min {
            Min::Zero => d <= max,
            Min::AboveZero => !d.is_zero() && d <= max,
        };
        if in_range {
            return Ok(d);
        }
        Err(match min {
            Min::Zero => format!("must be at most {max_text}"),
            Min::AboveZero => format!("must be greater than 0 and at most {max_text}"),
        })
    }
}

/// `n` seconds.
pub const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// One hour.
pub const HOUR: Duration = secs(3600);

/// One day.
pub const DAY: Duration = secs(24 * 3600);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_inclusive_above_and_zero_is_allowed_only_when_asked() {
        let deadline = within(Min::AboveZero, secs(60));
        assert_eq!(deadline("60s"), Ok(secs(60)));
        assert_eq!(deadline("1ms"), Ok(Duration::from_millis(1)));
        for bad in ["0s", "0", "61s", "10y"] {
            let err = deadline(bad).unwrap_err();
            assert_eq!(err, "must be greater than 0 and at most 1m", "{bad}");
        }
        assert!(deadline("soon").is_err());
        let batch = within(Min::Zero, HOUR);
        assert_eq!(batch("0s"), Ok(Duration::ZERO));
        assert_eq!(batch("2h").unwrap_err(), "must be at most 1h");
    }
}
