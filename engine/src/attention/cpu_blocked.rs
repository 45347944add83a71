//! The CPU attention kernel's computation of one tile, as blocked matrix products: per KV head,
//! the tile's span of keys and values is widened once into contiguous f32 matrices and the
//! group's queries (GQA: every head sharing the KV head, for every token of the tile) meet them
//! in two matrix products — scores = Q·Kᵀ, outputs = softmax·V — on `gemm`'s register-blocked
//! kernels. Measured faster than one dot product per query and key for prefill and decode alike
//! (docs/PERFORMANCE.md).
//!
//! softmax·V runs over key blocks of `VALUE_KEY_BLOCK` keys at fixed positions (multiples of the
//! block from key 0), each one `gemm` call, accumulated in order: `gemm` sums up to 512 terms in
//! order and splits longer sums where the length says, so a row's output would otherwise depend
//! on its tile's span. With the blocks, a row's output is the same bits in any tile (a prefill
//! chunked anywhere, a decode, a verification step); keys past a row's own are zero weights.

use super::cpu_tile::{CacheView, RowLoader, Scratch, TileView};
use super::softmax::softmax_in_place;
use crate::fast_math::softcap_in_place;
use super::kv_element::KvElement;
use super::shape::AttnShape;

/// Attends one tile of a sequence's query tokens over its span: every head of every token.
/// Scores outside a token's causal (and sliding) window get zero weight. Each row's
/// log-sum-exp is left in `scratch.lse`.
#[inline(always)]
pub(super) fn attend<T: KvElement>(
    view: &TileView<'_>,
    out: &mut [f32],
    cache: &CacheView<'_, T>,
    scratch: &mut Scratch,
    loader: impl RowLoader,
) {
    let AttnShape {
        num_heads,
        num_kv_heads,
        head_dim,
    } = cache.shape;
    let group = cache.shape.group_size();
    let span = view.slots.len();
    let q_row = num_heads * head_dim;
    let num_tokens = view.q.len() / q_row;
    let num_rows = num_tokens * group;
    // A token's heads of one group are contiguous in `q` and in `out`: the group's rows
    // `(token, g)` are copied in and out as runs of `group * head_dim`.
    let group_width = group * head_dim;
    let Scratch {
        scores,
        row,
        keys,
        values,
        queries,
        outputs,
        lse,
    } = scratch;
    lse.resize(num_tokens * num_heads, 0.0);
    keys.resize(span * head_dim, 0.0);
    values.resize(span * head_dim, 0.0);
    queries.resize(num_rows * head_dim, 0.0);
    scores.resize(num_rows * span, 0.0);
    outputs.resize(num_rows * head_dim, 0.0);
    row.resize(head_dim, 0.0);
    let scale = view.layer.scale;
    for kv_head in 0..num_kv_heads {
        let offset = kv_head * head_dim;
        gather(cache.keys, view.slots, offset, cache.shape, keys, row, loader);
        gather(cache.values, view.slots, offset, cache.shape, values, row, loader);
        let group_offset = kv_head * group_width;
        for (i, rows) in queries.chunks_exact_mut(group_width).enumerate() {
            rows.copy_from_slice(&view.q[i * q_row + group_offset..][..group_width]);
        }
        let queries = Matrix::row_major(queries, num_rows, head_dim);
        let keys_t = Matrix::row_major(keys, span, head_dim).transposed();
        product(scores, queries, keys_t, scale);
        let first_head = kv_head * group;
        for (r, token_scores) in scores.chunks_exact_mut(span).enumerate() {
            let (i, g) = (r / group, r % group);
            let head = first_head + g;
            lse[i * num_heads + head] = masked_softmax(view, i, token_scores, view.sink(head));
        }
        weights_times_values(outputs, scores, values, (num_rows, span, head_dim), view.first_key_position);
        for (i, rows) in outputs.chunks_exact(group_width).enumerate() {
            out[i * q_row + group_offset..][..group_width].copy_from_slice(rows);
        }
    }
}

/// Softmax of token `i`'s scores over its causal (and sliding) window, zero weight outside it,
/// with `sink` (a logit without a value) in the denominator when given; returns the
/// denominator's log-sum-exp.
#[inline(always)]
fn masked_softmax(view: &TileView<'_>, i: usize, scores: &mut [f32], sink: Option<f32>) -> f32 {
    let (lo, hi) = view.key_range(i);
    // A partition of a decode token's span may end before the token itself.
    let hi = hi.min(scores.len() - 1);
    scores[..lo].fill(0.0);
    scores[hi + 1..].fill(0.0);
    let window = &mut scores[lo..=hi];
    if let Some(cap) = view.layer.softcap {
        softcap_in_place(window, cap);
    }
    let lse = softmax_in_place(window);
    match sink {
        Some(sink) => {
            let high = lse.max(sink);
            let total = high + ((lse - high).exp() + (sink - high).exp()).ln();
            let keep = (lse - total).exp();
            window.iter_mut().for_each(|w| *w *= keep);
            total
        }
        None => lse,
    }
}

