//! The compiler on the default model's real vocabulary: random walks through each kind of grammar
//! (any allowed token, seeded) always produce text of the grammar; bad input is refused with the
//! reason; limits and the cache hold.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use pagoda_engine::TokenMask;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::*;
use crate::tool_schema::{required_calls_schema, ToolFunction};

fn tokenizer() -> Arc<TextTokenizer> {
    static TOKENIZER: OnceLock<Arc<TextTokenizer>> = OnceLock::new();
    let tokenizer = TOKENIZER.get_or_init(|| {
        let model = pagoda_e2e::tools::default_model();
        Arc::new(TextTokenizer::from_gguf(model).unwrap())
    });
    Arc::clone(tokenizer)
}

pub(super) fn compiler(limits: CompileLimits) -> GrammarCompiler {
    let tokenizer = tokenizer();
    let eos = tokenizer.eos_token_ids();
    GrammarCompiler::new(tokenizer, 49_152, &eos, limits).unwrap()
}

pub(super) fn compile(
    compiler: &GrammarCompiler,
    spec: &OutputSpec,
) -> Result<Compiled, StructuredError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(compiler.compile(spec))
}

/// Draws allowed tokens until the grammar ends (an EOS drawn, or the matcher finished); prefers
/// EOS whenever it is allowed so walks end. Returns the text.
pub(super) fn random_walk(constraint: &dyn TokenConstraint, seed: u64) -> String {
    let tokenizer = tokenizer();
    let eos = tokenizer.eos_token_ids();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut matcher = constraint.start();
    let mut mask = TokenMask::new(49_152);
    let mut tokens = Vec::new();
    for _ in 0..400 {
        mask.clear();
        matcher.fill_next_mask(&mut mask).unwrap();
        let allowed: Vec<u32> = (0..49_152u32).filter(|&id| mask.allows(id)).collect();
        assert!(!allowed.is_empty(), "the grammar always allows something");
        if let Some(&end) = eos.iter().find(|&&id| mask.allows(id)) {
            matcher.accept(end).unwrap();
            break;
        }
        let token = allowed[rng.random_range(0..allowed.len())];
        matcher.accept(token).unwrap();
        tokens.push(token);
        if matcher.is_finished() {
            break;
        }
    }
    assert!(matcher.is_finished(), "the walk ended the grammar");
    tokenizer.decode(&tokens, false).unwrap()
}

fn person_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "role": {"enum": ["admin", "user"]},
            "active": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 2},
        },
        "required": ["name", "age", "role", "active", "tags"],
        "additionalProperties": false,
    })
}

#[test]
fn json_schema_walks_always_validate() {
    let compiler = compiler(CompileLimits::default());
    let compiled = compile(&compiler, &OutputSpec::JsonSchema(person_schema())).unwrap();
    assert!(compiled.compile_time.is_some());
    for seed in 0..8 {
        let text = random_walk(compiled.constraint.as_ref(), seed);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| {
            panic!("walk {seed} produced invalid JSON ({e}): {text:?}");
        });
        let object = value.as_object().unwrap();
        let keys: Vec<&str> = object.keys().map(String::as_str).collect();
        assert_eq!(keys, ["name", "age", "role", "active", "tags"], "{text}");
        assert!(object["name"].as_str().unwrap().chars().count() <= 12);
        assert!((0..=150).contains(&object["age"].as_i64().unwrap()));
        assert!(["admin", "user"].contains(&object["role"].as_str().unwrap()));
        assert!(object["active"].is_boolean());
        assert!(object["tags"].as_array().unwrap().len() <= 2);
    }
}

