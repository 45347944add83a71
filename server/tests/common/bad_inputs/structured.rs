//! Bad structured-output and tool fields: each a 400 naming the field, found before any grammar
//! is compiled (docs/structured-outputs.md).

use serde_json::json;

use super::Case;

/// Tools the server cannot use as given, and structured-output fields that do not parse.
pub fn structured_output_cases() -> Vec<Case> {
    let tool =
        json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]);
    vec![
        Case::chat(
            "auto tools without --enable-auto-tool-choice",
            json!({"tools": tool}),
            "tool_choice",
        ),
        Case::chat(
            "tool_choice naming an unknown function",
            json!({"tools": tool, "tool_choice": {"type": "function", "function": {"name": "g"}}}),
            "tool_choice",
        ),
        Case::chat(
            "tools that are not functions",
            json!({"tools": [{"type": "retrieval"}], "tool_choice": "required"}),
            "tools[0].type",
        ),
        Case::chat(
            "response_format of an unknown type",
            json!({"response_format": {"type": "yaml"}}),
            "response_format.type",
        ),
        Case::chat(
            "json_schema without a schema",
            json!({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}),
            "response_format.json_schema.schema",
        ),
        Case::completion(
            "two structured-output constraints",
            json!({"guided_regex": "a+", "structured_outputs": {"choice": ["a"]}}),
            "guided_regex",
        ),
        Case::completion(
            "an empty choice list",
            json!({"structured_outputs": {"choice": []}}),
            "structured_outputs.choice",
        ),
        Case::chat(
            "both tools and the deprecated functions",
            json!({"functions": [{"name": "f"}],
                   "tools": [{"type": "function", "function": {"name": "g"}}]}),
            "functions",
        ),
        Case::chat(
            "the deprecated functions as an object",
            json!({"functions": {"name": "f"}}),
            "functions",
        ),
        Case::chat(
            "a deprecated function that is not an object",
            json!({"functions": [{"name": "f"}, "g"]}),
            "functions[1]",
        ),
        Case::chat(
            "function_call without functions",
            json!({"function_call": {"name": "f"}}),
            "function_call",
        ),
        Case::chat(
            "function_call naming nothing",
            json!({"functions": [{"name": "f"}], "function_call": {"nom": "f"}}),
            "function_call",
        ),
    ]
}

/// vLLM's fields this server does not implement: refused, never silently ignored.
pub fn unsupported_vllm_field_cases() -> Vec<Case> {
    vec![
        Case::completion(
            "beam search",
            json!({"use_beam_search": true}),
            "use_beam_search",
        ),
        Case::chat("a scheduling priority", json!({"priority": 5}), "priority"),
        Case::completion(
            "a prompt as embeddings",
            json!({"prompt_embeds": "AAAA"}),
            "prompt_embeds",
        ),
    ]
}