/// Copies the rows of the KV head at `offset` of every slot, widened to f32, into `dst`
/// (`[slots.len(), head_dim]`).
#[inline(always)]
fn gather<T: KvElement>(
    stored: &[T],
    slots: &[usize],
    offset: usize,
    shape: AttnShape,
    dst: &mut [f32],
    scratch_row: &mut [f32],
    loader: impl RowLoader,
) {
    let kv_row = shape.num_kv_heads * shape.head_dim;
    for (&slot, dst_row) in slots.iter().zip(dst.chunks_exact_mut(shape.head_dim)) {
        let src = &stored[slot * kv_row + offset..][..shape.head_dim];
        // Widened straight into place: a copy of 64 floats per row is a library call.
        if T::WIDENS_INTO_SCRATCH {
            loader.load(src, dst_row);
        } else {
            dst_row.copy_from_slice(loader.load(src, scratch_row));
        }
    }
}

/// Keys per block of softmax·V: at most what one `gemm` call sums in order (its shortest split
/// of the inner dimension is 512).
const VALUE_KEY_BLOCK: usize = 512;

/// `outputs = weights · values` (`[num_rows, span]` · `[span, head_dim]`), summed over key blocks
/// that start at multiples of `VALUE_KEY_BLOCK` counted from key 0 (the span's first key is at
/// `first_key_position`), one block after another.
#[inline(always)]
fn weights_times_values(
    outputs: &mut [f32],
    weights: &[f32],
    values: &[f32],
    (num_rows, span, head_dim): (usize, usize, usize),
    first_key_position: usize,
) {
    let mut start = 0;
    while start < span {
        let block_end = (first_key_position + start) / VALUE_KEY_BLOCK * VALUE_KEY_BLOCK + VALUE_KEY_BLOCK;
        let len = (block_end - first_key_position - start).min(span - start);
        let lhs = Matrix::strided(&weights[start..], num_rows, len, span);
        let rhs = Matrix::row_major(&values[start * head_dim..], len, head_dim);
        product_into(outputs, lhs, rhs, start > 0);
        start += len;
    }
}

/// A matrix over a slice: element `(r, c)` at `r * row_stride + c * col_stride`.
#[derive(Debug, Clone, Copy)]
struct Matrix<'a> {
    data: &'a [f32],
    num_rows: usize,
    num_cols: usize,
    row_stride: usize,
    col_stride: usize,
}

impl<'a> Matrix<'a> {
    /// The first `num_rows * num_cols` elements of `data`, row after row.
    fn row_major(data: &'a [f32], num_rows: usize, num_cols: usize) -> Self {
        assert!(num_rows * num_cols <= data.len(), "matrix larger than its data");
        Self {
            data,
            num_rows,
            num_cols,
            row_stride: num_cols,
            col_stride: 1,
        }
    }

    /// `num_rows` rows of `num_cols` elements, rows `row_stride` apart (a block of a wider
    /// row-major matrix).
    fn strided(data: &'a [f32], num_rows: usize, num_cols: usize, row_stride: usize) -> Self {
        assert!(
            num_rows == 0 || num_cols == 0 || (num_rows - 1) * row_stride + num_cols <= data.len(),
            "matrix larger than its data"
        );
        Self {
            data,
            num_rows,
            num_cols,
            row_stride,
            col_stride: 1,
        }
    }

    fn transposed(self) -> Self {
        Self {
            num_rows: self.num_cols,
            num_cols: self.num_rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
            ..self
        }
    }
}

/// `dst = scale * lhs · rhs`, `dst` row-major `[lhs.num_rows, rhs.num_cols]`, on the calling
/// thread (the kernel already runs one tile per thread).
fn product(dst: &mut [f32], lhs: Matrix<'_>, rhs: Matrix<'_>, scale: f32) {
    gemm_call(dst, lhs, rhs, (false, scale));
}

/// `dst = lhs · rhs`, or `dst += lhs · rhs` when `accumulate`.
fn product_into(dst: &mut [f32], lhs: Matrix<'_>, rhs: Matrix<'_>, accumulate: bool) {
    gemm_call(dst, lhs, rhs, (accumulate, 1.0));
}

/// `dst = (read_dst ? dst : 0) + scale * lhs · rhs` on `gemm`.
#[allow(unsafe_code)]
fn gemm_call(dst: &mut [f32], lhs: Matrix<'_>, rhs: Matrix<'_>, (read_dst, scale): (bool, f32)) {
    let (m, k, n) = (lhs.num_rows, lhs.num_cols, rhs.num_cols);
    assert_eq!(k, rhs.num_rows, "inner dimensions differ");
    assert!(m * n <= dst.len(), "destination smaller than the product");
    if m == 0 || n == 0 {
        return;
    }
    // SAFETY: `Matrix::row_major` and `Matrix::strided` checked that each operand's elements,
    // addressed by its strides over its rows and columns (a transpose swaps both), lie within
    // its slice, and `dst` holds the `m * n` row-major outputs; `dst` is an exclusive borrow, so
    // it overlaps neither operand. With `read_dst` false gemm only writes `dst`.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            read_dst,
            lhs.data.as_ptr(),
            lhs.col_stride as isize,
            lhs.row_stride as isize,
            rhs.data.as_ptr(),
            rhs.col_stride as isize,
            rhs.row_stride as isize,
            if read_dst { 1.0 } else { 0.0 },
            scale,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}
