//! `ItlTarget`: how long an engine step may take while streams are decoding
//! (`--itl-target-ms`). A step that carries a prefill chunk makes every decoding stream wait for
//! it; the target bounds that wait by bounding the chunk.

use std::fmt;
use std::time::Duration;

/// The longest fixed target accepted: an hour (a delay, not a timeout).
pub const MAX_ITL_TARGET: Duration = Duration::from_secs(3600);

/// The step-time target while some sequence decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ItlTarget {
    /// Derived from the learned cost of a decode-only step at the current batch size (see
    /// `scheduler::itl_budget`).
    #[default]
    Auto,
    /// This step time.
    Fixed(Duration),
    /// No time target: `max_num_batched_tokens` alone sizes prefill chunks.
    Off,
}

impl ItlTarget {
    /// `auto`, `off` or `0` (no target), or a number of milliseconds (fractions allowed).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        match text.to_ascii_lowercase().as_str() {
            "auto" => return Ok(Self::Auto),
            "off" => return Ok(Self::Off),
            _ => {}
        }
        let ms: f64 = text
            .parse()
            .map_err(|_| format!("expected auto, off or a number of milliseconds, got {text:?}"))?;
        if ms == 0.0 {
            return Ok(Self::Off);
        }
        let max_ms = MAX_ITL_TARGET.as_secs_f64() * 1e3;
        if !(ms > 0.0 && ms <= max_ms) {
            return Err(format!(
                "an ITL target must be in (0, {max_ms}] milliseconds (0 or off: none), got {text:?}"
            ));
        }
        Ok(Self::Fixed(Duration::from_secs_f64(ms / 1e3)))
    }
}

impl fmt::Display for ItlTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Off => f.write_str("off"),
            Self::Fixed(target) => write!(f, "{}", target.as_secs_f64() * 1e3),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print_back() {
        assert_eq!(ItlTarget::parse("auto"), Ok(ItlTarget::Auto));
        assert_eq!(ItlTarget::parse(" AUTO "), Ok(ItlTarget::Auto));
        assert_eq!(ItlTarget::parse("off"), Ok(ItlTarget::Off));
        assert_eq!(ItlTarget::parse("0"), Ok(ItlTarget::Off));
        assert_eq!(
            ItlTarget::parse("50"),
            Ok(ItlTarget::Fixed(Duration::from_millis(50)))
        );
        assert_eq!(
            ItlTarget::parse("2.5"),
            Ok(ItlTarget::Fixed(Duration::from_micros(2500)))
        );
        for target in [
            ItlTarget::Auto,
            ItlTarget::Off,
            ItlTarget::parse("62.5").unwrap_or_default(),
        ] {
            assert_eq!(ItlTarget::parse(&target.to_string()), Ok(target));
        }
        assert_eq!(ItlTarget::default(), ItlTarget::Auto);
    }

    #[test]
    fn bad_targets_are_refused() {
        for bad in ["-5", "soon", "", "NaN", "inf", "3600001"] {
            assert!(ItlTarget::parse(bad).is_err(), "{bad}");
        }
        assert!(ItlTarget::parse("3600000").is_ok());
    }
}
