#!/usr/bin/env python3
"""Writes grafana/dashboards/pagoda-overview.json, the serving overview dashboard.

    python3 grafana/build_dashboards.py          # (re)write the JSON
    python3 grafana/build_dashboards.py --check  # exit 1 if the committed JSON is stale

Every engine query reads `${namespace}:<name>`, so the same dashboard shows pagoda-server with
`--metrics-namespace pagoda` or `vllm` (and vLLM itself). Panel meanings: docs/observability.md.
Every series a query reads must be in docs/metric-names.txt (under both namespaces, for an engine
series), the list the server's tests keep equal to what it exports: a misspelt or retired name
stops the generator.
"""

import json
import pathlib
import re
import sys

from dashboard_kit import (custom_variable, dashboard, datasource_variable, heatmap,
                           query_variable, row, stat, steps, timeseries)

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "grafana" / "dashboards" / "pagoda-overview.json"
METRIC_LIST = ROOT / "docs" / "metric-names.txt"

ENGINE = 'job=~"$job", instance=~"$instance", model_name=~"$model_name"'
HTTP = 'job=~"$job", instance=~"$instance"'
RATE = "$__rate_interval"
TOK_S = "suffix: tok/s"


def m(name):
    """An engine series in the selected metric namespace."""
    return "${namespace}:" + name


def rate_sum(name, extra="", by=""):
    grouping = f" by ({by})" if by else ""
    selector = ENGINE + (", " + extra if extra else "")
    return f"sum{grouping} (rate({m(name)}{{{selector}}}[{RATE}]))"


def quantile(q, histogram):
    return (f"histogram_quantile({q}, sum by (le) "
            f"(rate({m(histogram + '_bucket')}{{{ENGINE}}}[{RATE}])))")


def mean(histogram):
    return f"{rate_sum(histogram + '_sum')} / {rate_sum(histogram + '_count')}"


def quantiles(histogram):
    return [(quantile(q, histogram), f"p{int(q * 100)}") for q in (0.5, 0.9, 0.99)] + [
        (mean(histogram), "mean")]


def slo_attainment(histogram, target_variable):
    """Share of requests at or under the target: the target's bucket over the count."""
    window = "$__range"
    good = (f"sum(rate({m(histogram + '_bucket')}{{{ENGINE}, le=\"${target_variable}\"}}"
            f"[{window}]))")
    total = f"sum(rate({m(histogram + '_count')}{{{ENGINE}}}[{window}]))"
    return f"{good} / {total}"


def http_ratio(status_class):
    errors = f'sum(rate(http_requests_total{{{HTTP}, status="{status_class}"}}[{RATE}]))'
    total = f"sum(rate(http_requests_total{{{HTTP}}}[{RATE}]))"
    return f"({errors} or vector(0)) / {total}"


def failed_ratio():
    failed = rate_sum("request_success_total", 'finished_reason="error"')
    return f"{failed} / {rate_sum('request_success_total')}"


ATTAINMENT = steps("red", None, "orange", 0.95, "green", 0.99)
LATENCY_S = "Quantiles from the server's histogram over each $__rate_interval"


def slo_row():
    return [
        row("Service level"),
        stat("TTFT SLO attainment",
             "Share of requests whose first token arrived within the TTFT target "
             "(variable ttft_slo, a bucket bound of time_to_first_token_seconds) over the "
             "dashboard's time range. Red below 95 %, green from 99 %.",
             slo_attainment("time_to_first_token_seconds", "ttft_slo"), "percentunit",
             ATTAINMENT, decimals=2),
        stat("TPOT SLO attainment",
             "Share of requests whose mean time per output token was within the TPOT target "
             "(variable tpot_slo, a bucket bound of request_time_per_output_token_seconds) "
             "over the dashboard's time range. Red below 95 %, green from 99 %.",
             slo_attainment("request_time_per_output_token_seconds", "tpot_slo"),
             "percentunit", ATTAINMENT, decimals=2),
        stat("Finished requests/s",
             "Sequences finished per second (all finish reasons) over the last rate interval. "
             "Orange while nothing finishes: idle, or stuck if requests are running.",
             rate_sum("request_success_total"), "reqps", steps("orange", None, "blue", 0.001),
             decimals=2),
        stat("HTTP 5xx ratio",
             "Share of API requests answered with a server error (5xx). Orange from 1 %, "
             "red from 5 % (the PagodaHighErrorRate alert).",
             http_ratio("5xx"), "percentunit", steps("green", None, "orange", 0.01, "red", 0.05),
             decimals=2),
        stat("TTFT p99",
             "99th percentile of time to first token over the last rate interval. Orange from "
             "0.5 s, red from 1 s (the default TTFT SLO of the alert rules).",
             quantile(0.99, "time_to_first_token_seconds"), "s",
             steps("green", None, "orange", 0.5, "red", 1.0)),
        stat("TPOT p99",
             "99th percentile of per-request mean time per output token. Orange from 50 ms, "
             "red from 100 ms (the default TPOT SLO of the alert rules).",
             quantile(0.99, "request_time_per_output_token_seconds"), "s",
             steps("green", None, "orange", 0.05, "red", 0.1)),
    ]


