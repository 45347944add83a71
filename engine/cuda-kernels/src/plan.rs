//! How one step's attention is split into thread blocks: work items (a tile of one sequence's
//! query tokens × a chunk of the query heads sharing a KV head) and partitions of the key range.
//! Pure host code, tested without a GPU; `kernels/paged_attention.cu` reads the same layout.

/// Rows (query token × head pairs) one thread block holds: `kMaxRows` in the kernel.
pub const MAX_ROWS_PER_ITEM: usize = 16;
/// Keys staged in shared memory at a time: `kKeyTile` in the kernel.
pub const KEY_TILE: usize = 32;
/// Ints per work item: `kWorkFields` in the kernel.
pub const WORK_FIELDS: usize = 6;
/// Head sizes the attention kernel is instantiated for.
pub const SUPPORTED_HEAD_DIMS: &[usize] = &[16, 32, 64, 80, 96, 128];
/// KV block sizes the attention kernel is compiled for (its block-table lookups then divide by
/// a constant); any other size runs the instantiation that reads it at run time (`_bs0`).
pub const COMPILED_BLOCK_SIZES: &[usize] = &[16, 32];

/// The name of the attention kernel for one head size and KV block size, without its dtype
/// prefix: `d{head_dim}_bs{block_size}`, or `_bs0` for a block size not compiled in.
pub fn attention_kernel_suffix(head_dim: usize, block_size: usize) -> String {
    let compiled = if COMPILED_BLOCK_SIZES.contains(&block_size) {
        block_size
    } else {
        0
    };
    format!("d{head_dim}_bs{compiled}")
}
/// Smallest key range worth a thread block of its own when a context is split (two key tiles).
/// The first GPU profile (H200, batch 1, 512 keys) had 16 blocks walking 256 keys each: 61 µs per
/// layer, 40% of the decode step, on 16 of 132 SMs.
pub const MIN_PARTITION_SIZE: usize = 64;
/// Thread blocks per SM to aim for before the key range is split (4 warps each).
const TARGET_BLOCKS_PER_SM: usize = 4;

/// One sequence's query tokens in a step (rows of `q` are the step's tokens, sequences
/// concatenated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqQuery {
    /// Row of the sequence's first query token in `q`.
    pub first_token: usize,
    pub num_tokens: usize,
    /// Position of the first query token in its sequence (> 0 after a prefix-cache hit or in a
    /// chunked-prefill continuation or a decode).
    pub first_position: usize,
}

/// Head counts of one attention layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadCounts {
    pub num_heads: usize,
    pub num_kv_heads: usize,
}

/// The launch layout of one step: the same for every layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkPlan {
    /// `WORK_FIELDS` ints per item: seq, first_token, num_tokens, first_position, head_start,
    /// num_heads.
    pub work: Vec<i32>,
    pub num_items: usize,
    /// Keys per partition (a multiple of `KEY_TILE`).
    pub partition_size: usize,
    /// Most partitions of any item (grid z); 1 = no split, the kernel writes the output itself.
    pub max_partitions: usize,
}

/// First key a query at `position` attends to.
pub fn first_key(position: usize, window: Option<usize>) -> usize {
    window.map_or(0, |w| (position + 1).saturating_sub(w))
}

impl WorkPlan {
    /// Tiles every sequence's queries so that each item has at most `MAX_ROWS_PER_ITEM` rows,
    /// then splits key ranges when the items alone would leave the GPU's `num_sms` SMs idle.
    pub fn build(
        seqs: &[SeqQuery],
        heads: HeadCounts,
        window: Option<usize>,
        num_sms: usize,
    ) -> Self {
        let group = heads.num_heads / heads.num_kv_heads;
        let heads_per_item = group.min(MAX_ROWS_PER_ITEM);
        let tokens_per_item = (MAX_ROWS_PER_ITEM / heads_per_item).max(1);
        let mut work = Vec::new();
        let mut max_span = 0;
        for (seq, query) in seqs.iter().enumerate() {
            let mut start = 0;
            while start < query.num_tokens {
                let num_tokens = (query.num_tokens - start).min(tokens_per_item);
                let first_position = query.first_position + start;
                let span = first_position + num_tokens - first_key(first_position, window);
                max_span = max_span.max(span);
                let mut head_start = 0;
                while head_start < group {
                    let num_heads = (group - head_start).min(heads_per_item);
                    work.extend(
                        [
                            seq,
                            query.first_token + start,
                            num_tokens,
                            first_position,
                            head_start,
                            num_heads,
                        ]
                        .map(|v| v as i32),
                    );
                    head_start += num_heads;
                }
                start += num_tokens;
            }
        }
        let num_items = work.len() / WORK_FIELDS;
        let partition_size = partition_size(num_items * heads.num_kv_heads, max_span, num_sms);
        Self {
            work,
            num_items,
            partition_size,
            max_partitions: max_span.div_ceil(partition_size).max(1),
        }
    }

