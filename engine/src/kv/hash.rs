//! Block hashes for prefix caching: each full block's hash chains its parent's hash, its token
//! ids and the request's cache salt, so equal hashes mean equal prefixes (up to collisions, which
//! the block pool rules out by also comparing token ids).

use std::hash::{DefaultHasher, Hash, Hasher};

/// The hash of a full block and, through the chain, of everything before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockHash(pub u64);

/// How block hashes are computed. Tests inject a weak one to force collisions.
pub type BlockHasher =
    fn(parent: Option<BlockHash>, token_ids: &[u32], cache_salt: Option<&str>) -> BlockHash;

/// The default hasher: SipHash with fixed keys (stable within a process).
pub fn hash_block(
    parent: Option<BlockHash>,
    token_ids: &[u32],
    cache_salt: Option<&str>,
) -> BlockHash {
    let mut hasher = DefaultHasher::new();
    parent.hash(&mut hasher);
    token_ids.hash(&mut hasher);
    cache_salt.hash(&mut hasher);
    BlockHash(hasher.finish())
}

/// Extends `hashes` to cover the first `num_blocks` full blocks of `token_ids`.
pub fn extend_block_hashes(
    hashes: &mut Vec<BlockHash>,
    token_ids: &[u32],
    num_blocks: usize,
    block_size: usize,
    cache_salt: Option<&str>,
    hasher: BlockHasher,
) {
    let num_blocks = num_blocks.min(token_ids.len() / block_size);
    while hashes.len() < num_blocks {
        let index = hashes.len();
        let tokens = &token_ids[index * block_size..(index + 1) * block_size];
        hashes.push(hasher(hashes.last().copied(), tokens, cache_salt));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_depend_on_every_earlier_token_and_the_salt() {
        let tokens: Vec<u32> = (0..12).collect();
        let mut a = Vec::new();
        extend_block_hashes(&mut a, &tokens, 10, 4, None, hash_block);
        assert_eq!(a.len(), 3, "only full blocks are hashed");
        let mut changed = tokens.clone();
        changed[0] = 99;
        let mut b = Vec::new();
        extend_block_hashes(&mut b, &changed, 3, 4, None, hash_block);
        assert!(
            a.iter().zip(&b).all(|(x, y)| x != y),
            "a change in block 0 changes every later hash"
        );
        let mut salted = Vec::new();
        extend_block_hashes(&mut salted, &tokens, 3, 4, Some("tenant-a"), hash_block);
        assert!(a.iter().zip(&salted).all(|(x, y)| x != y));
        let mut again = Vec::new();
        extend_block_hashes(&mut again, &tokens, 3, 4, None, hash_block);
        assert_eq!(a, again);
    }
}