def traffic_row():
    return [
        row("Traffic and errors"),
        timeseries("Finished requests by finish reason",
                   "Sequences finished per second by finished_reason: stop (EOS, stop token "
                   "or stop string), length (max_tokens or max_model_len), abort (client gone, "
                   "cancelled or shutdown), repetition (a loop the request's "
                   "repetition_detection caught), error (failed). A rise in abort usually "
                   "means clients time out.",
                   [(rate_sum("request_success_total", by="finished_reason"),
                     "{{finished_reason}}")], "reqps", stack=True),
        timeseries("HTTP requests by route and status",
                   "API requests per second by route and status class (2xx, 4xx, 5xx). 429s "
                   "are load shedding by --max-waiting-requests; /metrics and /health are not "
                   "counted.",
                   [(f"sum by (handler, status) (rate(http_requests_total{{{HTTP}}}[{RATE}]))",
                     "{{status}} {{handler}}")], "reqps", stack=True),
        timeseries("Error ratios",
                   "Share of API requests answered 5xx (server errors) and 4xx (bad requests, "
                   "auth, 429 load shedding), and share of finished sequences that failed "
                   "(finished_reason=error: streamed failures, which answer 200, show only "
                   "here). Red line at 5 %: PagodaHighErrorRate and PagodaRequestErrors.",
                   [(http_ratio("5xx"), "HTTP 5xx"), (http_ratio("4xx"), "HTTP 4xx"),
                    (failed_ratio(), "failed sequences")],
                   "percentunit", thresholds=steps("green", None, "red", 0.05)),
        timeseries("HTTP response time",
                   "Time from request arrival to the last byte of the response, all API "
                   "routes: a streamed response counts its whole length.",
                   [(f"histogram_quantile({q}, sum by (le) (rate("
                     f"http_request_duration_highr_seconds_bucket{{{HTTP}}}[{RATE}])))",
                     f"p{int(q * 100)}") for q in (0.5, 0.99)], "s"),
    ]


def latency_row():
    slo_line = steps("green", None, "red", 1.0)
    tpot_line = steps("green", None, "red", 0.1)
    return [
        row("Latency"),
        timeseries("Time to first token (TTFT)",
                   f"From arrival to the first generated token, queueing included. {LATENCY_S}"
                   "; red line: the 1 s TTFT SLO of the alert rules.",
                   quantiles("time_to_first_token_seconds"), "s", thresholds=slo_line),
        timeseries("Time per output token (TPOT)",
                   "Per-request mean time between output tokens after the first (decode time "
                   f"/ (tokens - 1)). {LATENCY_S}; red line: the 0.1 s TPOT SLO.",
                   quantiles("request_time_per_output_token_seconds"), "s",
                   thresholds=tpot_line),
        timeseries("Inter-token latency (ITL)",
                   "Every gap between two consecutive tokens of a sequence (one sample per "
                   f"token, so long requests weigh more than in TPOT). {LATENCY_S}.",
                   quantiles("inter_token_latency_seconds"), "s", thresholds=tpot_line),
        timeseries("End-to-end request latency",
                   f"From arrival to the sequence's end, whatever the finish reason. {LATENCY_S}.",
                   quantiles("e2e_request_latency_seconds"), "s"),
        timeseries("Request phases: mean",
                   "Mean time per request spent waiting to be scheduled (queue), computing the "
                   "prompt up to the first token (prefill) and generating the rest (decode). "
                   "Queue time growing while prefill is flat means too little capacity.",
                   [(mean(f"request_{phase}_time_seconds"), phase)
                    for phase in ("queue", "prefill", "decode")], "s", stack=True),
        timeseries("Request phases: p99",
                   "99th percentile of queue, prefill and decode time (buckets of the "
                   "request-time family, 0.3 s and up: sub-0.3 s values read as up to 0.3 s).",
                   [(quantile(0.99, f"request_{phase}_time_seconds"), phase)
                    for phase in ("queue", "prefill", "decode")], "s"),
    ]


