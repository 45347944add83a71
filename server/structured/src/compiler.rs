//! Compiles structured-output specs into engine constraints, off the async runtime and the engine
//! thread, with a time limit, a size limit and a cap on concurrent compilations; compiled grammars
//! are cached by their canonical text, and requests for a grammar already being compiled wait
//! for that compilation rather than start another.
//!
//! A compilation that runs past the limit answers `Timeout` at the limit; the compiling thread
//! itself runs on until llguidance's own work limits (its lexer fuel and grammar size caps) stop
//! it, holding its concurrency permit meanwhile, so runaway grammars cannot pile up threads.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use llguidance::{Matcher, ParserFactory};
use pagoda_engine::TokenConstraint;
use pagoda_text::tokenizer::TextTokenizer;
use tokio::sync::Semaphore;

use crate::cache::GrammarCache;
use crate::error::StructuredError;
use crate::matcher::{without_parser_state, CompiledGrammar, MaskObserver};
use crate::spec::OutputSpec;
use crate::vocabulary::tok_env;

/// The widest Earley row a grammar may reach (see `GrammarCompiler::new`).
const MAX_EARLEY_ITEMS_IN_ROW: usize = 20_000;

/// Limits on compilation.
#[derive(Debug, Clone, PartialEq)]
pub struct CompileLimits {
    /// Longest a compilation may take (waiting for a free compiler included).
    pub timeout: Duration,
    /// Largest grammar text (a schema's JSON, a regex, a grammar) accepted.
    pub max_grammar_bytes: usize,
    /// Compilations that may run at once.
    pub max_concurrent: usize,
    /// Compiled grammars kept.
    pub cache_capacity: usize,
}

impl Default for CompileLimits {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            max_grammar_bytes: 256 * 1024,
            max_concurrent: 2,
            cache_capacity: 256,
        }
    }
}

/// A compiled constraint, and how long compiling took (`None`: it came from the cache).
#[derive(Debug, Clone)]
pub struct Compiled {
    pub constraint: Arc<dyn TokenConstraint>,
    pub compile_time: Option<Duration>,
}

/// Compiles specs for one model's vocabulary.
pub struct GrammarCompiler {
    factory: Arc<ParserFactory>,
    cache: Mutex<GrammarCache>,
    limits: CompileLimits,
    permits: Arc<Semaphore>,
    trie_eos: u32,
    eos_token_ids: Arc<[u32]>,
    on_mask: Option<MaskObserver>,
}