    /// Floats of the partial outputs buffer (0 without a split).
    pub fn partial_acc_len(&self, num_kv_heads: usize, head_dim: usize) -> usize {
        self.num_partial_rows(num_kv_heads) * head_dim
    }

    /// Floats of the partial (max, sum) buffer (0 without a split).
    pub fn partial_ml_len(&self, num_kv_heads: usize) -> usize {
        self.num_partial_rows(num_kv_heads) * 2
    }

    fn num_partial_rows(&self, num_kv_heads: usize) -> usize {
        if self.max_partitions == 1 {
            return 0;
        }
        self.num_items * num_kv_heads * self.max_partitions * MAX_ROWS_PER_ITEM
    }
}

/// Keys per partition: the whole range when the items fill the GPU, else a split into enough
/// partitions of at least `MIN_PARTITION_SIZE` keys.
fn partition_size(num_blocks: usize, max_span: usize, num_sms: usize) -> usize {
    let whole = max_span.max(1).next_multiple_of(KEY_TILE);
    let target_blocks = TARGET_BLOCKS_PER_SM * num_sms.max(1);
    if num_blocks == 0 || num_blocks >= target_blocks {
        return whole;
    }
    let wanted_partitions = target_blocks.div_ceil(num_blocks);
    max_span
        .div_ceil(wanted_partitions)
        .max(MIN_PARTITION_SIZE)
        .next_multiple_of(KEY_TILE)
        .min(whole)
}

