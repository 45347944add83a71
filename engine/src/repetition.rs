//! Repetition detection (vLLM's `repetition_detection`): a request ends early, with finish reason
//! `repetition`, when its output ends with one n-gram repeated back to back — the loop a small or
//! fine-tuned model falls into ("abcabcabc…") would otherwise run to `max_tokens`.

use crate::error::EngineError;

/// The longest pattern a request may look for: each generated token compares at most about
/// `max²/2` tokens on the engine thread (~0.1 ms at this bound, worst case).
pub const MAX_REPETITION_PATTERN_SIZE: usize = 1024;

/// When an output counts as looping: its last `min_count × n` tokens are one n-gram repeated,
/// for some n in `min_pattern_size..=max_pattern_size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepetitionDetection {
    /// The shortest pattern looked for (0 reads as 1).
    pub min_pattern_size: usize,
    /// The longest pattern looked for (0: detection off).
    pub max_pattern_size: usize,
    /// How many back-to-back copies end the output (at least 2 when detection is on).
    pub min_count: usize,
}

impl RepetitionDetection {
    /// vLLM's rules: sizes with `min ≤ max`; with detection on, `min_count ≥ 2`.
    pub fn validate(&self) -> Result<(), EngineError> {
        let invalid = |message: &str| EngineError::InvalidRequest {
            field: "repetition_detection",
            message: message.to_string(),
        };
        if self.min_pattern_size > self.max_pattern_size {
            return Err(invalid(
                "min_pattern_size must not exceed max_pattern_size (both 0: detection off)",
            ));
        }
        if self.max_pattern_size > MAX_REPETITION_PATTERN_SIZE {
            return Err(EngineError::InvalidRequest {
                field: "repetition_detection",
                message: format!(
                    "max_pattern_size must be at most {MAX_REPETITION_PATTERN_SIZE}, got {}",
                    self.max_pattern_size
                ),
            });
        }
        if self.max_pattern_size > 0 && self.min_count < 2 {
            return Err(invalid(
                "min_count must be at least 2 when max_pattern_size is set",
            ));
        }
        Ok(())
    }

    /// Whether `output` ends with a pattern repeated `min_count` times back to back. At most
    /// `max_pattern_size` patterns are compared, each from the end until its first mismatch.
    pub fn detects(&self, output: &[u32]) -> bool {
        if self.max_pattern_size == 0 || self.min_count < 2 {
            return false;
        }
        let shortest = self.min_pattern_size.max(1);
        (shortest..=self.max_pattern_size)
            .take_while(|&size| size.saturating_mul(self.min_count) <= output.len())
            .any(|size| ends_with_repeats(output, size, self.min_count))
    }
}

/// Whether the last `size × count` tokens of `tokens` are one `size`-token pattern, `count` times.
fn ends_with_repeats(tokens: &[u32], size: usize, count: usize) -> bool {
    let tail = &tokens[tokens.len() - size * count..];
    let (pattern, copies) = tail.split_at(size);
    copies.chunks_exact(size).all(|copy| copy == pattern)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detection(
        min_pattern_size: usize,
        max_pattern_size: usize,
        min_count: usize,
    ) -> RepetitionDetection {
        RepetitionDetection {
            min_pattern_size,
            max_pattern_size,
            min_count,
        }
    }

    #[test]
    fn a_pattern_repeated_enough_times_at_the_end_is_found() {
        let three_times = detection(1, 4, 3);
        assert!(three_times.detects(&[9, 1, 2, 3, 1, 2, 3, 1, 2, 3]));
        assert!(three_times.detects(&[5, 5, 5]));
        assert!(!three_times.detects(&[1, 2, 3, 1, 2, 3]), "twice only");
        assert!(
            !three_times.detects(&[1, 2, 3, 1, 2, 3, 1, 2, 3, 4]),
            "not at the end"
        );
        assert!(!three_times.detects(&[1, 2, 1, 2, 1, 3]));
    }

    #[test]
    fn pattern_sizes_outside_the_range_are_not_looked_for() {
        let long_only = detection(2, 3, 2);
        assert!(
            !long_only.detects(&[1, 7, 7, 7]),
            "7 7 7 is a one-token pattern, shorter than 2"
        );
        // ...but 7 7 7 7 is a two-token pattern twice.
        assert!(long_only.detects(&[1, 7, 7, 7, 7]));
        assert!(
            !detection(1, 2, 2).detects(&[1, 2, 3, 1, 2, 3]),
            "a 3-token loop is longer than 2"
        );
        assert!(!detection(0, 0, 0).detects(&[4, 4, 4, 4]), "off");
        assert!(detection(0, 1, 2).detects(&[4, 4]), "min 0 reads as 1");
    }

    #[test]
    fn vllms_rules_are_checked() {
        assert!(detection(0, 0, 0).validate().is_ok());
        assert!(detection(1, 8, 2).validate().is_ok());
        assert!(detection(3, 2, 2).validate().is_err());
        assert!(detection(1, 2, 1).validate().is_err());
        assert!(detection(0, 4, 0).validate().is_err());
        assert!(detection(1, MAX_REPETITION_PATTERN_SIZE, 2)
            .validate()
            .is_ok());
        assert!(detection(1, MAX_REPETITION_PATTERN_SIZE + 1, 2)
            .validate()
            .is_err());
    }
}