impl std::fmt::Debug for GrammarCompiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrammarCompiler")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl GrammarCompiler {
    /// A compiler for a model whose logits have `vocab_size` entries and whose output ends with
    /// any of `eos_token_ids` (the first is the grammar's end token).
    pub fn new(
        tokenizer: Arc<TextTokenizer>,
        vocab_size: usize,
        eos_token_ids: &[u32],
        limits: CompileLimits,
    ) -> Result<Self, StructuredError> {
        let trie_eos = *eos_token_ids.first().ok_or_else(|| {
            StructuredError::Vocabulary("the model has no EOS token to end a grammar".into())
        })?;
        let env = tok_env(tokenizer, vocab_size, trie_eos)?;
        let mut factory = ParserFactory::new_simple(&env)
            .map_err(|e| StructuredError::Vocabulary(e.to_string()))?;
        factory.quiet();
        // An object of many optional properties makes Earley rows of about 8 items per property
        // (any of the rest may come next): llguidance's default (2,000) fails mid-output near
        // 250 of them. Ten times that serves 2,500; the per-token fuel limits still bound a
        // step's work.
        factory.limits_mut().max_items_in_row = MAX_EARLEY_ITEMS_IN_ROW;
        Ok(Self {
            factory: Arc::new(factory),
            cache: Mutex::new(GrammarCache::new(limits.cache_capacity)),
            permits: Arc::new(Semaphore::new(limits.max_concurrent.max(1))),
            limits,
            trie_eos,
            eos_token_ids: eos_token_ids.into(),
            on_mask: None,
        })
    }

    /// Reports each mask's computation time to `observe` (for every grammar compiled from now).
    pub fn with_mask_observer(mut self, observe: MaskObserver) -> Self {
        self.on_mask = Some(observe);
        self
    }

    pub fn limits(&self) -> &CompileLimits {
        &self.limits
    }

    /// The compiled constraint for `spec`, from the cache or compiled within the limits. Requests
    /// for a grammar being compiled wait for that compilation (within their own time limit).
    pub async fn compile(&self, spec: &OutputSpec) -> Result<Compiled, StructuredError> {
        let key = spec.canonical_text();
        if key.len() > self.limits.max_grammar_bytes {
            return Err(StructuredError::TooLarge {
                num_bytes: key.len(),
                max_bytes: self.limits.max_grammar_bytes,
            });
        }
        let cell = self.lock_cache().cell(&key);
        let was_cached = cell.initialized();
        let started = Instant::now();
        let mut compiled_here = false;
        let flag = &mut compiled_here;
        let init = cell.get_or_try_init(|| async move {
            *flag = true;
            self.compile_uncached(spec).await.map(Arc::new)
        });
        let timeout = StructuredError::Timeout {
            limit: self.limits.timeout,
        };
        let result = match tokio::time::timeout(self.limits.timeout, init).await {
            // A compile that finished past the limit is refused as well: whether the timer or
            // the finished compile is polled first depends on scheduling, not on the grammar.
            // Its grammar stays cached, so the same spec is served from the cache next time.
            Ok(Ok(_)) if !was_cached && started.elapsed() > self.limits.timeout => Err(timeout),
            Ok(result) => result.map(Arc::clone),
            Err(_) => Err(timeout),
        };
        match result {
            Ok(grammar) => Ok(Compiled {
                constraint: grammar,
                compile_time: compiled_here.then(|| started.elapsed()),
            }),
            Err(error) => {
                self.lock_cache().forget_failed(&key, &cell);
                Err(error)
            }
        }
    }

    async fn compile_uncached(
        &self,
        spec: &OutputSpec,
    ) -> Result<CompiledGrammar, StructuredError> {
        let grammar = spec.to_grammar().map_err(StructuredError::Invalid)?;
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|e| StructuredError::Internal(e.to_string()))?;
        let factory = Arc::clone(&self.factory);
        let (sender, receiver) = tokio::sync::oneshot::channel();
        // A thread of its own with a large stack: llguidance recurses over a grammar's rules,
        // and a long rule chain (700 GBNF rules, 4,500 properties) overflowed a 2 MiB blocking
        // thread's stack, which aborts the whole process.
        std::thread::Builder::new()
            .name("pagoda-grammar".into())
            .stack_size(COMPILE_STACK_BYTES)
            .spawn(move || {
                let _permit = permit;
                let _ = sender.send(start_matcher(&factory, grammar));
            })
            .map_err(|e| StructuredError::Internal(e.to_string()))?;
        let matcher = receiver
            .await
            .map_err(|e| StructuredError::Internal(e.to_string()))??;
        Ok(CompiledGrammar::new(
            matcher,
            self.trie_eos,
            Arc::clone(&self.eos_token_ids),
            self.on_mask.clone(),
        ))
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, GrammarCache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Grammars compiled and kept in the cache.
    pub fn num_cached(&self) -> usize {
        self.lock_cache().num_compiled()
    }

    /// Takes every compiler slot until the returned permit drops (tests: a compile that cannot
    /// start must time out, whatever the machine's speed).
    #[cfg(test)]
    pub(crate) fn occupy_every_slot(&self) -> tokio::sync::OwnedSemaphorePermit {
        let num_slots = self.limits.max_concurrent.max(1) as u32;
        Arc::clone(&self.permits)
            .try_acquire_many_owned(num_slots)
            .expect("no compilation is running")
    }
}

/// The stack of a grammar compile's thread (only touched pages are committed).
const COMPILE_STACK_BYTES: usize = 512 << 20;

/// Compiles and computes the first mask (which builds the lexer states the first token needs),
/// so a grammar that cannot even start fails here, not in the engine.
fn start_matcher(
    factory: &ParserFactory,
    grammar: llguidance::api::TopLevelGrammar,
) -> Result<Matcher, StructuredError> {
    let parser = factory
        .create_parser(grammar)
        .map_err(|e| StructuredError::Invalid(e.to_string()))?;
    let mut matcher = Matcher::new(Ok(parser));
    // What a lenient schema's grammar leaves unenforced (keywords llguidance cannot enforce).
    let warnings = matcher.grammar_warnings();
    if !warnings.is_empty() {
        tracing::warn!(
            ?warnings,
            "the structured output grammar ignores what it cannot enforce"
        );
    }
    let first = matcher
        .compute_mask()
        .map_err(|e| StructuredError::Invalid(without_parser_state(&e.to_string())))?;
    if first.num_set() == 0 {
        return Err(StructuredError::Invalid(
            "the grammar allows no output at all".to_string(),
        ));
    }
    Ok(matcher)
}

#[cfg(test)]
#[path = "compiler_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "compiler_schema_tests.rs"]
mod schema_tests;
