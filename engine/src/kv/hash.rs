//! Block hashes for prefix caching: each full block's hash chains its parent's hash, its token
//! ids and the sequence's `CacheScope` (cache salt, LoRA adapter), so equal hashes mean equal
//! prefixes computed by the same weights (up to collisions, which the block pool rules out by
//! also comparing token ids).

use std::hash::{DefaultHasher, Hash, Hasher};

use crate::lora::adapter::LoraId;

/// What besides the tokens decides a block's content: blocks are shared only within one scope.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CacheScope {
    /// The request's cache salt (tenant isolation).
    pub salt: Option<String>,
    /// The LoRA adapter the keys and values were computed with.
    pub lora: Option<LoraId>,
}

/// The hash of a full block and, through the chain, of everything before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockHash(pub u64);

/// How block hashes are computed. Tests inject a weak one to force collisions.
pub type BlockHasher =
    fn(parent: Option<BlockHash>, token_ids: &[u32], scope: &CacheScope) -> BlockHash;

/// The default hasher: SipHash with fixed keys (stable within a process).
pub fn hash_block(
    parent: Option<BlockHash>,
    token_ids: &[u32],
    scope: &CacheScope,
) -> BlockHash {
    let mut hasher = DefaultHasher::new();
    parent.hash(&mut hasher);
    token_ids.hash(&mut hasher);
    scope.hash(&mut hasher);
    BlockHash(hasher.finish())
}

/// Extends `hashes` to cover the first `num_blocks` full blocks of `token_ids`.
pub fn extend_block_hashes(
    hashes: &mut Vec<BlockHash>,
    token_ids: &[u32],
    num_blocks: usize,
    block_size: usize,
    scope: &CacheScope,
    hasher: BlockHasher,
) {
    let num_blocks = num_blocks.min(token_ids.len() / block_size);
    while hashes.len() < num_blocks {
        let index = hashes.len();
        let tokens = &token_ids[index * block_size..(index + 1) * block_size];
        hashes.push(hasher(hashes.last().copied(), tokens, scope));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_depend_on_every_earlier_token_the_salt_and_the_adapter() {
        let none = CacheScope::default();
        let tokens: Vec<u32> = (0..12).collect();
        let mut a = Vec::new();
        extend_block_hashes(&mut a, &tokens, 10, 4, &none, hash_block);
        assert_eq!(a.len(), 3, "only full blocks are hashed");
        let mut changed = tokens.clone();
        changed[0] = 99;
        let mut b = Vec::new();
        extend_block_hashes(&mut b, &changed, 3, 4, &none, hash_block);
        assert!(
            a.iter().zip(&b).all(|(x, y)| x != y),
            "a change in block 0 changes every later hash"
        );
        let scopes = [
            CacheScope {
                salt: Some("tenant-a".into()),
                lora: None,
            },
            CacheScope {
                salt: None,
                lora: Some(LoraId(1)),
            },
            CacheScope {
                salt: None,
                lora: Some(LoraId(2)),
            },
        ];
        let scoped: Vec<Vec<BlockHash>> = scopes
            .iter()
            .map(|scope| {
                let mut hashes = Vec::new();
                extend_block_hashes(&mut hashes, &tokens, 3, 4, scope, hash_block);
                hashes
            })
            .collect();
        for (i, hashes) in scoped.iter().enumerate() {
            assert!(a.iter().zip(hashes).all(|(x, y)| x != y), "scope {i} vs none");
            for other in &scoped[i + 1..] {
                assert!(hashes.iter().zip(other).all(|(x, y)| x != y));
            }
        }
        let mut again = Vec::new();
        extend_block_hashes(&mut again, &tokens, 3, 4, &none, hash_block);
        assert_eq!(a, again);
    }
}