#[test]
fn json_object_regex_choice_and_grammar_walks_stay_in_their_language() {
    let compiler = compiler(CompileLimits::default());
    let object = compile(&compiler, &OutputSpec::JsonObject).unwrap();
    let regex = compile(&compiler, &OutputSpec::Regex("[0-9]{3}-[a-z]{2}".into())).unwrap();
    let choices = vec![
        "red".to_string(),
        "green".to_string(),
        "blue sky".to_string(),
    ];
    let choice = compile(&compiler, &OutputSpec::Choice(choices.clone())).unwrap();
    let lark = "start: answer \" \" NUMBER\nanswer: \"yes\" | \"no\"\nNUMBER: /[1-9][0-9]?/\n";
    let grammar = compile(&compiler, &OutputSpec::Grammar(lark.into())).unwrap();
    for seed in 0..6 {
        let text = random_walk(regex.constraint.as_ref(), seed);
        let bytes = text.as_bytes();
        assert_eq!(bytes.len(), 6, "{text:?}");
        assert!(
            bytes[..3].iter().all(u8::is_ascii_digit) && bytes[3] == b'-',
            "{text:?}"
        );
        assert!(bytes[4..].iter().all(u8::is_ascii_lowercase), "{text:?}");
        assert!(choices.contains(&random_walk(choice.constraint.as_ref(), seed)));
        let answer = random_walk(grammar.constraint.as_ref(), seed);
        let (word, number) = answer.split_once(' ').unwrap();
        assert!(["yes", "no"].contains(&word), "{answer:?}");
        assert!(
            (1..100).contains(&number.parse::<u32>().unwrap()),
            "{answer:?}"
        );
        // Free-form objects may not end by themselves: check the prefix is an object.
        let mut matcher = object.constraint.start();
        let mut mask = TokenMask::new(49_152);
        matcher.fill_next_mask(&mut mask).unwrap();
        let opening = tokenizer().token_to_id("{").unwrap();
        let letter = tokenizer().token_to_id("a").unwrap();
        assert!(mask.allows(opening) && !mask.allows(letter));
    }
}

#[test]
fn gbnf_grammars_walk_in_their_language() {
    let compiler = compiler(CompileLimits::default());
    // vLLM's own example (its docs' SQL grammar), and classes with repetitions.
    let sql = r#"
root ::= select_statement
select_statement ::= "SELECT " column " from " table " where " condition
column ::= "col_1 " | "col_2 "
table ::= "table_1 " | "table_2 "
condition ::= column "= " number
number ::= "1 " | "2 "
"#;
    let ids = "root ::= \"id-\" [0-9]{3} (\"-\" hex)?\nhex ::= [a-f]{1,4}\n";
    let sql = compile(&compiler, &OutputSpec::Grammar(sql.into())).unwrap();
    let ids = compile(&compiler, &OutputSpec::Grammar(ids.into())).unwrap();
    for seed in 0..6 {
        let text = random_walk(sql.constraint.as_ref(), seed);
        let words: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(
            (words[0], words[2], words[4], words[6]),
            ("SELECT", "from", "where", "="),
            "{text:?}"
        );
        let text = random_walk(ids.constraint.as_ref(), seed);
        let (digits, rest) = text["id-".len()..].split_at(3);
        assert!(
            text.starts_with("id-") && digits.chars().all(|c| c.is_ascii_digit()),
            "{text}"
        );
        let hex = rest.strip_prefix('-').unwrap_or(rest);
        assert!(
            hex.len() <= 4 && hex.chars().all(|c| ('a'..='f').contains(&c)),
            "{text}"
        );
    }
}

#[test]
fn walks_through_multi_byte_characters_stay_in_their_language() {
    // Choices that share the first 3 bytes of 4: the grammar forces an incomplete character.
    let compiler = compiler(CompileLimits::default());
    let thumbs = vec!["👍".to_string(), "👎".to_string()];
    let choice = compile(&compiler, &OutputSpec::Choice(thumbs.clone())).unwrap();
    let schema = json!({
        "type": "object",
        "properties": {"emoji_😀": {"enum": ["🌟", "🌙"]}, "r": {"type": "string", "maxLength": 3}},
        "required": ["emoji_😀", "r"],
        "additionalProperties": false,
    });
    let object = compile(&compiler, &OutputSpec::JsonSchema(schema)).unwrap();
    for seed in 0..6 {
        let text = random_walk(choice.constraint.as_ref(), seed);
        assert!(thumbs.contains(&text), "{text:?}");
        let text = random_walk(object.constraint.as_ref(), seed);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            ["🌟", "🌙"].contains(&value["emoji_😀"].as_str().unwrap()),
            "{text}"
        );
    }
}