def throughput_row():
    return [
        row("Throughput"),
        timeseries("Prompt and generated tokens/s",
                   "Prompt tokens (counted when a sequence produces its first token) and "
                   "generated tokens per second, summed over the selected replicas.",
                   [(rate_sum("prompt_tokens_total"), "prompt"),
                    (rate_sum("generation_tokens_total"), "generation")], TOK_S),
        timeseries("Mean request size",
                   "Mean prompt length and generated length of the sequences that finished in "
                   "each interval.",
                   [(mean("request_prompt_tokens"), "prompt"),
                    (mean("request_generation_tokens"), "generated")], "suffix: tokens"),
    ]


def scheduler_row():
    return [
        row("Scheduler and KV cache"),
        timeseries("Running and waiting requests",
                   "Sequences in the running batch and sequences waiting to be scheduled (new "
                   "or preempted), summed over replicas. A waiting count that keeps growing "
                   "fires PagodaQueueGrowing; it is also the autoscaling signal.",
                   [(f"sum({m('num_requests_running')}{{{ENGINE}}})", "running"),
                    (f"sum({m('num_requests_waiting')}{{{ENGINE}}})", "waiting")], "short"),
        timeseries("KV-cache usage",
                   "Fraction of KV-cache blocks in use, per replica. Orange from 90 %, red from "
                   "95 % (PagodaKVCacheNearlyFull when sustained): new sequences wait for "
                   "blocks and running ones get preempted.",
                   [(f"max by (instance) ({m('kv_cache_usage_perc')}{{{ENGINE}}})",
                     "{{instance}}")], "percentunit", max_value=1,
                   thresholds=steps("green", None, "orange", 0.9, "red", 0.95)),
        timeseries("Preemptions/s",
                   "Running sequences preempted per second (blocks freed, prompt recomputed "
                   "later) because the KV cache ran out. Any steady rate costs throughput.",
                   [(rate_sum("num_preemptions_total"), "preemptions")], "suffix: /s"),
        timeseries("Prefix-cache hit rate",
                   "Share of looked-up prompt tokens found in the prefix cache (tokens whose "
                   "KV was reused instead of computed). Shared system prompts and multi-turn "
                   "chats raise it; empty while no prompt was looked up.",
                   [(f"{rate_sum('prefix_cache_hits_total')} / "
                     f"{rate_sum('prefix_cache_queries_total')}", "hit rate")],
                   "percentunit", max_value=1),
        heatmap("Tokens per engine step",
                "Engine steps per tokens-per-step bucket per interval "
                "(iteration_tokens_total): a band at 1-32 is small decode batches; steps near "
                "--max-num-batched-tokens are chunked prefill. Batches that stay small while "
                "requests wait point at a KV-cache or --max-num-seqs limit.",
                f"sum by (le) (increase({m('iteration_tokens_total_bucket')}{{{ENGINE}}}"
                f"[{RATE}]))", "short"),
        timeseries("Engine steps/s and mean tokens per step",
                   "Model forward passes per second, and the mean tokens each ran (sum over "
                   "count of iteration_tokens_total). Steps/s falling while tokens per step "
                   "rise is the batch growing.",
                   [(rate_sum("iteration_tokens_total_count"), "steps/s"),
                    (mean("iteration_tokens_total"), "tokens per step")], "short"),
    ]


def shapes_row():
    return [
        row("Request shapes"),
        heatmap("Prompt length",
                "Prompt tokens of the finished sequences: finished sequences per length bucket "
                "(1-2-5 buckets) per interval.",
                f"sum by (le) (increase({m('request_prompt_tokens_bucket')}{{{ENGINE}}}[{RATE}]))",
                "short", width=8),
        heatmap("Generation length",
                "Generated tokens of the finished sequences per length bucket per interval.",
                f"sum by (le) (increase({m('request_generation_tokens_bucket')}{{{ENGINE}}}"
                f"[{RATE}]))", "short", width=8),
        heatmap("Time to first token",
                "TTFT of the finished sequences per bucket per interval: a second band "
                "appearing above the first is queueing.",
                f"sum by (le) (increase({m('time_to_first_token_seconds_bucket')}{{{ENGINE}}}"
                f"[{RATE}]))", "s", width=8),
    ]


