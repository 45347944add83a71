//! `LayerAttention`: how one decoder layer attends. Families differ here (Gemma's
//! `query_pre_attn_scalar` and logit softcap, Granite's attention multiplier), and so do the
//! layers of one model (Gemma 2 and 3 alternate sliding-window and global layers), so every
//! `PagedKvCache::attend` call carries the settings of its layer.

use std::sync::Arc;

/// One layer's attention settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerAttention {
    /// Multiplies every score `q · k` (`1 / √head_dim` unless the family says otherwise).
    pub scale: f32,
    /// Each token attends to at most this many most recent positions, itself included.
    pub window: Option<usize>,
    /// Scaled scores pass through `softcap · tanh(score / softcap)` before the softmax.
    pub softcap: Option<f32>,
    /// gpt-oss's attention sinks: one learned logit per query head that joins every softmax's
    /// denominator as a key without a value, so a token may attend to "nothing".
    pub sinks: Option<Arc<[f32]>>,
}

impl LayerAttention {
    /// Causal attention over the whole context with the usual `1 / √head_dim` scale.
    pub fn standard(head_dim: usize) -> Self {
        Self {
            scale: 1.0 / (head_dim as f32).sqrt(),
            window: None,
            softcap: None,
            sinks: None,
        }
    }

    /// The same with a sliding window.
    pub fn with_window(self, window: Option<usize>) -> Self {
        Self { window, ..self }
    }

    /// First position a token at `position` attends to.
    pub fn first_attended(&self, position: usize) -> usize {
        match self.window {
            Some(window) => (position + 1).saturating_sub(window),
            None => 0,
        }
    }

    /// Query head `head`'s sink logit, if the layer has sinks.
    #[inline(always)]
    pub fn sink(&self, head: usize) -> Option<f32> {
        self.sinks.as_ref().and_then(|sinks| sinks.get(head).copied())
    }

    /// `score` after the logit softcap, if any.
    #[inline(always)]
    pub fn capped(&self, score: f32) -> f32 {
        match self.softcap {
            Some(cap) => cap * (score / cap).tanh(),
            None => score,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_start_at_the_window_and_softcaps_bound_scores() {
        let layer = LayerAttention::standard(64).with_window(Some(4));
        assert_eq!(layer.scale, 0.125);
        assert_eq!(layer.first_attended(2), 0);
        assert_eq!(layer.first_attended(10), 7);
        assert_eq!(LayerAttention::standard(64).first_attended(10), 0);
        let capped = LayerAttention {
            softcap: Some(50.0),
            ..layer.clone()
        };
        assert!((capped.capped(1000.0) - 50.0).abs() < 1e-4);
        assert!((capped.capped(1.0) - 50.0 * (0.02f32).tanh()).abs() < 1e-6);
        assert_eq!(layer.capped(1000.0), 1000.0);
    }
}