#[test]
fn objects_of_many_optional_properties_take_any_of_them() {
    let compiler = compiler(CompileLimits::default());
    let tokenizer = tokenizer();
    let eos = tokenizer.eos_token_ids();
    for num_properties in [500, 1_500] {
        let properties: serde_json::Map<String, serde_json::Value> = (0..num_properties)
            .map(|i| (format!("field_{i}"), json!({"type": "integer"})))
            .collect();
        let schema = json!({"type": "object", "properties": properties});
        let compiled = compile(&compiler, &OutputSpec::JsonSchema(schema)).unwrap();
        // `{` then `"` alone (every property may come next), then the last property.
        let last = format!("field_{}\": 7}}", num_properties - 1);
        let tokens: Vec<u32> = ["{", "\"", last.as_str()]
            .iter()
            .flat_map(|piece| tokenizer.encode_as_text(piece, false).unwrap())
            .collect();
        let mask = mask_after(compiled.constraint.as_ref(), &tokens);
        assert!(mask.allows(eos[0]), "{num_properties}: the object may end");
    }
}

#[test]
fn required_tool_calls_walks_are_calls_to_known_functions() {
    let functions = vec![
        ToolFunction {
            name: "get_weather".into(),
            parameters: json!({"type": "object", "properties": {"city": {"enum": ["Paris", "Oslo"]}},
                "required": ["city"], "additionalProperties": false}),
        },
        ToolFunction {
            name: "add".into(),
            parameters: json!({"type": "object", "properties": {"a": {"type": "integer", "maximum": 9, "minimum": 0}},
                "required": ["a"], "additionalProperties": false}),
        },
    ];
    let compiler = compiler(CompileLimits::default());
    let schema = required_calls_schema(&functions, false);
    let compiled = compile(&compiler, &OutputSpec::JsonSchema(schema)).unwrap();
    for seed in 0..6 {
        let text = random_walk(compiled.constraint.as_ref(), seed);
        let calls: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(calls.len(), 1, "{text}");
        let name = calls[0]["name"].as_str().unwrap();
        assert!(["get_weather", "add"].contains(&name), "{text}");
        assert!(calls[0]["arguments"].is_object(), "{text}");
    }
}

#[test]
fn bad_specs_are_refused_with_the_reason() {
    let compiler = compiler(CompileLimits::default());
    let cases = [
        OutputSpec::JsonSchema(json!({"type": "nonsense"})),
        OutputSpec::JsonSchema(json!({"type": "string", "minLength": 5, "maxLength": 2})),
        OutputSpec::JsonSchema(json!([1, 2])),
        OutputSpec::Regex("(unclosed".into()),
        OutputSpec::Grammar("start: undefined_rule\n".into()),
        OutputSpec::Grammar("   ".into()),
        OutputSpec::Choice(Vec::new()),
        // A schema that is only itself: its first mask fails, with llguidance's parser state.
        OutputSpec::JsonSchema(json!({"$ref": "#"})),
    ];
    for spec in cases {
        match compile(&compiler, &spec) {
            Err(StructuredError::Invalid(message)) => {
                assert!(
                    !message.is_empty() && !message.contains("<state>"),
                    "{message}"
                )
            }
            other => panic!("{spec:?} should be invalid, got {other:?}"),
        }
    }
    assert_eq!(compiler.num_cached(), 0, "failures are not cached");
}