def adapters_row():
    by_model = (f"histogram_quantile(0.9, sum by (le, model_name) "
                f"(rate({m('time_to_first_token_seconds_bucket')}{{{ENGINE}}}[{RATE}])))")
    return [
        row("Models and LoRA adapters"),
        timeseries("Requests/s by model or adapter",
                   "Finished sequences per second by model_name: the served model's name, or "
                   "the LoRA adapter's name for requests that selected one (docs/lora.md).",
                   [(rate_sum("request_success_total", by="model_name"), "{{model_name}}")],
                   "reqps", width=8),
        timeseries("TTFT p90 by model or adapter",
                   "90th percentile time to first token per model_name: an adapter waiting "
                   "for its turn under --max-loras shows here first.",
                   [(by_model, "{{model_name}}")], "s", width=8),
        timeseries("Generated tokens/s by model or adapter",
                   "Tokens generated per second by the sequences of each model_name that "
                   "finished in the interval.",
                   [(rate_sum("request_generation_tokens_sum", by="model_name"),
                     "{{model_name}}")], TOK_S, width=8),
    ]


def variables():
    label_source = m("num_requests_running")
    return [
        datasource_variable(),
        custom_variable("namespace", "Metric namespace", ["pagoda", "vllm"], "pagoda",
                        "The prefix of the engine series: pagoda (--metrics-namespace pagoda, "
                        "the default) or vllm (--metrics-namespace vllm, or vLLM itself)."),
        query_variable("job", "Job", f"label_values({label_source}, job)",
                       "Prometheus scrape jobs exporting the selected namespace."),
        query_variable("instance", "Instance",
                       f'label_values({label_source}{{job=~"$job"}}, instance)',
                       "Replicas (scrape targets) of the selected jobs."),
        query_variable("model_name", "Model",
                       f'label_values({m("request_success_total")}{{job=~"$job", '
                       'instance=~"$instance"}, model_name)',
                       "Served model names and LoRA adapters (request series carry the "
                       "adapter's name; engine gauges the served model's)."),
        custom_variable("ttft_slo", "TTFT target (s)",
                        ["0.1", "0.25", "0.5", "1.0", "2.5", "5.0", "10.0"], "1.0",
                        "TTFT SLO target for the attainment tile: must be a bucket bound of "
                        "time_to_first_token_seconds, written as the server writes it."),
        custom_variable("tpot_slo", "TPOT target (s)",
                        ["0.025", "0.05", "0.075", "0.1", "0.15", "0.2", "0.3"], "0.1",
                        "TPOT SLO target for the attainment tile: must be a bucket bound of "
                        "request_time_per_output_token_seconds."),
    ]


def overview():
    panels = (slo_row() + traffic_row() + latency_row() + throughput_row() + scheduler_row()
              + shapes_row() + adapters_row())
    return dashboard(
        "pagoda-overview", "Pagoda serving overview",
        "pagoda-server (or vLLM) serving: SLOs, traffic, latency, throughput, scheduler and "
        "KV cache. Pick the metric namespace (pagoda or vllm) at the top.",
        ["pagoda", "vllm", "llm-serving"], variables(), panels)


def listed_series():
    """docs/metric-names.txt: exported family name -> type."""
    lines = (line.strip() for line in METRIC_LIST.read_text().splitlines())
    return dict(line.split(" ", 1) for line in lines if line and not line.startswith("#"))


def family(series, name):
    """A histogram sample's family (`..._bucket` -> the histogram), else the name itself."""
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[:-len(suffix)] if name.endswith(suffix) else None
        if base and series.get(base) == "histogram":
            return base
    return name


def unlisted_series(text, series):
    """The series the dashboard reads that the list does not have, as `${namespace}:<name>` or
    `http_...`."""
    missing = set()
    for name in re.findall(r"\$\{namespace\}:([a-z0-9_]+)", text):
        for namespace in ("pagoda", "vllm"):
            if family(series, f"{namespace}:{name}") not in series:
                missing.add(f"{namespace}:{name}")
    for name in re.findall(r"\b(http_[a-z0-9_]+)", text):
        if family(series, name) not in series:
            missing.add(name)
    return sorted(missing)


def render():
    text = json.dumps(overview(), indent=2, sort_keys=False) + "\n"
    missing = unlisted_series(text, listed_series())
    if missing:
        raise SystemExit(f"series not in {METRIC_LIST.relative_to(ROOT)}: {', '.join(missing)}")
    return text


def main(argv):
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is stale: run python3 grafana/build_dashboards.py", file=sys.stderr)
            return 1
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
