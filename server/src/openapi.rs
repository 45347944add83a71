//! `GET /openapi.json`: the OpenAPI 3.1 document of the routes this server serves, generated
//! from the request and response types (utoipa) and the handlers' `#[utoipa::path]`s. Built
//! once at start for the server's settings: the LoRA routes only with
//! `--allow-runtime-lora-updating`, bearer authentication on the protected routes only with
//! `--api-key`.

use utoipa::openapi::path::{HttpMethod, OperationBuilder};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{OpenApi as Document, ResponseBuilder};
use utoipa::OpenApi;

use crate::openai::error::{ErrorBody, ErrorDetail};
use crate::openai::request::body::{
    ChatCompletionRequest, CommonFields, CompletionRequest, PromptInput, RepetitionDetectionField,
    StopField, StreamOptions,
};
use crate::openai::wire::chat::{
    ChatChoice, ChatChunkChoice, ChatChunkDelta, ChatCompletion, ChatMessage,
};
use crate::openai::wire::completion::{Completion, CompletionChoice};
use crate::openai::wire::logprobs::{
    ChatLogprobs, ChatTokenLogprob, ChatTopLogprob, CompletionLogprobs,
};
use crate::openai::wire::models::{
    ModelCard, ModelList, ResetPrefixCacheResponse, VersionResponse,
};
use crate::openai::wire::responses::{
    DeletedResponse, FunctionCallItem, IncompleteDetails, IncompleteReason, InputTokensCount,
    ItemStatus, MessageContent, OutputItem, OutputMessage, OutputText, ReasoningContent,
    ReasoningItem, ReasoningText, ResponseError, ResponseObject, ResponseShell, ResponseStatus,
};
use crate::openai::wire::responses_events::{
    ContentPartEvent, ContentPartEventType, FunctionCallArgumentsDeltaEvent,
    FunctionCallArgumentsDeltaType, FunctionCallArgumentsDoneEvent, FunctionCallArgumentsDoneType,
    OutputItemEvent, OutputItemEventType, OutputTextDeltaEvent, OutputTextDeltaType,
    OutputTextDoneEvent, OutputTextDoneType, ReasoningTextDeltaEvent, ReasoningTextDeltaType,
    ReasoningTextDoneEvent, ReasoningTextDoneType, ResponseEvent, ResponseEventType,
    ResponseStreamEvent,
};
use crate::openai::wire::responses_input_items::{
    InputContentPart, InputItem, InputItemList, InputMessage, InputMessageContent,
};
use crate::openai::wire::responses_usage::{
    InputTokensDetails, OutputTokensDetails, ResponsesUsage,
};
use crate::openai::wire::tokenize::{DetokenizeResponse, TokenizeResponse};
use crate::openai::wire::usage::{CompletionTokensDetails, PromptTokensDetails, Usage};
use crate::openai::wire::StopReasonSchema;

