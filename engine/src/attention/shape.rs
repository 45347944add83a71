//! `AttnShape`: the head geometry of an attention layer, and the KV-cache bytes it implies.

use candle_core::DType;

/// Head geometry of one attention layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnShape {
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
}

impl AttnShape {
    /// Query heads per KV head (grouped-query attention).
    pub fn group_size(&self) -> usize {
        self.num_heads / self.num_kv_heads
    }

    /// Bytes one token's keys and values take across `num_layers` layers of this shape, stored
    /// in `dtype` (the CPU cache holds f32; the CUDA cache the model's compute dtype).
    pub fn kv_bytes_per_token(&self, num_layers: usize, dtype: DType) -> usize {
        2 * num_layers * self.num_kv_heads * self.head_dim * dtype.size_in_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_bytes_per_token_counts_keys_and_values_of_every_layer() {
        let shape = AttnShape {
            num_heads: 8,
            num_kv_heads: 2,
            head_dim: 64,
        };
        assert_eq!(shape.kv_bytes_per_token(3, DType::F32), 2 * 3 * 2 * 64 * 4);
        assert_eq!(shape.kv_bytes_per_token(3, DType::BF16), 2 * 3 * 2 * 64 * 2);
    }
}