/// Block tables as one row-major `[num_seqs, max_blocks]` matrix (rows padded with 0) and its
/// width.
pub fn block_table_matrix(tables: &[Vec<u32>]) -> (Vec<i32>, usize) {
    let width = tables.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let mut matrix = vec![0i32; tables.len() * width];
    for (row, table) in tables.iter().enumerate() {
        for (column, &block) in table.iter().enumerate() {
            matrix[row * width + column] = block as i32;
        }
    }
    (matrix, width)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(plan: &WorkPlan) -> Vec<[usize; WORK_FIELDS]> {
        plan.work
            .chunks_exact(WORK_FIELDS)
            .map(|c| std::array::from_fn(|i| c[i] as usize))
            .collect()
    }

    /// Every (token, head) pair of every sequence is in exactly one item, items respect the row
    /// limit, and positions follow the tokens.
    fn assert_covers(seqs: &[SeqQuery], heads: HeadCounts, plan: &WorkPlan) {
        let group = heads.num_heads / heads.num_kv_heads;
        let num_tokens: usize = seqs.iter().map(|s| s.num_tokens).sum();
        let mut seen = vec![0u32; num_tokens * group];
        for [seq, first_token, n, first_position, head_start, num_heads] in items(plan) {
            assert!(n * num_heads <= MAX_ROWS_PER_ITEM && n > 0 && num_heads > 0);
            let query = seqs[seq];
            assert_eq!(
                first_position - query.first_position,
                first_token - query.first_token
            );
            for token in first_token..first_token + n {
                for head in head_start..head_start + num_heads {
                    seen[token * group + head] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{seen:?}");
    }

    #[test]
    fn tiles_cover_every_token_and_head_once_for_any_group_size() {
        let seqs = [
            SeqQuery {
                first_token: 0,
                num_tokens: 37,
                first_position: 0,
            },
            SeqQuery {
                first_token: 37,
                num_tokens: 1,
                first_position: 900,
            },
            SeqQuery {
                first_token: 38,
                num_tokens: 20,
                first_position: 48,
            },
        ];
        for (num_heads, num_kv_heads) in [(4, 4), (9, 3), (32, 8), (16, 1), (40, 2), (64, 2)] {
            let heads = HeadCounts {
                num_heads,
                num_kv_heads,
            };
            let plan = WorkPlan::build(&seqs, heads, None, 132);
            assert_covers(&seqs, heads, &plan);
        }
    }

    #[test]
    fn splits_long_decodes_only_when_blocks_are_few() {
        let heads = HeadCounts {
            num_heads: 32,
            num_kv_heads: 8,
        };
        let one_long = [SeqQuery {
            first_token: 0,
            num_tokens: 1,
            first_position: 32_767,
        }];
        let plan = WorkPlan::build(&one_long, heads, None, 132);
        assert!(plan.max_partitions > 8, "{plan:?}");
        assert!(plan.max_partitions * plan.partition_size >= 32_768);
        assert_eq!(plan.partition_size % KEY_TILE, 0);
        assert_eq!(
            plan.partial_ml_len(8),
            8 * plan.max_partitions * MAX_ROWS_PER_ITEM * 2
        );

        let many: Vec<SeqQuery> = (0..256)
            .map(|i| SeqQuery {
                first_token: i,
                num_tokens: 1,
                first_position: 4000,
            })
            .collect();
        let plan = WorkPlan::build(&many, heads, None, 132);
        assert_eq!(plan.max_partitions, 1, "256 × 8 blocks fill 132 SMs");
        assert_eq!(plan.partial_acc_len(8, 64), 0);

        let short = [SeqQuery {
            first_token: 0,
            num_tokens: 1,
            first_position: 40,
        }];
        let plan = WorkPlan::build(&short, heads, None, 132);
        assert_eq!(
            plan.max_partitions, 1,
            "no partition under MIN_PARTITION_SIZE"
        );

        // One short decode (512 keys): spread over the SMs in partitions of two key tiles.
        let one_decode = [SeqQuery {
            first_token: 0,
            num_tokens: 1,
            first_position: 511,
        }];
        let plan = WorkPlan::build(&one_decode, heads, None, 132);
        assert_eq!(plan.partition_size, MIN_PARTITION_SIZE, "{plan:?}");
        assert_eq!(plan.max_partitions, 512 / MIN_PARTITION_SIZE);
    }

    #[test]
    fn sliding_window_bounds_the_span() {
        let heads = HeadCounts {
            num_heads: 8,
            num_kv_heads: 8,
        };
        let seqs = [SeqQuery {
            first_token: 0,
            num_tokens: 1,
            first_position: 100_000,
        }];
        let plan = WorkPlan::build(&seqs, heads, Some(4096), 132);
        assert!(plan.max_partitions * plan.partition_size >= 4096);
        assert!(plan.max_partitions * plan.partition_size < 4096 + plan.partition_size);
    }

    #[test]
    fn common_block_sizes_have_their_own_kernels() {
        assert_eq!(attention_kernel_suffix(128, 16), "d128_bs16");
        assert_eq!(attention_kernel_suffix(64, 32), "d64_bs32");
        assert_eq!(attention_kernel_suffix(80, 8), "d80_bs0");
        assert_eq!(attention_kernel_suffix(96, 48), "d96_bs0");
    }

    #[test]
    fn the_kernel_source_instantiates_every_name() {
        let source = include_str!("../kernels/paged_attention.cu");
        for &block_size in COMPILED_BLOCK_SIZES.iter().chain(&[0]) {
            let line = format!("PAGODA_ATTENTION_BS(TYPE, NAME, D, {block_size})");
            assert!(source.contains(&line), "no {line}");
        }
        for &head_dim in SUPPORTED_HEAD_DIMS {
            let line = format!("PAGODA_ATTENTION(TYPE, NAME, {head_dim})");
            assert!(source.contains(&line), "no {line}");
        }
    }

    #[test]
    fn block_tables_pad_to_the_longest() {
        let (matrix, width) = block_table_matrix(&[vec![3, 4, 5], vec![9]]);
        assert_eq!(width, 3);
        assert_eq!(matrix, vec![3, 4, 5, 9, 0, 0]);
        assert_eq!(block_table_matrix(&[]).1, 1);
    }
}