/// The routes without authentication, whatever `--api-key` says.
const OPEN_ROUTES: [&str; 5] = ["/health", "/metrics", "/version", "/ping", "/openapi.json"];
/// The routes served only with `--allow-runtime-lora-updating`.
const LORA_ROUTES: [&str; 2] = ["/v1/load_lora_adapter", "/v1/unload_lora_adapter"];
const BEARER: &str = "api_key";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "pagoda-server",
        description = "An OpenAI-compatible server (chat, completions, Responses) with vLLM's extensions. See docs/server.md."
    ),
    paths(
        crate::openai::chat::chat_completions,
        crate::openai::completions::completions,
        crate::openai::responses::create_response,
        crate::openai::responses::count_input_tokens,
        crate::openai::responses::retrieve_response,
        crate::openai::responses::delete_response,
        crate::openai::responses::cancel_response,
        crate::openai::responses::list_input_items,
        crate::routes::models,
        crate::routes::model,
        crate::openai::tokenize::tokenize,
        crate::openai::tokenize::detokenize,
        crate::routes::reset_prefix_cache,
        crate::openai::sagemaker::invocations,
        crate::lora_routes::load_lora_adapter,
        crate::lora_routes::unload_lora_adapter,
        crate::routes::health,
        crate::routes::metrics,
        crate::routes::version,
    ),
    components(schemas(
        ChatCompletionRequest, CompletionRequest, CommonFields, PromptInput, StopField,
        StreamOptions, RepetitionDetectionField, ChatCompletion, ChatChoice, ChatMessage,
        ChatCompletion<ChatChunkChoice>, ChatChunkChoice, ChatChunkDelta, Completion,
        CompletionChoice, ChatLogprobs, ChatTokenLogprob, ChatTopLogprob, CompletionLogprobs,
        Usage, PromptTokensDetails, CompletionTokensDetails, StopReasonSchema, ModelList,
        ModelCard, TokenizeResponse, DetokenizeResponse, VersionResponse,
        ResetPrefixCacheResponse, ErrorBody, ErrorDetail, ResponseObject, ResponseShell,
        ResponseStatus, IncompleteDetails, IncompleteReason, ResponseError, OutputItem,
        ItemStatus, OutputMessage, MessageContent, OutputText, ReasoningItem, ReasoningContent,
        ReasoningText, FunctionCallItem, ResponsesUsage, InputTokensDetails, OutputTokensDetails,
        InputTokensCount, DeletedResponse, ResponseStreamEvent, ResponseEvent, ResponseEventType,
        OutputItemEvent, OutputItemEventType, ContentPartEvent, ContentPartEventType,
        OutputTextDeltaEvent, OutputTextDeltaType, OutputTextDoneEvent, OutputTextDoneType,
        ReasoningTextDeltaEvent, ReasoningTextDeltaType, ReasoningTextDoneEvent,
        ReasoningTextDoneType, FunctionCallArgumentsDeltaEvent, FunctionCallArgumentsDeltaType,
        FunctionCallArgumentsDoneEvent, FunctionCallArgumentsDoneType, InputItemList, InputItem,
        InputMessage, InputMessageContent, InputContentPart,
    ))
)]
struct ApiDoc;

/// The document for a server with these settings.
pub fn document(requires_api_key: bool, runtime_lora_updating: bool) -> Document {
    let mut document = ApiDoc::openapi();
    document.info.version = env!("CARGO_PKG_VERSION").to_string();
    if !runtime_lora_updating {
        for route in LORA_ROUTES {
            document.paths.paths.remove(route);
        }
    }
    // SageMaker's health check answers as /health does, to GET and POST.
    if let Some(health) = document
        .paths
        .paths
        .get("/health")
        .and_then(|p| p.get.clone())
    {
        for (method, id) in [(HttpMethod::Get, "ping"), (HttpMethod::Post, "ping_post")] {
            let mut operation = health.clone();
            operation.operation_id = Some(id.to_string());
            document
                .paths
                .add_path_operation("/ping", vec![method], operation);
        }
    }
    let this_document = OperationBuilder::new()
        .summary(Some("This document"))
        .tag("Server")
        .response(
            "200",
            ResponseBuilder::new()
                .description("The OpenAPI 3.1 document of this server")
                .build(),
        )
        .build();
    document
        .paths
        .add_path_operation("/openapi.json", vec![HttpMethod::Get], this_document);
    if requires_api_key {
        add_bearer_security(&mut document);
    }
    document
}

fn add_bearer_security(document: &mut Document) {
    let components = document.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        BEARER,
        SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
    );
    for (route, item) in document.paths.paths.iter_mut() {
        if OPEN_ROUTES.contains(&route.as_str()) {
            continue;
        }
        let operations = [&mut item.get, &mut item.post, &mut item.delete];
        for operation in operations.into_iter().flatten() {
            operation.security = Some(vec![SecurityRequirement::new(BEARER, Vec::<String>::new())]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settings_decide_the_lora_routes_and_the_security() {
        let plain = document(false, false);
        assert!(LORA_ROUTES
            .iter()
            .all(|r| !plain.paths.paths.contains_key(*r)));
        assert!(plain
            .components
            .as_ref()
            .is_some_and(|c| c.security_schemes.is_empty()));
        let full = document(true, true);
        assert!(LORA_ROUTES
            .iter()
            .all(|r| full.paths.paths.contains_key(*r)));
        let chat = full.paths.paths["/v1/chat/completions"]
            .post
            .as_ref()
            .expect("post");
        assert!(chat.security.is_some());
        let health = full.paths.paths["/health"].get.as_ref().expect("get");
        assert!(health.security.is_none());
        let ping = &full.paths.paths["/ping"];
        assert!(ping.get.is_some() && ping.post.is_some());
    }
}