#[test]
fn limits_cache_and_mask_observer() {
    let tiny = compiler(CompileLimits {
        max_grammar_bytes: 30,
        ..CompileLimits::default()
    });
    let schema = OutputSpec::JsonSchema(person_schema());
    assert!(matches!(
        compile(&tiny, &schema),
        Err(StructuredError::TooLarge { max_bytes: 30, .. })
    ));
    let busy = compiler(CompileLimits {
        timeout: Duration::from_millis(50),
        ..CompileLimits::default()
    });
    let every_slot = busy.occupy_every_slot();
    assert!(matches!(
        compile(&busy, &OutputSpec::Regex("a+".into())),
        Err(StructuredError::Timeout { .. })
    ));
    assert_eq!(busy.num_cached(), 0, "a timed-out compile is not cached");
    drop(every_slot);
    assert!(
        compile(&busy, &OutputSpec::Regex("a+".into())).is_ok(),
        "the same grammar compiles once a slot is free"
    );
    // A limit no compile meets is a refusal every time, also when the compile finishes before
    // the timer's first tick (a fast regex usually does: the race that made this flaky).
    let instant = compiler(CompileLimits {
        timeout: Duration::from_nanos(1),
        ..CompileLimits::default()
    });
    for pattern in ["a+", "b+", "[0-9]{3}", "x|y", "(ab)*c"] {
        let spec = OutputSpec::Regex(pattern.into());
        assert!(
            matches!(
                compile(&instant, &spec),
                Err(StructuredError::Timeout { .. })
            ),
            "{pattern} compiled past a 1 ns limit"
        );
    }
    let masks = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&masks);
    let cached = compiler(CompileLimits {
        cache_capacity: 1,
        ..CompileLimits::default()
    })
    .with_mask_observer(Arc::new(move |_| {
        counted.fetch_add(1, Ordering::Relaxed);
    }));
    let regex = OutputSpec::Regex("a+".into());
    assert!(compile(&cached, &regex).unwrap().compile_time.is_some());
    let again = compile(&cached, &regex).unwrap();
    assert!(
        again.compile_time.is_none(),
        "the second compile is a cache hit"
    );
    random_walk(again.constraint.as_ref(), 1);
    assert!(masks.load(Ordering::Relaxed) > 0, "masks were timed");
    compile(&cached, &OutputSpec::Regex("b+".into())).unwrap();
    assert_eq!(
        cached.num_cached(),
        1,
        "capacity 1 evicts the older grammar"
    );
    assert!(compile(&cached, &regex).unwrap().compile_time.is_some());
}

#[test]
fn concurrent_requests_for_one_grammar_share_its_compilation() {
    let compiler = compiler(CompileLimits::default());
    let spec = OutputSpec::JsonSchema(person_schema());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (a, b, c, d) = runtime.block_on(async {
        tokio::join!(
            compiler.compile(&spec),
            compiler.compile(&spec),
            compiler.compile(&spec),
            compiler.compile(&spec)
        )
    });
    let compiled: Vec<Compiled> = [a, b, c, d].into_iter().map(Result::unwrap).collect();
    let num_compiles = compiled.iter().filter(|c| c.compile_time.is_some()).count();
    assert_eq!(num_compiles, 1, "one compilation, three waiters");
    assert!(compiled
        .windows(2)
        .all(|w| Arc::ptr_eq(&w[0].constraint, &w[1].constraint)));
    assert_eq!(compiler.num_cached(), 1);
}

/// Whether the grammar of `schema` lets `next` follow `prefix` (their first token).
pub(super) fn allows_after(
    compiler: &GrammarCompiler,
    schema: serde_json::Value,
    prefix: &str,
    next: &str,
) -> bool {
    let tokenizer = tokenizer();
    let compiled = compile(compiler, &OutputSpec::JsonSchema(schema)).unwrap();
    let prefix = tokenizer.encode_as_text(prefix, false).unwrap();
    let mask = mask_after(compiled.constraint.as_ref(), &prefix);
    let next = tokenizer.encode_as_text(next, false).unwrap();
    mask.allows(next[0])
}

/// The mask after `tokens`, each checked to be allowed where it comes.
fn mask_after(constraint: &dyn TokenConstraint, tokens: &[u32]) -> TokenMask {
    let mut matcher = constraint.start();
    let mut mask = TokenMask::new(49_152);
    for &token in tokens {
        mask.clear();
        matcher.fill_next_mask(&mut mask).unwrap();
        assert!(mask.allows(token), "token {token} of {tokens:?}");
        matcher.accept(token).unwrap();
    }
    mask.clear();
    matcher.fill_next_mask(&mut mask).unwrap();
    mask
}

#[test]
fn objects_silent_on_other_keys_take_no_other_keys() {
    let compiler = compiler(CompileLimits::default());
    let silent = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    let prefix = "{\"city\": \"Paris\"";
    assert!(allows_after(&compiler, silent.clone(), prefix, "}"));
    assert!(
        !allows_after(&compiler, silent, prefix, ","),
        "an invented key"
    );
    let open = json!({"type": "object", "properties": {"city": {"type": "string"}},
        "additionalProperties": true});
    assert!(allows_after(&compiler, open, prefix, ","), "asked for");
}
