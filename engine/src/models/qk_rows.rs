//! The row order of q and k projections. llama.cpp's converter reorders the rows of `q_proj` and
//! `k_proj`, head by head, so that its RoPE, which rotates adjacent pairs of dimensions
//! `(2i, 2i+1)`, computes what Hugging Face's RoPE computes by rotating dimension `i` against
//! `i + head_dim/2`: within a head, Hugging Face row `s * head_dim/2 + i` is llama.cpp row
//! `2i + s`. LoRA adapters (trained on Hugging Face weights) need the same reordering on GGUF
//! Llama bases; the test fixtures convert GGUF weights back.

use candle_core::Tensor;

use crate::error::{EngineError, Result};

/// Rows of a q or k projection (or bias) in llama.cpp's order → Hugging Face's order.
#[cfg(any(test, feature = "testing"))]
pub fn unpermute_qk_rows(tensor: &Tensor, num_heads: usize) -> Result<Tensor> {
    reorder_head_rows(tensor, num_heads, false)
}

/// Rows in Hugging Face's order → llama.cpp's order (what its converter does).
pub fn permute_qk_rows(tensor: &Tensor, num_heads: usize) -> Result<Tensor> {
    reorder_head_rows(tensor, num_heads, true)
}

/// Within each head, Hugging Face's row `(s, i)` (half `s`, pair `i`) is llama.cpp's `(i, s)`:
/// viewing the rows as `[heads, a, b]` and swapping the last two axes converts either way.
fn reorder_head_rows(tensor: &Tensor, num_heads: usize, to_llama_cpp: bool) -> Result<Tensor> {
    let dims = tensor.dims().to_vec();
    let rows = dims.first().copied().unwrap_or(0);
    if num_heads == 0 || rows == 0 || !rows.is_multiple_of(2 * num_heads) {
        return Err(EngineError::model_load(format!(
            "cannot split {rows} rows into {num_heads} heads of pairs"
        )));
    }
    let cols = tensor.elem_count() / rows;
    let half = rows / num_heads / 2;
    let (a, b) = if to_llama_cpp { (2, half) } else { (half, 2) };
    Ok(tensor
        .reshape((num_heads, a, b, cols))?
        .transpose(1, 2)?
        .contiguous()?
        .reshape(dims)?)
}
